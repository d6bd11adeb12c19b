"""Vectors by content: the shared index hands a chunk's vector only to a client that holds the
chunk, and only a holder of the chunk can write a vector that a client takes.

A published vector is kept in ``kenning_<slug>_vectors2`` under a key derived from the text it
embeds (``Filepath: <path>\\n---\\n<chunk>``, the embedder's input) and the embedding
descriptor::

    secret  = BLAKE2b-512(descriptor slug, 0, embedding text; person "kenning-vectors1")
    id      = hex(secret[:16])                                 the row's primary key
    k_enc   = BLAKE3-derive-key("kenning shared vectors 2 cipher", secret[32:])
    k_mac   = BLAKE3-derive-key("kenning shared vectors 2 mac", secret[32:])
    body    = (bits + int8 row + float32 scale) XOR BLAKE3-keyed(k_enc, nonce) (as a stream)
    sealed  = version 2 + nonce (16 random bytes) + body + BLAKE3-keyed(k_mac, version + nonce
              + body) (32 bytes)

so a row can only be named, read or written by whoever has the path and the text: rows hold no
text, path, project or content hash, a token that can read the whole collection gets opaque ids
and sealed bytes, and a token that can write it can delete rows but not make one that opens
(encrypt-then-MAC; the MAC is compared in constant time, and a row under another id is opened
with another key). A client asks by exact ids (``get``), never by a filter, a range or a vector
search. What opens is checked again (``store.plausible``: a finite positive scale, sign bits that
agree with the int8 signs, a norm near 1), and ``fetch`` embeds a few of the rows it took here
and compares them: a holder of the text who stored another vector gets the whole fetch refused.

Format 1 (a keystream XOR without integrity, in ``kenning_<slug>_vectors``) is never read: its
collection is another one, and a row of it copied here fails the version and the MAC.

The vector is the publisher's row as its index stores it (sign bits, int8 row and scale), byte
for byte: the row local embedding of the same files stores (the local embedder's output can
move by an int8 step with the batch a text falls in, so a text embedded among other files may
differ by that much). Models whose bits are mean-centred per index (``needs_centering``) are
left out: their bits depend on the index that made them.

``fetch`` bounds the wait: the engine is asked from a worker thread, and an answer that takes
longer than ``shared.timeout`` ends the fetch with one warning (the rest is embedded locally).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import queue
import random
import secrets
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from blake3 import blake3

from kenning import project
from kenning.errors import EmbedderError, KenningError
from kenning.store import plausible
from kenning.store.shared_engine import MANIFEST_DIM, Engine, require_pymilvus
from kenning.store.vectors import VectorRows

if TYPE_CHECKING:
    from kenning.config import Settings
    from kenning.embedding import Embedder

GET_IDS = 1024  # ids named in one engine call
VERSION = 2  # of the sealed format; 1 was a bare keystream XOR, in another collection
_PERSON = b"kenning-vectors1"
_CIPHER, _MAC = "kenning shared vectors 2 cipher", "kenning shared vectors 2 mac"
_NONCE, _TAG = 16, 32


def row_bytes(dims: int) -> int:
    """Bytes of one vector as it is sealed: sign bits, int8 row, float32 scale."""
    return (dims + 7) // 8 + dims + 4


def sealed_bytes(dims: int) -> int:
    """Bytes of one sealed row: version, nonce, the encrypted vector, the MAC."""
    return 1 + _NONCE + row_bytes(dims) + _TAG


class Key:
    """The id and the two keys (cipher, MAC) of one embedding text under one descriptor."""

    __slots__ = ("id", "_cipher", "_mac")

    def __init__(self, slug: str, text: str) -> None:
        secret = hashlib.blake2b(slug.encode() + b"\0" + text.encode(), digest_size=64,
                                 person=_PERSON).digest()
        self.id = secret[:16].hex()
        self._cipher = blake3(secret[32:], derive_key_context=_CIPHER).digest()
        self._mac = blake3(secret[32:], derive_key_context=_MAC).digest()

    def _xor(self, nonce: bytes, data: bytes) -> bytes:
        pad = blake3(nonce, key=self._cipher).digest(length=len(data))
        return (int.from_bytes(data, "little") ^ int.from_bytes(pad, "little")).to_bytes(
            len(data), "little")

    def _tag(self, head: bytes) -> bytes:
        return blake3(head, key=self._mac).digest()

    def seal(self, payload: bytes) -> str:
        nonce = secrets.token_bytes(_NONCE)
        head = bytes([VERSION]) + nonce + self._xor(nonce, payload)
        return base64.b64encode(head + self._tag(head)).decode()

    def open(self, sealed: str, size: int) -> bytes | None:
        """The payload of ``size`` bytes, or None unless ``sealed`` is of this format, under
        this key, and unchanged."""
        try:
            data = base64.b64decode(sealed, validate=True)
        except ValueError:
            return None
        if len(data) != 1 + _NONCE + size + _TAG or data[0] != VERSION:
            return None
        head, tag = data[:-_TAG], data[-_TAG:]
        if not hmac.compare_digest(self._tag(head), tag):
            return None
        return self._xor(head[1:1 + _NONCE], head[1 + _NONCE:])


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
        sealed = (sealed_bytes(engine.dims) + 2) // 3 * 4  # base64
        schema.add_field("sealed", dt.VARCHAR, max_length=sealed)
        schema.add_field("unused", dt.BINARY_VECTOR, dim=MANIFEST_DIM)
        index = engine.client.prepare_index_params()
        index.add_index("unused", index_type="BIN_FLAT", metric_type="HAMMING")
        engine.client.create_collection(engine.vectors, schema=schema, index_params=index,
                                        consistency_level="Strong")


def exists(engine: Engine) -> bool:
    with engine.calls("looking for its vectors"):
        return bool(engine.client.has_collection(engine.vectors))


def put(engine: Engine, entries: Iterable[tuple[str, bytes]]) -> int:
    """Store ``(embedding text, payload)`` entries, each sealed under a fresh nonce (a retry
    stores the same vector again); returns how many were sent."""
    name = slug(engine)
    rows = []
    for text, data in entries:
        key = Key(name, text)
        rows.append({"id": key.id, "sealed": key.seal(data), "unused": bytes(MANIFEST_DIM // 8)})
    engine.upsert(engine.vectors, rows, "storing vectors by content")
    return len(rows)


def lookup(engine: Engine, texts: Sequence[str]) -> tuple[list[bytes | None], int]:
    """The payload stored for each embedding text (None where the engine has none, or none that
    opens and is a vector), and how many rows were there but refused; only the exact ids of
    ``texts`` are asked for."""
    name, size = slug(engine), row_bytes(engine.dims)
    keys = [Key(name, text) for text in texts]
    with engine.calls("reading vectors by content"):
        found = engine.client.get(engine.vectors, ids=[k.id for k in keys],
                                  output_fields=["sealed"])
    sealed = {row["id"]: row["sealed"] for row in found}
    opened = [k.open(sealed[k.id], size) if k.id in sealed else None for k in keys]
    held = [i for i, data in enumerate(opened) if data is not None]
    if held:
        rows = rows_of([p for p in opened if p is not None], engine.dims)
        for i in np.flatnonzero(plausible.implausible(rows, centred=False)):
            opened[held[i]] = None
    return opened, len(sealed) - sum(data is not None for data in opened)


def get(engine: Engine, texts: Sequence[str]) -> list[bytes | None]:
    """``lookup``'s payloads alone."""
    return lookup(engine, texts)[0]


def agrees(embedder: Embedder, texts: Sequence[str], payloads: Sequence[bytes],
           dims: int) -> bool:
    """Whether a few of ``payloads`` (drawn at random) are what ``embedder`` makes of their
    ``texts`` (``store.plausible.disagreeing``)."""
    drawn = random.sample(range(len(payloads)), min(plausible.SAMPLE, len(payloads)))
    if not drawn:
        return True
    embedded = embedder.embed_documents([texts[i] for i in drawn])
    rows = rows_of([payloads[i] for i in drawn], dims)
    return not plausible.disagreeing(rows, embedded).any()


def fetch(settings: Settings, descriptor: dict[str, Any], texts: Sequence[str],
          embedder: Embedder) -> tuple[dict[int, bytes], list[str]]:
    """Payloads of ``texts`` the engine has, by position, and warnings: the engine failed or took
    longer than ``shared.timeout`` for one answer (what came before is kept), rows were there
    that do not open, or the rows ``embedder`` made again here differ (then none is taken)."""
    engine = Engine(settings, descriptor)
    found, warning, refused = _take(engine, texts, float(settings["shared.timeout"]))
    warnings = [warning] if warning else []
    where = f"{engine.vectors} of {engine.where}"
    if refused:
        warnings.append(f"{refused} vectors in {where} do not open or are no vectors (written "
                        "without their text, or damaged), so they are embedded here.")
    hits = sorted(found)
    try:
        same = agrees(embedder, [texts[i] for i in hits], [found[i] for i in hits], engine.dims)
    except EmbedderError as exc:  # unchecked rows are not taken; embedding says the rest
        warnings.append(f"The vectors in {where} cannot be compared with this machine's model "
                        f"({exc.message.rstrip('.')}), so none of the {len(hits)} found is "
                        "taken.")
        return {}, warnings
    if not same:
        warnings.append(f"The vectors in {where} are not what this machine's model makes of "
                        f"the same texts, so none of the {len(hits)} found is taken; all are "
                        "embedded here.")
        found = {}
    return found, warnings


def _take(engine: Engine, texts: Sequence[str],
          wait: float) -> tuple[dict[int, bytes], str | None, int]:
    """``fetch``'s reads, in a worker thread: the payloads found, a warning if the engine failed
    or was slow, and how many rows were refused."""
    answers: queue.Queue[tuple[int, list[bytes | None], int] | BaseException | None] = (
        queue.Queue())
    stop = threading.Event()

    def work() -> None:
        try:
            for start in range(0, len(texts) if exists(engine) else 0, GET_IDS):
                if stop.is_set():
                    return
                answers.put((start, *lookup(engine, texts[start:start + GET_IDS])))
            answers.put(None)
        except Exception as exc:  # any failure means: embed locally
            answers.put(exc)

    # a daemon: a call that never returns must not keep the process alive
    threading.Thread(target=work, name="kenning-shared-vectors", daemon=True).start()
    found: dict[int, bytes] = {}
    refused = 0
    while True:
        try:
            answer = answers.get(timeout=wait)
        except queue.Empty:
            stop.set()
            return found, (f"{engine.where[0].upper()}{engine.where[1:]} did not answer "
                           f"within {wait:g} s (shared.timeout), so the remaining vectors are "
                           "embedded here."), refused
        if answer is None:
            return found, None, refused
        if isinstance(answer, BaseException):
            message = answer.message if isinstance(answer, KenningError) else str(answer)
            return found, f"{message.rstrip('.')}; the remaining vectors are embedded here.", \
                refused
        start, payloads, bad = answer
        refused += bad
        found.update((start + i, p) for i, p in enumerate(payloads) if p is not None)
