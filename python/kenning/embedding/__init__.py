"""Embedding backends behind one protocol.

``local`` (the default) runs all-MiniLM-L6-v2 in-process with no network; ``ollama`` talks to
``/api/embed``; ``openai`` to any OpenAI-compatible ``/v1/embeddings``. Each applies its
model's query/document prefixes (see ``profiles``), returns L2-normalised float32 rows, and
raises ``EmbedderUnavailable`` / ``ModelNotFound`` with a hint when the backend cannot serve.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict

import numpy as np

from kenning import hostos
from kenning.config import Settings
from kenning.embedding.profiles import Profile, output_dims, profile_for
from kenning.errors import ConfigError, EmbedderError

__all__ = ["Embedder", "Identity", "WordsOnly", "borrowed", "dimensioned", "document_text",
           "identity", "make_embedder"]


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


def _profile(settings: Settings, model: str) -> Profile:
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


def identity(settings: Settings) -> Identity:
    """The identity of the embedder ``make_embedder(settings)`` makes; ConfigError as it would."""
    backend = settings["embedder.backend"]
    requested = settings["embedder.dims"]
    if backend == "local":
        from kenning.embedding.local import DIMS, MODEL_NAME, check_model_name, weights_id

        check_model_name(settings["embedder.model"])
        profile = _profile(settings, MODEL_NAME)
        output_dims(profile, MODEL_NAME, requested)
        return Identity(backend, MODEL_NAME, profile.document_prefix, DIMS, weights_id())
    from kenning.embedding.remote import remembered_dims

    model, url = _remote_target(settings)
    profile = _profile(settings, model)
    dims = output_dims(profile, model, requested) or remembered_dims(backend, url, model)
    return Identity(backend, model, profile.document_prefix, dims)


def _remote_target(settings: Settings) -> tuple[str, str]:
    """The model and the server URL of a remote backend."""
    backend = settings["embedder.backend"]
    model = settings["embedder.model"]
    if backend == "ollama":
        from kenning.embedding.ollama import DEFAULT_MODEL, default_url

        return model or DEFAULT_MODEL, settings["embedder.url"] or default_url()
    if backend == "openai":
        from kenning.embedding.openai import DEFAULT_MODEL as OPENAI_MODEL

        url = settings["embedder.url"]
        if not url:
            raise ConfigError(
                "The openai backend needs embedder.url, the server's base URL.",
                hint="For example `kenning config set embedder.url http://localhost:8080/v1` "
                "(llama.cpp) or https://api.openai.com/v1.",
            )
        return model or OPENAI_MODEL, url
    raise ConfigError(f"Unknown embedder.backend {backend!r}.",
                      hint="Use local, ollama or openai.")


class _Common(TypedDict):
    dims: int | None
    batch_size: int
    concurrency: int
    timeout: float


def make_embedder(settings: Settings, *, service: bool = False) -> Embedder:
    """The configured backend; cheap: models load and servers are contacted on first use.
    ``service``: the local model's vectors come from the embedding service of this
    ``KENNING_HOME`` where ``embedder.service`` allows it and the system runs one
    (``hostos.NO_SERVICE``), for the CLI's commands and the MCP server; a program using the
    library loads the model itself."""
    backend = settings["embedder.backend"]
    common: _Common = {
        "dims": settings["embedder.dims"],
        "batch_size": settings["embedder.batch_size"],
        "concurrency": settings["embedder.concurrency"],
        "timeout": settings["embedder.timeout"],
    }
    if backend == "local":
        from kenning.embedding.local import MODEL_NAME, LocalEmbedder, check_model_name

        check_model_name(settings["embedder.model"])
        profile = _profile(settings, MODEL_NAME)
        output_dims(profile, MODEL_NAME, common["dims"])  # MiniLM is not Matryoshka
        local = LocalEmbedder(profile, runtime=settings["embedder.runtime"])
        if service and settings["embedder.service"] and not hostos.NO_SERVICE:
            from kenning.embedding.service_client import ServiceEmbedder

            return ServiceEmbedder(local, idle=settings["embedder.service_idle"],
                                   timeout=common["timeout"])
        return local
    model, url = _remote_target(settings)
    if backend == "ollama":
        from kenning.embedding.ollama import OllamaEmbedder

        return OllamaEmbedder(model=model, url=url, profile=_profile(settings, model),
                              keep_alive=settings["embedder.keep_alive"], **common)
    from kenning.embedding.openai import OpenAIEmbedder

    return OpenAIEmbedder(model=model, url=url, profile=_profile(settings, model),
                          api_key_env=settings["embedder.api_key_env"], **common)


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
