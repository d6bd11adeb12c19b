"""Ollama: ``POST /api/embed`` with a batch ``input``, ``keep_alive``, ``truncate``, ``dimensions``.

Ollama answers errors as ``{"error": "<message>"}``; a model that was never pulled is a 404
``model "x" not found, try pulling it first``.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

from kenning.config import Settings
from kenning.embedding import Embedder, Identity, settings_profile
from kenning.embedding.http import JsonPoster, RetryPolicy, error_text
from kenning.embedding.profiles import Profile
from kenning.embedding.remote import RemoteEmbedder, server_identity, server_options
from kenning.errors import EmbedderError, EmbedderUnavailable, KenningError, ModelNotFound

DEFAULT_MODEL = "nomic-embed-text"
DEFAULT_PORT = 11434


def default_url() -> str:
    """``OLLAMA_HOST`` as the ollama CLI reads it (``host``, ``host:port`` or a URL)."""
    host = os.environ.get("OLLAMA_HOST", "").strip() or "127.0.0.1"
    if "://" not in host:
        host = "http://" + host
    url = httpx.URL(host)
    if url.host in {"0.0.0.0", "::"}:  # a bind-all address; connect locally
        url = url.copy_with(host="127.0.0.1")
    if url.port is None and url.scheme == "http":
        url = url.copy_with(port=DEFAULT_PORT)
    return str(url).rstrip("/")


class OllamaEmbedder(RemoteEmbedder):
    backend = "ollama"

    def __init__(self, *, model: str, url: str, profile: Profile, dims: int | None,
                 batch_size: int, concurrency: int, timeout: float, keep_alive: str | None,
                 client: httpx.Client | None = None, retry: RetryPolicy | None = None) -> None:
        super().__init__(model=model, url=url, profile=profile, dims=dims, batch_size=batch_size,
                         concurrency=concurrency, timeout=timeout, client=client, retry=retry)
        self.keep_alive = keep_alive
        self._poster = JsonPoster(self.client, self.retry, self._classify, self._unreachable)

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": texts, "truncate": True}
        if self.keep_alive:
            body["keep_alive"] = _keep_alive(self.keep_alive)
        if self._requested_dims is not None:
            body["dimensions"] = self._requested_dims
        reply = self._poster.post(f"{self.url}/api/embed", body)
        embeddings = reply.get("embeddings") if isinstance(reply, dict) else None
        if not isinstance(embeddings, list):
            raise EmbedderError(f"The server at {self.url} does not speak Ollama's /api/embed "
                                "(no `embeddings` in its answer).",
                                hint="Check embedder.url, or update Ollama (0.3.4 or newer).")
        return embeddings

    def _unreachable(self, exc: Exception) -> KenningError:
        return EmbedderUnavailable(f"Cannot reach Ollama at {self.url} ({_reason(exc)}).",
                                   hint="Start it with `ollama serve`, or set embedder.url to "
                                   "where it runs.")

    def _classify(self, response: httpx.Response) -> KenningError:
        message = error_text(response)
        status = response.status_code
        if status == 404 and "not found" in message:
            return ModelNotFound(f"Ollama at {self.url} has no model {self.model!r}.",
                                 hint=f"Run `ollama pull {self.model}`.")
        if status == 404:
            return EmbedderUnavailable(
                f"The server at {self.url} has no /api/embed endpoint: {message}.",
                hint="Check embedder.url, or update Ollama (0.3.4 or newer).")
        if "does not support" in message and "embed" in message:
            return ModelNotFound(f"{self.model} is not an embedding model: {message}.",
                                 hint="Pick an embedding model, e.g. `ollama pull "
                                 f"{DEFAULT_MODEL}`.")
        if status >= 500:
            return EmbedderUnavailable(f"Ollama at {self.url} failed ({status}): {message}.",
                                       hint="See Ollama's log; `ollama ps` shows loaded models.")
        return EmbedderError(f"Ollama at {self.url} rejected the request ({status}): {message}.")


def _keep_alive(value: str) -> str | float:
    """Ollama reads a string as a Go duration ("30m") and a number as seconds (-1 = forever)."""
    try:
        return float(value)
    except ValueError:
        return value


def _reason(exc: Exception) -> str:
    text = str(exc).strip()
    if "refused" in text.lower():
        return "connection refused"
    return text or type(exc).__name__


# -- the backend (``kenning.embedders``) -------------------------------------------------------

def target(settings: Settings) -> tuple[str, str]:
    return settings["embedder.model"] or DEFAULT_MODEL, settings["embedder.url"] or default_url()


def identity(settings: Settings) -> Identity:
    return server_identity("ollama", settings, *target(settings))


def make(settings: Settings, *, service: bool) -> Embedder:
    model, url = target(settings)
    return OllamaEmbedder(model=model, url=url, profile=settings_profile(settings, model),
                          keep_alive=settings["embedder.keep_alive"], **server_options(settings))
