"""Vectors by content: the shared index hands a chunk's vector only to a client that holds the
chunk.

A published vector is kept in ``kenning_<slug>_vectors`` under a key derived from the text it
embeds (``Filepath: <path>\\n---\\n<chunk>``, the embedder's input) and the embedding
descriptor::

    secret = BLAKE2b-512(descriptor slug, 0, embedding text; person "kenning-vectors1")
    id     = hex(secret[:16])                        the row's primary key
    sealed = (bits + int8 row + float32 scale) XOR SHAKE-256(secret[32:])

so a row can only be named, and its vector only read, by whoever has the path and the text:
rows hold no text, path, project or content hash, and a token that can read the whole
collection gets opaque ids and sealed bytes. A client asks by exact ids (``get``), never by a
filter, a range or a vector search. The vector is the publisher's row as its index stores it
(sign bits, int8 row and scale), byte for byte: the row local embedding of the same files
stores (the local embedder's output can move by an int8 step with the batch a text falls in,
so a text embedded among other files may differ by that much). Models whose bits are
mean-centred per index (``needs_centering``) are left out: their bits depend on the index that
made them.

``fetch`` bounds the wait: the engine is asked from a worker thread, and an answer that takes
longer than ``shared.timeout`` ends the fetch with one warning (the rest is embedded locally).
"""

from __future__ import annotations

import base64
import hashlib
import queue
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kenning import project
from kenning.errors import KenningError
from kenning.shared.engine import MANIFEST_DIM, Engine, require_pymilvus
from kenning.store.vectors import VectorRows

if TYPE_CHECKING:
    from kenning.config import Settings

GET_IDS = 1024  # ids named in one engine call
_PERSON = b"kenning-vectors1"


def row_bytes(dims: int) -> int:
    """Bytes of one sealed vector: sign bits, int8 row, float32 scale."""
    return (dims + 7) // 8 + dims + 4


class Key:
    """The id and the pad of one embedding text under one descriptor."""

    __slots__ = ("id", "_pad_seed")

    def __init__(self, slug: str, text: str) -> None:
        secret = hashlib.blake2b(slug.encode() + b"\0" + text.encode(), digest_size=64,
                                 person=_PERSON).digest()
        self.id = secret[:16].hex()
        self._pad_seed = secret[32:]

    def _pad(self, size: int) -> bytes:
        return hashlib.shake_256(self._pad_seed).digest(size)

    def _xor(self, data: bytes) -> bytes:
        pad = int.from_bytes(self._pad(len(data)), "little")
        return (int.from_bytes(data, "little") ^ pad).to_bytes(len(data), "little")

    def seal(self, payload: bytes) -> str:
        return base64.b64encode(self._xor(payload)).decode()

    def open(self, sealed: str, size: int) -> bytes | None:
        try:
            data = base64.b64decode(sealed, validate=True)
        except ValueError:
            return None
        if len(data) != size:
            return None
        return self._xor(data)


def slug(engine: Engine) -> str:
    return project.descriptor_slug(engine.descriptor)


def payload(bits: np.ndarray, int8: np.ndarray, scale: np.floating[Any] | float) -> bytes:
    """One row as it is sealed: its sign bits, int8 row and little-endian float32 scale."""
    return (np.asarray(bits, np.uint8).tobytes() + np.asarray(int8, np.int8).tobytes()
            + np.asarray([scale], "<f4").tobytes())


def rows_of(payloads: Sequence[bytes], dims: int) -> VectorRows:
    """Opened payloads as one block of index rows."""
    width = (dims + 7) // 8
    raw = np.frombuffer(b"".join(payloads), np.uint8).reshape(len(payloads), row_bytes(dims))
    return VectorRows(np.ascontiguousarray(raw[:, :width]),
                      np.ascontiguousarray(raw[:, width:width + dims]).view(np.int8),
                      np.ascontiguousarray(raw[:, width + dims:]).view("<f4").astype(
                          np.float32).reshape(len(payloads)))


def ensure(engine: Engine) -> None:
    """Create the vectors collection if absent. Milvus wants a vector field in every collection:
    this one's is all zeros, so a vector search over it orders nothing."""
    with engine.calls("creating its vectors collection"):
        if engine.client.has_collection(engine.vectors):
            return
        dt = require_pymilvus().DataType
        schema = engine.client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", dt.VARCHAR, max_length=32, is_primary=True)
        sealed = (row_bytes(engine.dims) + 2) // 3 * 4
        schema.add_field("sealed", dt.VARCHAR, max_length=sealed)
        schema.add_field("unused", dt.BINARY_VECTOR, dim=MANIFEST_DIM)
        index = engine.client.prepare_index_params()
        index.add_index("unused", index_type="BIN_FLAT", metric_type="HAMMING")
        engine.client.create_collection(engine.vectors, schema=schema, index_params=index,
                                        consistency_level="Strong")


def put(engine: Engine, entries: Iterable[tuple[str, bytes]]) -> int:
    """Store ``(embedding text, payload)`` entries (idempotent: a text's row is always the
    same); returns how many were sent."""
    name = slug(engine)
    rows = []
    for text, data in entries:
        key = Key(name, text)
        rows.append({"id": key.id, "sealed": key.seal(data), "unused": bytes(MANIFEST_DIM // 8)})
    engine.upsert(engine.vectors, rows, "storing vectors by content")
    return len(rows)


def get(engine: Engine, texts: Sequence[str]) -> list[bytes | None]:
    """The payload stored for each embedding text, None where the engine has none; only the
    exact ids of ``texts`` are asked for."""
    name, size = slug(engine), row_bytes(engine.dims)
    keys = [Key(name, text) for text in texts]
    with engine.calls("reading vectors by content"):
        found = engine.client.get(engine.vectors, ids=[k.id for k in keys],
                                  output_fields=["sealed"])
    sealed = {row["id"]: row["sealed"] for row in found}
    return [k.open(sealed[k.id], size) if k.id in sealed else None for k in keys]


def fetch(settings: Settings, descriptor: dict[str, Any],
          texts: Sequence[str]) -> tuple[dict[int, bytes], str | None]:
    """Payloads of ``texts`` the engine has, by position, and a warning if the engine failed or
    took longer than ``shared.timeout`` for one answer (what came before is kept)."""
    wait = float(settings["shared.timeout"])
    engine = Engine(settings, descriptor)
    answers: queue.Queue[tuple[int, list[bytes | None]] | BaseException | None] = queue.Queue()
    stop = threading.Event()

    def work() -> None:
        try:
            with engine.calls("looking for its vectors"):
                present = engine.client.has_collection(engine.vectors)
            for start in range(0, len(texts) if present else 0, GET_IDS):
                if stop.is_set():
                    return
                answers.put((start, get(engine, texts[start:start + GET_IDS])))
            answers.put(None)
        except Exception as exc:  # any failure means: embed locally
            answers.put(exc)

    # a daemon: a call that never returns must not keep the process alive
    threading.Thread(target=work, name="kenning-shared-vectors", daemon=True).start()
    found: dict[int, bytes] = {}
    while True:
        try:
            answer = answers.get(timeout=wait)
        except queue.Empty:
            stop.set()
            return found, (f"{engine.where[0].upper()}{engine.where[1:]} did not answer "
                           f"within {wait:g} s (shared.timeout), so the remaining vectors are "
                           "embedded here.")
        if answer is None:
            return found, None
        if isinstance(answer, BaseException):
            message = answer.message if isinstance(answer, KenningError) else str(answer)
            return found, f"{message.rstrip('.')}; the remaining vectors are embedded here."
        start, payloads = answer
        found.update((start + i, p) for i, p in enumerate(payloads) if p is not None)
