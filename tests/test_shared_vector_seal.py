"""A writer of the shared vectors collection who holds no text cannot change anyone's results
(milvus-lite, or KENNING_TEST_MILVUS_URI): rows changed without the text do not open, so a
teammate's first index is the one local embedding builds; a holder of the text who stores
another text's vector is caught by the sample embedded here; rows that open but are no vectors
are refused; the publisher's next publish stores again what does not open; and rows that an
index took before any of this (forged ones included) are found by ``doctor`` and dropped by
``index --full``."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from index_helpers import FILES, CountingEmbedder, kenning_cli, make_repo
from kenning import config, kernels
from kenning.embedding import document_text
from kenning.errors import EmbedderUnavailable
from kenning.indexing.indexer import refresh
from kenning.shared import Engine, publish
from kenning.store import Index, make_descriptor, plausible
from kenning.store import shared_vectors as vector_cache
from kenning.store.shared_engine import MANIFEST_DIM
from kenning.store.vectors import VectorRows
from shared_helpers import require_engine
from test_shared_vectors import DUPLICATE, _results, _rows

require_engine()
pytest_plugins = ["index_helpers", "shared_helpers"]

QUERIES = ("merge two header dicts", "open the database", "start the http server",
           "retry with backoff", "parse a header line", "where do settings live")
# the index fixture with one text at two paths: small, as first indexes here ask the shared
# index whatever the count (``from_shared``)
CORPUS = {**FILES, "a/dup.py": DUPLICATE, "b/dup.py": DUPLICATE}


@dataclass
class Origin:
    root: Path  # the published project
    sealed: list[dict[str, Any]]  # its vectors collection as the publish left it
    texts: dict[bytes, str]  # content hash -> embedding text of its first path
    local_rows: dict[bytes, tuple[bytes, bytes, bytes]]  # a clone's index, embedded locally
    local_results: dict[str, list[tuple[Any, ...]]]


@pytest.fixture(scope="module")
def origin(module_shared_uri: str, tmp_path_factory: pytest.TempPathFactory,
           model: Any) -> Origin:
    """The fixture project published from a CI home, and a clone of it indexed locally (no
    shared vectors) in another home: what every teammate's first index must equal."""
    base = tmp_path_factory.mktemp("seal")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KENNING_SHARED_URI", module_shared_uri)
        patch.setenv("KENNING_HOME", str(base / "ci"))
        root = make_repo(base / "origin", CORPUS)
        publish(root, config.load(), embedder=model)
        with Engine(config.load(), make_descriptor(model)) as engine:
            sealed = [{**row, "unused": bytes(MANIFEST_DIM // 8)} for row in engine.query(
                engine.vectors, 'id != ""', ["id", "sealed"], "reading all")]
        texts = _document_texts(root)
        clone = base / "clone"
        shutil.copytree(root, clone)
        patch.setenv("KENNING_HOME", str(base / "local"))
        local = config.load({"shared.vectors": "false"})
        refresh(clone, local, embedder=model)
        return Origin(root, sealed, texts, _rows(clone, local),
                      {q: _results(clone, local, q) for q in QUERIES})


@pytest.fixture
def engine(origin: Origin, module_shared_uri: str, monkeypatch: pytest.MonkeyPatch,
           model: Any) -> Engine:
    """The engine with the vectors collection as the publish left it."""
    monkeypatch.setenv("KENNING_SHARED_URI", module_shared_uri)
    found = Engine(config.load(), make_descriptor(model))
    found.client.upsert(found.vectors, [dict(row) for row in origin.sealed])
    return found


def _tamper(sealed: str, mode: str, dims: int, rng: random.Random) -> str:
    """What a writer who holds no text can do to one row: the vector's bytes lie at the start
    of a format-1 row and after the version byte and the 16-byte nonce of a format-2 one."""
    data = bytearray(base64.b64decode(sealed))
    at = 0 if len(data) == vector_cache.row_bytes(dims) else 17
    width = (dims + 7) // 8
    if mode == "negate":  # every sign bit and every int8 value's bits flipped: ~x == -x - 1
        for i in range(at, at + width + dims):
            data[i] ^= 0xFF
    elif mode == "scale":  # the float32 scale's high byte: its sign and exponent
        data[at + width + dims + 3] ^= 0xFF
    else:
        data = bytearray(rng.randbytes(len(data)))
    return base64.b64encode(bytes(data)).decode()


def _teammate(origin: Origin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
              model: Any) -> tuple[Any, Path]:
    """A teammate's first index of a clone, taking what it can from the shared index."""
    clone = tmp_path / "clone"
    shutil.copytree(origin.root, clone)
    monkeypatch.setenv("KENNING_HOME", str(tmp_path / "teammate"))
    return refresh(clone, config.load(), embedder=model, from_shared=True), clone


@pytest.mark.parametrize("mode", ["negate", "scale", "random"])
def test_rows_changed_without_the_text_change_no_result(
        mode: str, origin: Origin, engine: Engine, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, model: Any):
    rng = random.Random(mode)
    engine.client.upsert(engine.vectors, [
        {**row, "sealed": _tamper(row["sealed"], mode, engine.dims, rng)} for row in origin.sealed])
    done, clone = _teammate(origin, tmp_path, monkeypatch, model)
    for query, expected in origin.local_results.items():
        assert _results(clone, config.load(), query) == expected, query
    assert done.vectors_fetched == 0 and done.vectors_missing == 0
    assert len(done.warnings) == 1
    assert done.warnings[0].startswith(f"{len(origin.sealed)} vectors in {engine.vectors} of")


def test_a_holder_of_the_text_who_stores_other_vectors_is_refused(
        origin: Origin, engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        model: Any):
    """Rows that open (sealed with the text's keys) but hold the vectors of other texts pass
    every check of a row alone; the sample embedded here refuses them all."""
    texts = origin.texts
    payloads = [vector_cache.payload(np.frombuffer(bits, np.uint8), np.frombuffer(int8, np.int8),
                                     np.frombuffer(scale, "<f4")[0])
                for bits, int8, scale in (origin.local_rows[h] for h in texts)]
    rotated = payloads[1:] + payloads[:1]  # each text gets its neighbour's vector
    vector_cache.put(engine, list(zip(texts.values(), rotated, strict=True)))
    done, clone = _teammate(origin, tmp_path, monkeypatch, model)
    for query, expected in origin.local_results.items():
        assert _results(clone, config.load(), query) == expected, query
    assert done.vectors_fetched == 0 and done.vectors_missing == 0
    assert done.warnings == [f"The vectors in {engine.vectors} of {engine.where} are not what "
                             "this machine's model makes of the same texts, so none of the "
                             f"{len(texts)} found is taken; all are embedded here."]


def test_rows_that_cannot_be_compared_are_not_taken(
        origin: Origin, engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        model: Any):
    """With the embedder down, the sample cannot be embedded: nothing fetched is stored, and the
    index stops as an embedder failure does (files and chunks kept, resumed by the next run)."""
    clone = tmp_path / "clone"
    shutil.copytree(origin.root, clone)
    monkeypatch.setenv("KENNING_HOME", str(tmp_path / "teammate"))
    down = CountingEmbedder(model, fail_after=0)
    with pytest.raises(EmbedderUnavailable, match="unreachable") as raised:
        refresh(clone, config.load(), embedder=down, from_shared=True)
    assert "run `kenning index` again to resume" in (raised.value.hint or "")
    with Index.open(clone, config.load()).snapshot() as snap:
        assert snap.vector_rows == 0 and snap.status == "partial"


def test_rows_that_open_but_are_no_vectors_are_refused(origin: Origin, engine: Engine):
    """A holder of the text can seal anything: a NaN, zero or negative scale, sign bits that
    disagree with the int8 signs, a norm far from 1 open, and are refused one by one."""
    texts = list(origin.texts.values())[:6]
    dims = engine.dims
    vector = np.random.default_rng(0).standard_normal((1, dims)).astype(np.float32)
    vector /= np.linalg.norm(vector)
    int8, scales = kernels.quantize_int8(vector)
    bits = kernels.binarize(vector)[0]
    forged = [(bits, int8[0], np.float32("nan")), (bits, int8[0], np.float32(0)),
              (bits, int8[0], -scales[0]), (np.bitwise_not(bits), int8[0], scales[0]),
              (bits, int8[0], scales[0] * 4)]
    entries = [(text, vector_cache.payload(*row)) for text, row in
               zip(texts[:5], forged, strict=True)]
    entries.append((texts[-1], vector_cache.payload(bits, int8[0], scales[0])))
    vector_cache.put(engine, entries)
    assert vector_cache.get(engine, texts) == [None] * 5 + [entries[-1][1]]  # the sound one
    assert vector_cache.lookup(engine, texts)[1] == 5  # counted, for the fetch's warning


def test_the_next_publish_stores_again_what_does_not_open(
        origin: Origin, engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        model: Any, capsys: pytest.CaptureFixture[str]):
    rng = random.Random(1)
    broken = origin.sealed[::2]
    engine.client.upsert(engine.vectors, [
        {**row, "sealed": _tamper(row["sealed"], "scale", engine.dims, rng)} for row in broken])
    engine.client.delete(engine.vectors, ids=[origin.sealed[1]["id"]])
    monkeypatch.setenv("KENNING_HOME", str(origin.root.parent / "ci"))
    code, out, err = kenning_cli(capsys, "publish", str(origin.root), "--json-output")
    assert code == 0, err
    result = json.loads(out.splitlines()[-1])  # after the progress events
    assert result["vectors_stored"] == len(broken) + 1
    assert result["nothing_changed"]  # the chunks and the manifest are as published
    assert result["vectors_repaired"] == len(broken) + 1
    code, out, err = kenning_cli(capsys, "publish", str(origin.root))
    assert code == 0 and out.startswith("Nothing changed since generation 1") and "vectors" \
        not in out  # all open now: nothing to store
    done, _ = _teammate(origin, tmp_path, monkeypatch, model)
    assert done.warnings == [] and done.vectors_fetched == len(origin.local_rows)


def test_format_1_rows_do_not_open(origin: Origin, engine: Engine):
    """A row sealed as before (the vector XOR a keystream, no integrity), stored under the id
    its text still has, is absent to a reader, not a vector."""
    text, payload = next(iter(_entries(origin)))
    secret = hashlib.blake2b(vector_cache.slug(engine).encode() + b"\0" + text.encode(),
                             digest_size=64, person=b"kenning-vectors1").digest()
    pad = hashlib.shake_256(secret[32:]).digest(len(payload))
    old = bytes(a ^ b for a, b in zip(payload, pad, strict=True))
    key = vector_cache.Key(vector_cache.slug(engine), text)
    assert key.id == secret[:16].hex()
    assert key.open(base64.b64encode(old).decode(), len(payload)) is None
    assert key.open(key.seal(payload), len(payload)) == payload


def _document_texts(root: Path) -> dict[bytes, str]:
    """content hash -> the embedding text of its first path, as a fresh index embeds it."""
    texts: dict[bytes, str] = {}
    index = Index.open(root, config.load())
    with index.snapshot() as snap:
        rows = snap._conn.execute("SELECT content_hash, path, start_byte, end_byte FROM chunks "
                                  "ORDER BY path, start_byte").fetchall()
    for content_hash, path, start, end in rows:
        text = (root / path).read_bytes()[start:end].decode()
        texts.setdefault(bytes(content_hash), document_text(path, text))
    return texts


def _entries(origin: Origin) -> list[tuple[str, bytes]]:
    return [(text, b"".join(origin.local_rows[h])) for h, text in origin.texts.items()]


def _index_taking(repo: Path, model: Any, forge: Any) -> int:
    """The repo indexed as a first index from a cache that was not checked: its vectors are
    the model's, passed through ``forge(bits, int8, scales)`` before they are stored; returns
    how many."""
    settings = config.load()
    refresh(repo, settings, embedder=model, embed=False)  # files and chunks, no vector yet
    with Index.open(repo, settings, embedder=model).writer() as writer:
        missing = writer.missing_vectors()
        vectors = model.embed_documents([
            document_text(m.path, (repo / m.path).read_bytes()[m.start_byte:m.end_byte].decode())
            for m in missing])
        rows = forge(kernels.binarize(vectors), *kernels.quantize_int8(vectors))
        writer.add_rows([m.content_hash for m in missing], rows)
    return len(missing)


def _doctor_index_check(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code, out, _ = kenning_cli(capsys, "doctor", "--json-output")
    return code, next(c for c in json.loads(out)["checks"] if c["check"] == "index integrity")


def test_rows_an_index_took_unchecked_are_found_by_doctor_and_dropped_by_index_full(
        repo: Path, model: Any, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch):
    """Negated rows (what flipping every bit of a format-1 row gives) that a first index took
    before rows were checked: doctor names them, ``index --full`` embeds them again."""
    def negate_every_other(bits: np.ndarray, int8: np.ndarray, scales: np.ndarray) -> VectorRows:
        bits[::2], int8[::2] = np.bitwise_not(bits[::2]), np.bitwise_not(int8[::2])
        return VectorRows(bits, int8, scales)

    total = _index_taking(repo, model, negate_every_other)
    forged = (total + 1) // 2
    monkeypatch.chdir(repo)
    code, check = _doctor_index_check(capsys)
    assert code == 1 and not check["ok"]
    assert f"{forged} vector rows are not what an embedder makes (row 0 first" in check["detail"]
    assert "kenning index --full" in check["fix"]
    code, out, err = kenning_cli(capsys, "index", str(repo), "--full")
    assert code == 0, err
    assert f"keeping {total - forged} intact vectors" in out
    code, check = _doctor_index_check(capsys)
    assert code == 0 and check["ok"] and "vectors drawn at random are what the model" in \
        check["detail"]
    with Index.open(repo, config.load()).snapshot() as snap:
        assert snap.status == "complete" and snap.vector_rows == total
    code, out, _ = kenning_cli(capsys, "search", "open the database", str(repo), "--json-output")
    assert code == 0 and json.loads(out)["results"][0]["path"] == "app/db.py"


def test_other_texts_vectors_an_index_took_are_found_by_doctor(
        repo: Path, model: Any, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch):
    """Rows that are each a sound vector, of the wrong text: only embedding again finds them."""
    def rotate(bits: np.ndarray, int8: np.ndarray, scales: np.ndarray) -> VectorRows:
        return VectorRows(*(np.roll(a, 1, axis=0) for a in (bits, int8, scales)))

    total = _index_taking(repo, model, rotate)
    monkeypatch.chdir(repo)
    code, check = _doctor_index_check(capsys)
    drawn = min(total, plausible.SAMPLE)
    assert code == 1 and not check["ok"]
    assert check["detail"].startswith(f"{drawn} of {drawn} vectors drawn from the index of ")
    assert f"kenning remove-index {repo}" in check["fix"]
