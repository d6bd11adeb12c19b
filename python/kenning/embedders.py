"""Every embedding backend kenning runs, one entry each (``BACKENDS``): its name (the value of
``embedder.backend``), the module that serves it and the config keys it reads. Adding a backend
is adding its entry here and its module in ``embedding/``, which defines ``make(settings, *,
service)`` (the embedder), ``identity(settings)`` (what names its vectors, without a model
loaded or a server asked) and ``target(settings)`` (the model and the server's URL, "" in
process); ``tests/test_embedders.py`` checks that each entry has every part.

The table sits below config, which validates ``embedder.backend`` against it, so it names its
modules rather than importing them: ``kenning.embedding`` imports one on first use.
"""

from __future__ import annotations

from dataclasses import dataclass

# The keys every backend reads: which model, its prefixes and the dims asked of it.
SHARED_KEYS = ("embedder.model", "embedder.dims", "embedder.query_prefix",
               "embedder.document_prefix")
# and those of a backend that sends its texts to a server
_SERVER_KEYS = ("embedder.url", "embedder.batch_size", "embedder.concurrency", "embedder.timeout")


@dataclass(frozen=True)
class Backend:
    name: str
    summary: str  # for `kenning config list`: what it runs
    module: str  # the module in ``embedding/`` with its make, identity and target
    keys: tuple[str, ...]  # the config keys it reads besides SHARED_KEYS
    # It runs the model in this process (on a runtime that status and the self-test report)
    # rather than asking a server.
    in_process: bool = False


BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in [
        Backend("local", "embedded model", "kenning.embedding.local",
                ("embedder.runtime", "embedder.service", "embedder.service_idle",
                 "embedder.timeout"), in_process=True),
        Backend("ollama", "an Ollama server", "kenning.embedding.ollama",
                (*_SERVER_KEYS, "embedder.keep_alive")),
        Backend("openai", "an OpenAI-compatible server", "kenning.embedding.openai",
                (*_SERVER_KEYS, "embedder.api_key_env")),
    ]
}
DEFAULT = "local"


def reading(key: str) -> list[str]:
    """The backends that read ``key``, in table order."""
    return [b.name for b in BACKENDS.values() if key in b.keys or key in SHARED_KEYS]


def known() -> str:
    """``local, ollama or openai``."""
    *others, last = BACKENDS
    return f"{', '.join(others)} or {last}"
