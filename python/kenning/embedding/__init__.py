"""Embedding backends behind one protocol.

``local`` (the default) runs all-MiniLM-L6-v2 in-process with no network; ``ollama`` talks to
``/api/embed``; ``openai`` to any OpenAI-compatible ``/v1/embeddings``. Each applies its
model's query/document prefixes (see ``profiles``), returns L2-normalised float32 rows, and
raises ``EmbedderUnavailable`` / ``ModelNotFound`` with a hint when the backend cannot serve.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, cast

import numpy as np

from kenning.config import Settings
from kenning.embedders import BACKENDS, known
from kenning.embedding.profiles import Profile, profile_for
from kenning.errors import ConfigError, EmbedderError

__all__ = ["Embedder", "Identity", "Serves", "WordsOnly", "borrowed", "dimensioned",
           "document_text", "identity", "make_embedder", "serving", "settings_profile"]


class Embedder(Protocol):
    @property
    def model(self) -> str: ...
    @property
    def dims(self) -> int:
        """Output dims after Matryoshka truncation."""
    @property
    def max_tokens(self) -> int:
        """Input budget per chunk text, in the model's tokens (room left for the path header)."""
    @property
    def needs_centering(self) -> bool:
        """Sign bits need mean-centering (e5 family)."""

    def descriptor(self) -> dict[str, object]: ...
    def count_tokens(self, text: str) -> int: ...
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...
    def embed_query(self, text: str) -> np.ndarray: ...
    def check(self) -> None: ...
    def close(self) -> None: ...


def document_text(path: str, chunk_text: str) -> str:
    """The text embedded for a chunk: its path gives the model context the code lacks."""
    return f"Filepath: {path}\n---\n{chunk_text}"


def settings_profile(settings: Settings, model: str) -> Profile:
    """``model``'s profile, with the prefixes the settings override."""
    return profile_for(model, query_prefix=settings["embedder.query_prefix"],
                       document_prefix=settings["embedder.document_prefix"])


@dataclass(frozen=True)
class Identity:
    """What names the vectors of the configured embedder, read from settings alone (no model
    loaded, no server asked): model, document prefix, and dims when they are known without
    asking (configured, the model's native dims, or remembered from an earlier answer)."""

    backend: str
    model: str
    document_prefix: str
    dims: int | None
    weights: str = ""  # the local model's file (``local.weights_id``)

    def descriptor(self) -> dict[str, object]:
        return {"backend": self.backend, "model": self.model, "dims": self.dims,
                "document_prefix": self.document_prefix, "weights": self.weights}


class Serves(Protocol):
    """What the module of a backend (``kenning.embedders``) defines."""

    def make(self, settings: Settings, *, service: bool) -> Embedder: ...
    def identity(self, settings: Settings) -> Identity: ...
    def target(self, settings: Settings) -> tuple[str, str]: ...


def serving(settings: Settings) -> Serves:
    """The module of the configured backend, imported on first use."""
    name = settings["embedder.backend"]
    backend = BACKENDS.get(name)
    if backend is None:  # settings made without config's validation
        raise ConfigError(f"Unknown embedder.backend {name!r}.",
                          hint=f"Use {known()}.")
    return cast(Serves, importlib.import_module(backend.module))


def identity(settings: Settings) -> Identity:
    """The identity of the embedder ``make_embedder(settings)`` makes; ConfigError as it would."""
    return serving(settings).identity(settings)


def make_embedder(settings: Settings, *, service: bool = False) -> Embedder:
    """The configured backend; cheap: models load and servers are contacted on first use.
    ``service``: the local model's vectors come from the embedding service of this
    ``KENNING_HOME`` where ``embedder.service`` allows it and the system runs one
    (``hostos.NO_SERVICE``), for the CLI's commands and the MCP server; a program using the
    library loads the model itself."""
    return serving(settings).make(settings, service=service)


@contextmanager
def borrowed(settings: Settings, embedder: Embedder | None = None, *,
             service: bool = False) -> Iterator[Embedder]:
    """``embedder`` as given (its owner closes it), or one made from ``settings`` for the
    duration of the block and closed after it (``service``: as ``make_embedder``'s)."""
    if embedder is not None:
        yield embedder
        return
    made = make_embedder(settings, service=service)
    try:
        yield made
    finally:
        made.close()


class WordsOnly:
    """Stands in for a remote embedder that cannot tell its dims (never reached, and nothing
    remembered from an earlier answer), so that a search still answers from words and symbols.
    Its index, named by dims 0, holds files and chunks without vectors, apart from the real
    one; embedding raises ``error``."""

    dims = 0

    def __init__(self, embedder: Embedder, error: EmbedderError) -> None:
        self._embedder, self.error = embedder, error

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    def descriptor(self) -> dict[str, object]:
        # the remote embedder's identity, with dims 0
        described: dict[str, object] = self._embedder._described(0)  # type: ignore[attr-defined]
        return described

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        raise self.error

    def embed_query(self, text: str) -> np.ndarray:
        raise self.error

    def check(self) -> None:
        raise self.error


def dimensioned(embedder: Embedder) -> Embedder:
    """``embedder``, or a ``WordsOnly`` stand-in when it cannot tell its dims: a project never
    indexed, with a server that is down or hung, then gets an index of words and symbols
    instead of no answer."""
    try:
        _ = embedder.dims
    except EmbedderError as exc:
        return WordsOnly(embedder, exc)
    return embedder
