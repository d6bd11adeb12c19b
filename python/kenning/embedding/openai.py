"""OpenAI-compatible servers (OpenAI, llama.cpp, vLLM, LM Studio, TEI, Infinity):
``POST /v1/embeddings`` with an ``input`` list; rows come back tagged with their ``index``.

Errors are ``{"error": {"message", "type", "param", "code"}}``. The API key is read from the
environment variable named by ``embedder.api_key_env`` and sent as a bearer token when set.
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
from kenning.errors import (
    ConfigError,
    EmbedderError,
    EmbedderUnavailable,
    KenningError,
    ModelNotFound,
)

DEFAULT_MODEL = "text-embedding-3-small"


def api_base(url: str) -> str:
    """``http://host:8080`` and ``http://host:8080/v1/`` both mean ``http://host:8080/v1``."""
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


class OpenAIEmbedder(RemoteEmbedder):
    backend = "openai"

    def __init__(self, *, model: str, url: str, profile: Profile, dims: int | None,
                 batch_size: int, concurrency: int, timeout: float, api_key_env: str,
                 client: httpx.Client | None = None, retry: RetryPolicy | None = None) -> None:
        super().__init__(model=model, url=api_base(url), profile=profile, dims=dims,
                         batch_size=batch_size, concurrency=concurrency, timeout=timeout,
                         client=client, retry=retry)
        self.api_key_env = api_key_env
        self._send_dimensions = True
        self._poster = JsonPoster(self.client, self.retry, self._classify, self._unreachable)

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env, "").strip()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self._requested_dims is not None and self._send_dimensions:
            body["dimensions"] = self._requested_dims
        try:
            reply = self._poster.post(f"{self.url}/embeddings", body, self._headers())
        except EmbedderError as exc:
            if "dimensions" not in body or "dimensions" not in exc.message:
                raise
            # Servers without Matryoshka support refuse the parameter: truncate here instead.
            self._send_dimensions = False
            return self._embed_batch(texts)
        data = reply.get("data") if isinstance(reply, dict) else None
        try:
            rows = sorted(data, key=lambda item: int(item["index"]))  # type: ignore[arg-type]
            vectors = [item["embedding"] for item in rows]
        except (KeyError, TypeError, ValueError):
            raise EmbedderError(f"The server at {self.url} does not speak the OpenAI embeddings "
                                "format (expected `data` rows with `index` and `embedding`).",
                                hint="Check embedder.url and embedder.backend.") from None
        indexes = [int(item["index"]) for item in rows]
        if len(rows) == len(texts) and indexes != list(range(len(texts))):
            raise EmbedderError(f"{self.model} at {self.url} returned rows for indexes other "
                                f"than 0..{len(texts) - 1}.")
        return vectors

    def _unreachable(self, exc: Exception) -> KenningError:
        return EmbedderUnavailable(f"Cannot reach the embedding server at {self.url} ({exc}).",
                                   hint="Start the server, or set embedder.url to where it runs.")

    def _classify(self, response: httpx.Response) -> KenningError:
        message = error_text(response)
        status = response.status_code
        if status == 401:
            if os.environ.get(self.api_key_env, "").strip():
                hint = f"The key in ${self.api_key_env} was refused; set a valid one."
            else:
                hint = (f"Export the key as {self.api_key_env}, or set embedder.api_key_env to "
                        "the variable that holds it.")
            return EmbedderError(f"The embedding server at {self.url} needs a valid API key: "
                                 f"{message}", hint=hint)
        if status == 404 and ("model" in message.lower() or _code(response) == "model_not_found"):
            return ModelNotFound(f"The server at {self.url} has no model {self.model!r}: "
                                 f"{message}", hint=f"Check embedder.model against "
                                 f"{self.url}/models.")
        if status == 404:
            return EmbedderUnavailable(f"The server at {self.url} has no /embeddings endpoint.",
                                       hint="Set embedder.url to the server's base URL, e.g. "
                                       "http://localhost:8080/v1.")
        if status == 429:
            return EmbedderError(f"The embedding server at {self.url} keeps rate-limiting: "
                                 f"{message}", hint="Lower embedder.concurrency or "
                                 "embedder.batch_size, or wait and retry.")
        if status >= 500:
            return EmbedderUnavailable(f"The embedding server at {self.url} failed ({status}): "
                                       f"{message}")
        return EmbedderError(f"The embedding server at {self.url} rejected the request "
                             f"({status}): {message}")


def _code(response: httpx.Response) -> str | None:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return None
    return error.get("code") if isinstance(error, dict) else None


# -- the backend (``kenning.embedders``) -------------------------------------------------------

def target(settings: Settings) -> tuple[str, str]:
    url = settings["embedder.url"]
    if not url:
        raise ConfigError(
            "The openai backend needs embedder.url, the server's base URL.",
            hint="For example `kenning config set embedder.url http://localhost:8080/v1` "
            "(llama.cpp) or https://api.openai.com/v1.",
        )
    return settings["embedder.model"] or DEFAULT_MODEL, url


def identity(settings: Settings) -> Identity:
    return server_identity("openai", settings, *target(settings))


def make(settings: Settings, *, service: bool) -> Embedder:
    model, url = target(settings)
    return OpenAIEmbedder(model=model, url=url, profile=settings_profile(settings, model),
                          api_key_env=settings["embedder.api_key_env"],
                          **server_options(settings))
