"""kenning: local semantic code search for coding agents and the people who drive them.

Only the names in ``kenning.__all__`` are kenning's Python API (docs/api.md): ``search``,
``index``, ``status``, ``get_chunk``, ``load_settings``, their typed records and the error
classes. Every module under this package is internal and may change in any release.

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
    from kenning.indexer import RefreshResult
    from kenning.library import (
        Chunk,
        Hit,
        SearchResult,
        Status,
        get_chunk,
        index,
        load_settings,
        search,
        status,
    )

__all__ = [
    "AgentSetupError",
    "Chunk",
    "ConfigError",
    "EmbedderError",
    "EmbedderUnavailable",
    "Hit",
    "IndexBusy",
    "IndexDamaged",
    "IndexError_",
    "IndexMissing",
    "KenningError",
    "ModelNotFound",
    "RefreshResult",
    "SearchResult",
    "Settings",
    "SharedAuthError",
    "SharedBusy",
    "SharedIndexError",
    "StaleChunkId",
    "StaleContent",
    "Status",
    "UsageError",
    "__version__",
    "get_chunk",
    "index",
    "load_settings",
    "search",
    "status",
]

# name -> the module that defines it, imported on first use
_LAZY = {
    "search": "kenning.library", "index": "kenning.library", "get_chunk": "kenning.library",
    "status": "kenning.library", "load_settings": "kenning.library",
    "Hit": "kenning.library", "SearchResult": "kenning.library", "Chunk": "kenning.library",
    "Status": "kenning.library",
    "Settings": "kenning.config", "RefreshResult": "kenning.indexer",
}


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

