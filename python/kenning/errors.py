"""The one exception hierarchy of kenning.

Every error a user can cause or meet carries one clear sentence (``str(error)``) and, where
there is one, a fix (``error.hint``). Front ends turn them into an exit code (CLI) or a
structured error (MCP); nothing below them prints.

Each class has a stable ``code`` (in brackets), the ``"error"`` of its JSON body
(``to_dict()``) that MCP clients and scripts match on; class names may change, codes do not. A
new class inherits its parent's code until it sets its own (documented in docs/mcp.md).

    KenningError [error]
    ├── UsageError [bad_input]        a missing path, a filter outside the root, a bad id
    │   ├── StaleChunkId [stale_chunk_id]   a chunk id from another index generation
    │   └── StaleContent [stale]      the lines a result showed changed since
    ├── ConfigError [bad_config]      an unknown key, a bad value, an unreadable config file
    ├── EmbedderError [embedder_failed]     the embedding backend failed
    │   ├── EmbedderUnavailable [embedder_unavailable]   server down, connection refused
    │   └── ModelNotFound [model_not_found]   it is reachable but lacks the model
    ├── IndexError_ [index_unreadable]  the index is missing, busy or unreadable
    │   ├── IndexMissing [index_missing]
    │   ├── IndexBusy [index_busy]
    │   └── IndexDamaged [index_damaged]  a checksum or SQLite's own check failed: rebuild
    ├── SharedIndexError [shared_index_failed]  the shared index (Milvus) is unreachable or
    │   │                                      a call to it failed
    │   ├── SharedAuthError [shared_auth_refused]   it refused the credentials
    │   └── SharedBusy [shared_index_busy]   another publish of the project is under way
    └── AgentSetupError [agent_setup_failed]  an agent config file cannot be safely edited

``INTERNAL_ERROR`` is the code of an unexpected failure (a bug), which no class stands for.
"""

from __future__ import annotations

INTERNAL_ERROR = "internal_error"


class KenningError(Exception):
    """Base of every error kenning raises on purpose."""

    exit_code = 1
    code = "error"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def to_dict(self) -> dict[str, str | None]:
        return {"error": self.code, "message": self.message, "hint": self.hint}


class UsageError(KenningError):
    exit_code = 2
    code = "bad_input"


class StaleChunkId(UsageError):
    code = "stale_chunk_id"


class StaleContent(UsageError):
    code = "stale"


class ConfigError(KenningError):
    exit_code = 2
    code = "bad_config"


class EmbedderError(KenningError):
    exit_code = 3
    code = "embedder_failed"


class EmbedderUnavailable(EmbedderError):
    code = "embedder_unavailable"


class ModelNotFound(EmbedderError):
    code = "model_not_found"


class IndexError_(KenningError):  # noqa: N801 - the builtin IndexError is taken
    exit_code = 4
    code = "index_unreadable"


class IndexMissing(IndexError_):
    code = "index_missing"


class IndexBusy(IndexError_):
    code = "index_busy"


class IndexDamaged(IndexError_):
    code = "index_damaged"


class SharedIndexError(KenningError):
    exit_code = 5
    code = "shared_index_failed"


class SharedAuthError(SharedIndexError):
    exit_code = 6
    code = "shared_auth_refused"


class SharedBusy(SharedIndexError):
    code = "shared_index_busy"


class AgentSetupError(KenningError):
    code = "agent_setup_failed"
