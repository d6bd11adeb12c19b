"""The one exception hierarchy of kenning.

Every error a user can cause or meet carries one clear sentence (``str(error)``) and, where
there is one, a fix (``error.hint``). Front ends turn them into an exit code (CLI) or a
structured error (MCP); nothing below them prints.

    KenningError
    ├── UsageError            bad input: a missing path, a filter outside the root, a bad id
    │   └── StaleChunkId      a chunk id from an older index generation
    ├── ConfigError           an unknown key, a bad value, an unreadable config file
    ├── EmbedderError         the embedding backend failed
    │   ├── EmbedderUnavailable   cannot reach it (server down, connection refused)
    │   └── ModelNotFound         it is reachable but lacks the model
    ├── IndexError_           the index is missing, busy or unreadable
    │   ├── IndexMissing
    │   ├── IndexBusy
    │   └── IndexDamaged      a checksum or SQLite's own check failed: rebuild with --full
    ├── SharedIndexError      the shared index (Milvus) is unreachable or a call to it failed
    │   ├── SharedAuthError       it refused the credentials
    │   └── SharedBusy            another publish of the same project is under way
    └── AgentSetupError       an agent config file cannot be safely edited
"""

from __future__ import annotations


class KenningError(Exception):
    """Base of every error kenning raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def to_dict(self) -> dict[str, str | None]:
        return {"error": type(self).__name__, "message": self.message, "hint": self.hint}


class UsageError(KenningError):
    exit_code = 2


class StaleChunkId(UsageError):
    pass


class ConfigError(KenningError):
    exit_code = 2


class EmbedderError(KenningError):
    exit_code = 3


class EmbedderUnavailable(EmbedderError):
    pass


class ModelNotFound(EmbedderError):
    pass


class IndexError_(KenningError):  # noqa: N801 - the builtin IndexError is taken
    exit_code = 4


class IndexMissing(IndexError_):
    pass


class IndexBusy(IndexError_):
    pass


class IndexDamaged(IndexError_):
    pass


class SharedIndexError(KenningError):
    exit_code = 5


class SharedAuthError(SharedIndexError):
    exit_code = 6


class SharedBusy(SharedIndexError):
    pass


class AgentSetupError(KenningError):
    pass
