"""Vectors by content from the shared index (milvus-lite, or KENNING_TEST_MILVUS_URI): a first
index takes the vectors a publish stored and is the index local embedding builds, row for row
and result for result; a client names rows only by the content it holds; access groups keep
their own collections; an engine that does not answer costs one warning and a bounded wait."""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from index_helpers import FILES, CountingEmbedder, kenning_cli, make_repo
from kenning import config, search
from kenning.embedding import document_text
from kenning.errors import ConfigError
from kenning.indexing.indexer import SHARED_FETCH_MIN, refresh
from kenning.shared import Engine, publish, publishing, reads
from kenning.store import Index, plausible
from kenning.store import shared_vectors as vector_cache
from shared_helpers import require_engine

require_engine()
pytest_plugins = ["index_helpers", "shared_helpers"]

DUPLICATE = '''def merge_headers(first: dict, second: dict) -> dict:
    """Later headers win."""
    merged = dict(first)
    merged.update(second)
    return merged
'''


def _files() -> dict[str, str]:
    """The index fixture, one text at two paths (a/ first), and enough functions that a first
    index asks the shared index without being told to."""
    handlers = "\n\n".join(
        f'def handle_{name}(request: dict) -> dict:\n    """Answer a {name} request."""\n'
        f'    return {{"status": 200, "kind": "{name}", "size": len(request)}}\n'
        for name in ("get", "put", "post", "delete", "patch", "head", "options", "trace",
                     "connect", "purge", "lock", "unlock", "copy", "move", "search", "link",
                     "unlink", "bind", "report", "merge", "notify", "subscribe", "propfind",
                     "proppatch", "mkcol", "checkout", "label", "update", "rebind", "unbind",
                     "acl", "orderpatch", "pri"))
    return {**FILES, "a/dup.py": DUPLICATE, "b/dup.py": DUPLICATE, "app/handlers.py": handlers}


def _home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str) -> None:
    monkeypatch.setenv("KENNING_HOME", str(tmp_path / name))


def _rows(root: Path, settings: config.Settings) -> dict[bytes, tuple[bytes, bytes, bytes]]:
    """content hash -> (sign bits, int8 row, scale) of the index of ``root``."""
    index = Index.open(root, settings)
    with index.snapshot() as snap:
        ids = dict(snap._conn.execute("SELECT content_hash, vector_id FROM vectors"))
        return {bytes(h): (snap.bits[v].tobytes(), snap.int8[v].tobytes(),
                           snap.scales[v:v + 1].tobytes()) for h, v in ids.items()}


def _results(root: Path, settings: config.Settings, query: str) -> list[tuple[Any, ...]]:
    found = search(query, root, settings=settings, refresh=False)
    return [(r.path, r.start_line, r.end_line, r.kind, r.symbol, r.score) for r in found.results]


@pytest.fixture
def shared(shared_uri: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("KENNING_SHARED_URI", shared_uri)
    return shared_uri


@pytest.fixture
def published(shared: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
              model: Any) -> Path:
    """The fixture project indexed and published from a home of its own (a CI job's)."""
    root = make_repo(tmp_path / "origin", _files())
    _home(monkeypatch, tmp_path, "ci")
    settings = config.load()
    result = publish(root, settings, embedder=model)
    assert result.vectors_stored == len(_rows(root, settings))  # one per text: a/dup.py's
    return root


def test_a_first_index_takes_the_published_vectors_and_equals_a_local_one(
        published: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: Any):
    clone = tmp_path / "clone"  # a teammate's checkout: another root, another project id
    shutil.copytree(published, clone)
    _home(monkeypatch, tmp_path, "local")
    local_settings = config.load({"shared.vectors": "false"})
    embedded = refresh(clone, local_settings, embedder=model)
    assert embedded.vectors_fetched == 0 and embedded.vectors_embedded > SHARED_FETCH_MIN
    local = _rows(clone, local_settings)
    local_results = {q: _results(clone, local_settings, q)
                     for q in ("merge two header dicts", "open the database", "patch request")}

    _home(monkeypatch, tmp_path, "teammate")
    settings = config.load()  # shared.uri set, shared.vectors on by default
    counting = CountingEmbedder(model)
    done = refresh(clone, settings, embedder=counting)
    assert done.warnings == []
    assert done.vectors_fetched == len(local) and done.vectors_embedded == 0
    # embedded here: only the few fetched rows drawn to be compared with this machine's model
    assert len(counting.texts) == plausible.SAMPLE
    assert _rows(clone, settings) == local  # bit for bit: sign bits, int8 rows and scales
    for query, expected in local_results.items():
        assert expected and _results(clone, settings, query) == expected


def test_a_text_at_another_path_is_embedded_here(published: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch, model: Any):
    """The publisher's vector of the duplicated text embeds it under a/dup.py; a checkout that
    has it only under b/dup.py embeds it itself, and gets what local embedding gives."""
    clone = tmp_path / "clone"
    shutil.copytree(published, clone)
    shutil.rmtree(clone / "a")
    _home(monkeypatch, tmp_path, "local")
    local_settings = config.load({"shared.vectors": "false"})
    refresh(clone, local_settings, embedder=model)
    local = _rows(clone, local_settings)
    _home(monkeypatch, tmp_path, "teammate")
    counting = CountingEmbedder(model)
    done = refresh(clone, config.load(), embedder=counting, from_shared=True)
    drawn, embedded = counting.texts[:plausible.SAMPLE], counting.texts[plausible.SAMPLE:]
    assert not any(text.startswith("Filepath: b/dup.py") for text in drawn)  # all fetched
    assert len(embedded) == 1
    assert embedded[0].startswith(document_text("b/dup.py", "def merge_headers"))
    assert done.vectors_fetched == len(local) - 1
    rows = _rows(clone, config.load())
    assert rows.keys() == local.keys()
    # fetched rows are the publisher's, bit for bit; the one embedded here alone may differ in
    # its last float bits from the same text embedded in a batch (an AVX2-only CPU does so)
    differing = [h for h in rows if rows[h] != local[h]]
    assert len(differing) <= 1
    for h in differing:
        here = np.frombuffer(rows[h][1], np.int8).astype(int)
        batched = np.frombuffer(local[h][1], np.int8).astype(int)
        assert np.abs(here - batched).max() <= 1
        scales = np.frombuffer(rows[h][2] + local[h][2], np.float32)
        assert scales[0] == pytest.approx(scales[1], rel=1e-4)


def test_a_client_reads_only_the_vectors_of_texts_it_names(published: Path, model: Any):
    from kenning.store import make_descriptor

    settings = config.load()
    index = Index.open(published, settings, embedder=model)
    with index.snapshot() as snap:
        hashes = [bytes(h) for (h,) in snap._conn.execute("SELECT content_hash FROM vectors")]
        readme = snap._conn.execute("SELECT content_hash, start_byte, end_byte FROM chunks "
                                    "WHERE path = 'README.md'").fetchone()
    text = (published / "README.md").read_bytes()[readme[1]:readme[2]].decode()
    with Engine(settings, make_descriptor(model)) as engine:
        held = vector_cache.get(engine, [document_text("README.md", text)])[0]
        assert held is not None and len(held) == vector_cache.row_bytes(engine.dims)
        # what a searcher sees of a chunk (its content hash, its text without the path, the
        # text under another path) names nothing
        assert vector_cache.get(engine, [bytes(readme[0]).hex(), text,
                                         document_text("docs/README.md", text),
                                         "Filepath: x.py\n---\nnot published"]) == [None] * 4
        # what a token that may read the whole collection gets: opaque ids and sealed bytes
        rows = engine.query(engine.vectors, 'id != ""', ["id", "sealed"], "reading all")
        assert len(rows) == len(hashes)
        assert {r["id"] for r in rows}.isdisjoint({h.hex() for h in hashes})
        assert {field for r in rows for field in r} <= {"id", "sealed", "unused"}
        plain = held[engine.dims // 8:]  # the int8 row and scale as the index stores them
        assert not any(plain in __import__("base64").b64decode(r["sealed"]) for r in rows)
        # a sealed row opened with another text's key is noise, not the vector
        other = vector_cache.Key(vector_cache.slug(engine), "Filepath: y.py\n---\nguess")
        own = vector_cache.Key(vector_cache.slug(engine), document_text("README.md", text))
        sealed = next(r["sealed"] for r in rows if r["id"] == own.id)
        assert other.open(sealed, len(held)) != held


def test_publish_stores_only_new_vectors_and_fills_a_project_published_before(
        published: Path, model: Any):
    settings = config.load()
    assert publish(published, settings, embedder=model).vectors_stored == 0  # a rerun
    before = len(_rows(published, settings))
    (published / "app" / "db.py").write_text(FILES["app/db.py"].replace("WAL", "DELETE"))
    edited = publish(published, settings, embedder=model)
    assert len(_rows(published, settings)) > before  # a new vector
    # the chunks of the changed file, as they are sent again (storing is idempotent)
    assert edited.vectors_stored == edited.chunks_sent == 2
    # a project published before vectors were stored by content: its head lacks the mark
    from kenning.store import make_descriptor

    with Engine(settings, make_descriptor(model)) as engine:
        project = Index.open(published, settings, embedder=model).project_id
        head = reads.read_head(engine, project) or {}
        publishing._write_head(engine, project, {**head, "vectors_by_content": False})
        engine.client.drop_collection(engine.vectors)
    again = publish(published, settings, embedder=model)
    with Index.open(published, settings).snapshot() as snap:
        live = snap._conn.execute("SELECT count(DISTINCT content_hash) FROM chunks").fetchone()
    assert again.nothing_changed and again.vectors_stored == live[0]
    with Engine(settings, make_descriptor(model)) as engine:
        assert (reads.read_head(engine, project) or {})["vectors_by_content"] is True


def test_access_groups_keep_their_own_collections(published: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch, model: Any):
    from kenning.store import make_descriptor

    grouped = make_repo(tmp_path / "payments", {"pay/charge.py": DUPLICATE + "\n# charge\n"})
    payments = config.load({"shared.group": "payments"})
    publish(grouped, payments, embedder=model)
    descriptor = make_descriptor(model)
    with Engine(payments, descriptor) as engine:
        assert engine.chunks.startswith("kenning_payments_")
        names = set(engine.client.list_collections())
        assert {engine.chunks, engine.manifest, engine.vectors} <= names
        assert set(reads.published(engine)) == {Index.open(grouped, payments).project_id}
    with Engine(config.load(), descriptor) as default:  # the default group does not see it
        assert Index.open(grouped, payments).project_id not in reads.published(default)
    clone = tmp_path / "clone"
    shutil.copytree(published, clone)
    _home(monkeypatch, tmp_path, "other-group")
    outsider = config.load({"shared.group": "payments"})
    done = refresh(clone, outsider, embedder=model, from_shared=True)
    assert done.vectors_fetched == 0 and done.warnings == []  # nothing of its group to take
    with pytest.raises(ConfigError, match="shared.group"):
        config.load({"shared.group": "pay-ments"})


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server on loopback that accepts connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()


def _unused_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


@pytest.fixture
def refusing_uri(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A server that refuses every token, as an authenticating Milvus does."""
    from milvus_auth_server import refusing_server

    monkeypatch.setenv("MILVUS_TOKEN", "reader:wrong")
    with refusing_server() as server:
        yield server.uri


@pytest.mark.parametrize("engine", ["silent", "unreachable", "refusing"])
def test_an_engine_that_does_not_answer_costs_one_warning(
        engine: str, request: pytest.FixtureRequest, repo: Path,
        monkeypatch: pytest.MonkeyPatch, model: Any):
    uri = (f"http://127.0.0.1:{_unused_port()}" if engine == "unreachable"
           else request.getfixturevalue(f"{engine}_server" if engine == "silent"
                                        else "refusing_uri"))
    make_repo(repo, _files())
    settings = config.load({"shared.uri": uri, "shared.timeout": "1"})
    events: list[dict[str, Any]] = []
    done = refresh(repo, settings, embedder=model, progress=events.append)
    assert done.vectors_fetched == 0 and done.vectors_missing == 0
    assert done.vectors_embedded == len(_rows(repo, settings))
    assert len(done.warnings) == 1 and uri in done.warnings[0]
    assert "embedded here" in done.warnings[0]
    assert [e["message"] for e in events if e["type"] == "warning"] == done.warnings
    if engine == "refusing":  # the engine's access control, said as such; never the token
        assert "refused the token in $MILVUS_TOKEN" in done.warnings[0]
        assert "wrong" not in done.warnings[0]


def test_index_from_shared_on_the_command_line(published: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]):
    clone = tmp_path / "clone"
    shutil.copytree(published, clone)
    vectors = len(_rows(published, config.load()))
    _home(monkeypatch, tmp_path, "teammate")
    code, out, err = kenning_cli(capsys, "index", str(clone), "--from-shared")
    assert code == 0, err
    assert f"0 embedded, {vectors} from the shared index" in out
    monkeypatch.delenv("KENNING_SHARED_URI")
    code, out, err = kenning_cli(capsys, "index", str(clone), "--from-shared")
    assert code == 2 and err.startswith("Error: No shared index is configured.")


def test_the_vector_payload_round_trips():
    dims = 20
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 256, (3, 3), dtype=np.uint8)
    int8 = rng.integers(-127, 128, (3, dims), dtype=np.int8)
    scales = rng.random(3, dtype=np.float32)
    block = vector_cache.rows_of([vector_cache.payload(bits[i], int8[i], scales[i])
                                  for i in range(3)], dims)
    assert (block.bits == bits).all() and (block.int8 == int8).all()
    assert (block.scales == scales).all()
    key = vector_cache.Key("slug", "text")
    data = vector_cache.payload(bits[0], int8[0], scales[0])
    assert key.open(key.seal(data), len(data)) == data
    assert key.open(key.seal(data), len(data) + 1) is None


def test_a_publish_killed_midway_is_finished_by_the_next(
        shared: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: Any):
    import os
    import subprocess
    import sys

    from kenning.store import make_descriptor
    from kenning.store.shared_engine import release_all

    root = make_repo(tmp_path / "origin", _files())
    _home(monkeypatch, tmp_path, "ci")
    settings = config.load()
    assert refresh(root, settings, embedder=model).status == "complete"
    texts = len(_rows(root, settings))
    release_all()  # an embedded engine's file is for one process at a time
    killed = subprocess.run([sys.executable, "-m", "kenning", "publish", str(root)],
                            env={**os.environ, "KENNING_TEST_KILL_AT": "chunks-sent"},
                            capture_output=True, text=True, timeout=240)
    assert killed.returncode == -9, killed.stderr
    again = publish(root, settings, embedder=model)
    assert again.vectors_stored == texts  # the cut run's files are sent again, vectors too
    with Engine(settings, make_descriptor(model)) as engine:
        stored = engine.query(engine.vectors, 'id != ""', ["id"], "counting")
    assert len(stored) == texts  # the same rows, written twice
    clone = tmp_path / "clone"
    shutil.copytree(root, clone)
    _home(monkeypatch, tmp_path, "teammate")
    done = refresh(clone, config.load(), embedder=model)
    assert done.vectors_fetched == texts and done.vectors_embedded == 0


def test_a_small_refresh_does_not_ask_the_shared_index(silent_server: str, repo: Path,
                                                       model: Any):
    """An edit followed by a search stays local: under SHARED_FETCH_MIN missing vectors the
    engine (here one that never answers) is not asked."""
    assert refresh(repo, config.load(), embedder=model).vectors_embedded < SHARED_FETCH_MIN
    (repo / "app" / "db.py").write_text(FILES["app/db.py"].replace("WAL", "DELETE"))
    settings = config.load({"shared.uri": silent_server, "shared.timeout": "30"})
    done = refresh(repo, settings, embedder=model)
    assert done.vectors_embedded >= 1 and done.warnings == [] and done.vectors_fetched == 0


# the kill points of a publish, in the order it reaches them: vectors-stored 1 is the sent files'
# vectors, 2 the rows of unchanged files stored again
PUBLISH_STAGES = ["files-marked", "vectors-stored:1", "vectors-stored:2", "chunks-sent",
                  "stale-deleted", "manifest-written"]
_SCALARS = ["id", "path", "content_hash", "ordinal", "generation", "start_line", "end_line",
            "start_byte", "end_byte", "kind", "symbol", "text", "words"]


def test_publishes_killed_at_random_points_converge_row_for_row(
        shared: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: Any):
    """An edit's publish, with rows of unchanged files lost from the vectors collection, is
    killed at three points drawn at random (in the order a publish reaches them, so each run
    gets to its point); the next publish leaves what one uninterrupted publish leaves."""
    import os
    import random
    import subprocess
    import sys

    from kenning.store import make_descriptor
    from kenning.store.shared_engine import release_all

    root = make_repo(tmp_path / "origin", {**FILES, "a/dup.py": DUPLICATE, "b/dup.py": DUPLICATE})
    _home(monkeypatch, tmp_path, "ci")
    settings = config.load()
    publish(root, settings, embedder=model)
    descriptor = make_descriptor(model)
    with Engine(settings, descriptor) as engine:
        first = {r["id"] for r in engine.query(engine.vectors, 'id != ""', ["id"], "reading")}
        lost = set(sorted(first)[::3])
        engine.client.delete(engine.vectors, ids=sorted(lost))
    (root / "app" / "db.py").write_text(FILES["app/db.py"].replace("WAL", "DELETE"))
    (root / "app" / "extra.py").write_text("def extra_helper():\n    return 7\n")
    (root / "lib" / "util.js").unlink()
    assert refresh(root, settings, embedder=model).status == "complete"
    release_all()  # an embedded engine's file is for one process at a time
    points = sorted(random.Random(47).sample(PUBLISH_STAGES, 3), key=PUBLISH_STAGES.index)
    for point in points:
        killed = subprocess.run([sys.executable, "-m", "kenning", "publish", str(root)],
                                env={**os.environ, "KENNING_TEST_KILL_AT": point},
                                capture_output=True, text=True, timeout=240)
        assert killed.returncode == -9, (point, killed.stdout, killed.stderr)
    publish(root, settings, embedder=model)

    index = Index.open(root, settings, embedder=model)
    by_content = publishing._ByContent()
    with index.snapshot() as snap, Engine(settings, descriptor) as engine:
        digests = {p: d for p, (d, _) in snap.file_digests().items()}
        expected = publishing._chunk_rows(snap, root, index.project_id, sorted(digests), digests,
                                          [], int(settings["index.max_file_size"]),
                                          engine.classes, by_content)
        published = engine.query(engine.chunks, f'project == "{index.project_id}"', _SCALARS,
                                 "reading")
        assert sorted(tuple(r[f] for f in _SCALARS) for r in published) == sorted(
            tuple(r[f] for f in _SCALARS) for r in expected)
        files = reads.manifest_rows(engine, index.project_id, "file", ["key", "digest"],
                                         "reading")
        assert {r["key"]: r["digest"] for r in files} == {p: d.hex() for p, d in digests.items()}
        clusters = reads.manifest_rows(engine, index.project_id, "cluster",
                                            ["key", "digest"], "reading")
        assert {r["key"]: r["digest"] for r in clusters} == {
            c: d.hex() for c, d in snap.cluster_digests().items()}
        head = reads.read_head(engine, index.project_id) or {}
        assert head["state"] == "published" and head["index_token"] == snap.token
        # every text's row opens to the index's own row (the lost ones stored again); nothing
        # else was added, and rows of texts the project no longer has stay as they were
        texts = [text for text, _ in by_content.entries]
        assert vector_cache.get(engine, texts) == [row for _, row in by_content.entries]
        stored = {r["id"] for r in engine.query(engine.vectors, 'id != ""', ["id"], "reading")}
        slug = vector_cache.slug(engine)
        assert stored == (first - lost) | {vector_cache.Key(slug, text).id for text in texts}
