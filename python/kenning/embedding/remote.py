"""What the Ollama and OpenAI backends share: batching, bounded concurrency, prefixes,
Matryoshka truncation, learned dims and a cautious token estimate.

A backend supplies ``_embed_batch(texts) -> float rows`` (one HTTP request) and ``_probe_hint``.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypedDict

import httpx
import numpy as np

from kenning.config import Settings
from kenning.embedding import Identity, deadline, settings_profile
from kenning.embedding.http import RetryPolicy, bounded
from kenning.embedding.profiles import (
    HEADER_RESERVE_TOKENS,
    REMOTE_BUDGET_CAP,
    Profile,
    l2_normalise,
    output_dims,
    truncate,
)
from kenning.errors import ConfigError, EmbedderError

# A cautious token count for models whose tokenizer kenning does not ship. WordPiece (BERT-family
# embedders: nomic, e5, bge, arctic) fragments most: every punctuation mark is a token, letters
# go ~3 to a piece, digits ~2. Counting so, plus 15%, stays at or above the real MiniLM count on
# nearly every window of code (benchmarks/README.md); byte-level BPE models (qwen3, OpenAI) need
# fewer tokens still.
_PIECES = re.compile(r"[A-Za-z]+|[0-9]+|\S")
_MARGIN = 1.15


def cautious_token_count(text: str) -> int:
    count = 0
    for match in _PIECES.finditer(text):
        piece = match.group()
        if piece[0].isascii() and piece[0].isalpha():
            count += (len(piece) + 2) // 3
        elif piece[0].isascii() and piece[0].isdigit():
            count += (len(piece) + 1) // 2
        else:
            count += 1
    return math.ceil(count * _MARGIN)


_BROKEN_HINT = ("Nothing of this reply was stored (a broken vector would spoil every later "
                "search); the model or the server is at fault: check the server's log, or use "
                "another model.")
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_JSON_NUMBERS = (int, float, type(None))  # null is taken here and refused as NaN below


def checked_vectors(rows: object, count: int, source: str) -> np.ndarray:
    """``rows`` from a server as ``count`` unit rows of one width (float32), or an
    EmbedderError naming ``source`` and the first bad row: stored, a zero or non-finite vector
    would make every search miss, and stay reused by content hash after the server is fixed."""
    if not isinstance(rows, list) or len(rows) != count:
        got = len(rows) if isinstance(rows, list) else "no"
        raise EmbedderError(f"{source} returned {got} vectors for {count} inputs.",
                            hint=_BROKEN_HINT)
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(rows[0]):
            raise EmbedderError(f"{source} returned vectors of unequal length (input {i + 1} of "
                                f"{count}).", hint=_BROKEN_HINT)
        # JSON true would read as 1.0, and nested lists as a wider array: numbers only
        if not all(type(value) in _JSON_NUMBERS for value in row):
            raise EmbedderError(f"{source} returned vectors that are not lists of numbers "
                                f"(input {i + 1} of {count}).", hint=_BROKEN_HINT)
    if not rows[0]:
        raise EmbedderError(f"{source} returned empty (0-dim) vectors.", hint=_BROKEN_HINT)
    try:  # JSON null becomes NaN here, and is refused with it
        vectors = np.asarray(rows, dtype=np.float64)
    except (TypeError, ValueError):
        raise EmbedderError(f"{source} returned vectors that are not lists of numbers.",
                            hint=_BROKEN_HINT) from None
    magnitude = np.abs(vectors)
    bad = ~(magnitude <= _FLOAT32_MAX).all(axis=1)  # NaN, infinite, or infinite as float32
    if bad.any():
        i = int(np.argmax(bad))
        raise EmbedderError(f"{source} returned a vector with NaN or infinite values (input "
                            f"{i + 1} of {count}).", hint=_BROKEN_HINT)
    scale = magnitude.max(axis=1, keepdims=True)
    if not scale.all():
        i = int(np.argmin(scale[:, 0]))
        raise EmbedderError(f"{source} returned an all-zero vector (input {i + 1} of {count}).",
                            hint=_BROKEN_HINT)
    vectors /= scale  # huge or tiny values normalise exactly, without overflow or underflow
    return l2_normalise(vectors / np.linalg.norm(vectors, axis=1, keepdims=True))


def usable(vectors: np.ndarray, source: str) -> np.ndarray:
    """``vectors`` unless a row is zero (a Matryoshka prefix of a vector can be)."""
    norms = np.linalg.norm(vectors, axis=1)
    if (norms < 0.5).any():
        i = int(np.argmin(norms))
        raise EmbedderError(f"{source} returned a vector that is all zero in the dims kept "
                            f"(input {i + 1} of {len(vectors)}).", hint=_BROKEN_HINT)
    return vectors


def _dims_cache_path() -> Path:
    from kenning.project import kenning_home

    return kenning_home() / "cache" / "embedder-dims.json"


def _dims_key(backend: str, url: str, model: str) -> str:
    return f"{backend} {url.rstrip('/')} {model}"


def remembered_dims(backend: str, url: str, model: str) -> int | None:
    """The dims ``model`` at ``url`` answered with before, if it ever did."""
    try:
        value = json.loads(_dims_cache_path().read_text(encoding="utf-8")).get(
            _dims_key(backend, url, model))
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and value > 0 else None


class ServerOptions(TypedDict):
    """The settings every server backend's embedder takes."""

    dims: int | None
    batch_size: int
    concurrency: int
    timeout: float


def server_options(settings: Settings) -> ServerOptions:
    return {"dims": settings["embedder.dims"], "batch_size": settings["embedder.batch_size"],
            "concurrency": settings["embedder.concurrency"],
            "timeout": settings["embedder.timeout"]}


def server_identity(backend: str, settings: Settings, model: str, url: str) -> Identity:
    """The identity of ``model`` at ``url``: its dims as configured, native to the model or
    remembered from the server's earlier answer (None when none of these tells)."""
    profile = settings_profile(settings, model)
    dims = (output_dims(profile, model, settings["embedder.dims"])
            or remembered_dims(backend, url, model))
    return Identity(backend, model, profile.document_prefix, dims)


class RemoteEmbedder:
    backend = "remote"

    def __init__(self, *, model: str, url: str, profile: Profile, dims: int | None,
                 batch_size: int, concurrency: int, timeout: float,
                 client: httpx.Client | None = None, retry: RetryPolicy | None = None) -> None:
        if batch_size < 1 or concurrency < 1:
            raise ConfigError("embedder.batch_size and embedder.concurrency must be at least 1.")
        if timeout <= 0:
            raise ConfigError("embedder.timeout must be a positive number of seconds.")
        self.model = model
        self.url = url.rstrip("/")
        self.profile = profile
        self.needs_centering = profile.needs_centering
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy()
        self._requested_dims = dims
        self._dims = output_dims(profile, model, dims)
        self._own_client = client is None
        self.client = client or bounded(httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            limits=httpx.Limits(max_connections=concurrency),
        ))

    # -- the Embedder protocol ------------------------------------------------------------------

    @property
    def dims(self) -> int:
        """Configured dims, else the profile's, else remembered from this server, else probed."""
        if self._dims is None:
            self._dims = self._remembered_dims()
        if self._dims is None:
            self._probe()
        assert self._dims is not None
        return self._dims

    @property
    def max_tokens(self) -> int:
        budget = min(self.profile.context_tokens, REMOTE_BUDGET_CAP)
        return budget - cautious_token_count(self.profile.document_prefix) - HEADER_RESERVE_TOKENS

    def descriptor(self) -> dict[str, object]:
        return self._described(self.dims)

    def _described(self, dims: int) -> dict[str, object]:
        return {"backend": self.backend, "model": self.model, "dims": dims,
                "document_prefix": self.profile.document_prefix}

    def count_tokens(self, text: str) -> int:
        return cautious_token_count(text)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        prefixed = [self.profile.document_prefix + t for t in texts]
        batches = [prefixed[i : i + self.batch_size] for i in range(0, len(prefixed),
                                                                      self.batch_size)]
        if not batches:
            return np.zeros((0, self.dims), dtype=np.float32)
        if len(batches) == 1 or self.concurrency == 1:
            parts = [self._embed_checked(b) for b in batches]
        else:
            pool = ThreadPoolExecutor(min(self.concurrency, len(batches)),
                                      thread_name_prefix="kenning-embed")
            try:
                parts = list(pool.map(deadline.carry(self._embed_checked), batches))
            finally:  # on the first failure, drop batches not yet sent
                pool.shutdown(wait=True, cancel_futures=True)
        return np.concatenate(parts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed_checked([self.profile.query_prefix + text])[0]

    def check(self) -> None:
        """One tiny embedding request: proves the server, the model (and key) work."""
        self._probe()

    def close(self) -> None:
        if self._own_client:
            self.client.close()

    # -- backend hooks --------------------------------------------------------------------------

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError

    # -- shared machinery -----------------------------------------------------------------------

    def _embed_checked(self, texts: list[str]) -> np.ndarray:
        source = f"{self.model} at {self.url}"
        vectors = checked_vectors(self._embed_batch(texts), len(texts), source)
        width = vectors.shape[1]
        if self._requested_dims is not None:
            return usable(truncate(vectors, self._requested_dims), source)
        if self._dims is None:
            # What this server answered before: a change under the same model name must not
            # pass for a new model and silently start another index.
            self._dims = self._remembered_dims()
        if self._dims is None:
            self._dims = width
            self._remember_dims(width)
        elif width != self._dims:
            raise EmbedderError(
                f"{self.model} at {self.url} returned {width}-dim vectors; {self._dims} were "
                "expected.",
                hint="The model behind this name changed: use a new model name, or set "
                "embedder.dims.",
            )
        return l2_normalise(vectors)

    def _probe(self) -> None:
        self._embed_checked(["kenning dims probe"])

    def _remembered_dims(self) -> int | None:
        return remembered_dims(self.backend, self.url, self.model)

    def _remember_dims(self, dims: int) -> None:
        """Persist learned dims, so the index of this model is found with the server down."""
        path = _dims_cache_path()
        try:
            known: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            known = {}
        if not isinstance(known, dict):
            known = {}
        known[_dims_key(self.backend, self.url, self.model)] = dims
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(known, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass  # a cache only

