"""kenning: local semantic code search for coding agents and the people who drive them.

Only the names in ``kenning.__all__`` are kenning's Python API (docs/api.md): ``search``,
``related``, ``index``, ``status``, ``get_chunk``, ``doctor``, ``load_settings``, their typed
records and the error classes. Every module under this package is internal and may change in
any release.

Importing kenning is cheap: each name loads its module on first use, and the model runtime,
tree-sitter and the index load only when a call needs them.
"""

import os
from typing import TYPE_CHECKING

# onnxruntime's telemetry writes a device id and queues usage events under
# ~/.cache/Microsoft as soon as it is imported; only this switch, set before that import,
# stops it. Set here, it holds in every kenning process and the processes they start.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

from kenning.errors import (  # noqa: E402 - after the switch above; a module with no imports
    AgentSetupError,
    ConfigError,
    EmbedderError,
    EmbedderUnavailable,
    IndexBusy,
    IndexDamaged,
    IndexError_,
    IndexMissing,
    KenningError,
    ModelNotFound,
    SharedAuthError,
    SharedBusy,
    SharedIndexError,
    StaleChunkId,
    StaleContent,
    UsageError,
)

if TYPE_CHECKING:
    __version__: str
    from kenning.config import Settings
    from kenning.services.index_admin import State
    from kenning.services.library import (
        CallLink,
        Chunk,
        Declaration,
        Doctor,
        DoctorCheck,
        Hit,
        IndexRun,
        RelatedResult,
        SearchResult,
        Status,
        doctor,
        get_chunk,
        index,
        load_settings,
        related,
        search,
        status,
    )

__all__ = [
    "AgentSetupError",
    "CallLink",
    "Chunk",
    "ConfigError",
    "Declaration",
    "Doctor",
    "DoctorCheck",
    "EmbedderError",
    "EmbedderUnavailable",
    "Hit",
    "IndexBusy",
    "IndexDamaged",
    "IndexError_",
    "IndexMissing",
    "IndexRun",
    "KenningError",
    "ModelNotFound",
    "RelatedResult",
    "SearchResult",
    "Settings",
    "SharedAuthError",
    "SharedBusy",
    "SharedIndexError",
    "StaleChunkId",
    "StaleContent",
    "State",
    "Status",
    "UsageError",
    "__version__",
    "doctor",
    "get_chunk",
    "index",
    "load_settings",
    "related",
    "search",
    "status",
]

# name -> the module that defines it, imported on first use
_LIBRARY = ("search", "related", "index", "get_chunk", "status", "doctor", "load_settings",
            "Hit", "SearchResult", "Chunk", "Status", "CallLink", "Declaration", "RelatedResult",
            "IndexRun", "Doctor", "DoctorCheck")
_LAZY = {**dict.fromkeys(_LIBRARY, "kenning.services.library"),
         "Settings": "kenning.config", "State": "kenning.services.index_admin"}


def __getattr__(name: str) -> object:
    """The API names of ``_LAZY`` and ``__version__``, loaded on first use (importlib.metadata
    alone costs ~20 ms that `kenning --help` and every search would otherwise pay at start)."""
    if name in _LAZY:
        import importlib

        found: object = getattr(importlib.import_module(_LAZY[name]), name)
    elif name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("kenning")
        except PackageNotFoundError:  # running from a source tree that was never installed
            found = "0.0.0+unknown"
    else:
        raise AttributeError(f"module 'kenning' has no attribute {name!r}")
    globals()[name] = found
    return found


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

