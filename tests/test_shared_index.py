"""Contract tests of the shared index over milvus-lite (a file of its own per test), or over a
real server when KENNING_TEST_MILVUS_URI is set: the engine's Hamming top-k and filters agree
with the local kernels and store, and publishing converges whatever happens between publishes."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kenning import config, kernels
from kenning.errors import SharedBusy
from kenning.indexing import classes
from kenning.indexing.indexer import refresh
from kenning.records import FILE_KINDS
from kenning.retrieval.filters import Filters
from kenning.retrieval.query import analyze
from kenning.shared import Engine, publish, publishing, reads, retrieval
from kenning.store import Index
from kenning.store.chunk_filter import condition
from kenning.store.shared_engine import release_all, row_key
from shared_helpers import MILVUS_URI, head_of, require_engine

require_engine()
pytest_plugins = ["index_helpers", "shared_helpers"]


@pytest.fixture
def shared(module_shared_uri: str, monkeypatch: pytest.MonkeyPatch) -> config.Settings:
    """One engine for the module: each test publishes a project of its own (its own root)."""
    monkeypatch.setenv("KENNING_SHARED_URI", module_shared_uri)
    return config.load({"embedder.batch_size": "8", "embedder.concurrency": "1"})


# -- the engine's Hamming top-k and filters against the local kernels and store ----------------

DIMS = 128


@pytest.fixture
def contract(shared: config.Settings, tmp_path: Path
             ) -> Iterator[tuple[Engine, np.ndarray, sqlite3.Connection]]:
    """An engine with 240 synthetic rows over three projects, and the same rows in SQLite."""
    descriptor = {"model": f"contract-{tmp_path.name}", "dims": DIMS}
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 256, (240, DIMS // 8), dtype=np.uint8)
    layout = [("src/a", "python", "function"), ("src/b", "rust", "struct"),
              ("docs", "markdown", "section"), ("src/a_b", "python", "class"),
              ("tests", "python", "function"), ("src/axb", "python", "function")]
    rows = []
    for i in range(len(bits)):
        folder, language, kind = layout[i % len(layout)]
        rows.append({"project": f"p{i % 3}", "path": f"{folder}/f{i % 7}.x", "language": language,
                     "kind": kind})
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, project, path, language, kind, "
               "symbol, generated INTEGER NOT NULL DEFAULT 0, file_kind TEXT)")
    db.executemany("INSERT INTO chunks VALUES (?, ?, ?, ?, ?, NULL, 0, NULL)",
                   [(i, r["project"], r["path"], r["language"], r["kind"])
                    for i, r in enumerate(rows)])
    engine = Engine(shared, descriptor)
    engine.ensure()
    engine.upsert(engine.chunks, [{
        "id": str(i), **r, "content_hash": "", "ordinal": i, "generation": 1, "start_line": 1,
        "end_line": 1, "start_byte": 0, "end_byte": 1, "symbol": "", "signature": "",
        "symbol_words": [], "text": "", "words": "w", "bits": bits[i].tobytes(),
        "rescore": "", "chunk_class": classes.chunk_class(r["path"], r["language"], None)}
        for i, r in enumerate(rows)], "loading")
    yield engine, bits, db
    if MILVUS_URI:
        engine.client.drop_collection(engine.chunks)
        engine.client.drop_collection(engine.manifest)
    engine.close()


FILTERS = [
    (Filters(), None),
    (Filters(), ["p1"]),
    (Filters(path_filter="src/a"), None),
    (Filters(path_filter="src/a"), ["p0", "p2"]),
    (Filters(path_filter="src/*/f1.x"), None),
    (Filters(language="Rust"), None),
    (Filters(kind="docs"), None),
    (Filters(kind="code", path_filter="src"), ["p2"]),
    (Filters(kind="class", language="python"), ["p1"]),  # 16 rows: fewer than k
    (Filters(kind="test"), ["p0", "p1"]),
]


def test_engine_hamming_topk_equals_the_kernel_under_every_filter(
        contract: tuple[Engine, np.ndarray, sqlite3.Connection]):
    for filters, projects in FILTERS:
        _check_topk(*contract, filters, projects)


def _check_topk(engine: Engine, bits: np.ndarray, db: sqlite3.Connection, filters: Filters,
                projects: list[str] | None) -> None:
    keep = filters.bind(Path("/"))
    where, params = condition(db, keep) if keep is not None else ("", [])
    sql = "SELECT c.id FROM chunks c WHERE " + " AND ".join(
        [w for w in (where, "c.project IN ({})".format(",".join("?" * len(projects)))
                     if projects else "") if w] or ["1"])
    allowed = np.asarray([r[0] for r in db.execute(sql, [*params, *(projects or [])])], np.int64)
    expr = reads.expression(filters, projects)
    # the engine's filter selects exactly the rows the local store's does
    assert sorted(int(r["id"]) for r in engine.query(engine.chunks, expr or 'id != ""', ["id"],
                                                     "filtering")) == allowed.tolist()
    queries = np.random.default_rng(3).integers(0, 256, (5, DIMS // 8), dtype=np.uint8)
    for k in (10, 50):
        ids, dists = kernels.hamming_topk(queries, bits, k, allowed)
        for q in range(len(queries)):
            hits = reads.hamming(engine, queries[q], k, expr)
            assert [d for _, d in hits] == dists[q].tolist()
            assert len(hits) == min(k, len(allowed))
            # ties at the last distance may be cut anywhere; every nearer row must agree
            last = dists[q][-1] if len(dists[q]) else 0
            assert ({int(r["id"]) for r, d in hits if d < last}
                    == {int(i) for i, d in zip(ids[q], dists[q], strict=True) if d < last})


def test_path_filters_naming_like_wildcards_select_the_local_rows(contract: Any):
    engine, _, db = contract
    for path_filter in ("src/a_b", "src/a_b/", "src/a_*", "src/a_b/f?.x", "src/a_b/**/*.x",
                        "src/a%b", "src/a\\b", "src/a"):
        filters = Filters(path_filter=path_filter)
        keep = filters.bind(Path("/"))
        assert keep is not None
        where, params = condition(db, keep)
        local = sorted(r[0] for r in db.execute(f"SELECT c.id FROM chunks c WHERE {where}",
                                                params))
        exact = reads.path_test(filters) or (lambda path: True)
        shared = sorted(int(r["id"]) for r in engine.query(
            engine.chunks, reads.expression(filters, None), ["id", "path"], "filtering")
            if exact(r["path"]))
        assert shared == local and (local or "%" in path_filter or "\\" in path_filter), \
            path_filter
    assert reads.path_test(Filters(path_filter="src/a")) is None  # exact in the engine


def test_every_filter_value_is_a_quoted_literal_of_the_read_layer():
    # a value cannot end its string early and add a clause of its own
    assert reads.at_project('x" or project != "') == 'project == "x\\" or project != \\""'
    assert reads.one_of("path", ['a"b', "c\\d"]) == 'path in ["a\\"b", "c\\\\d"]'
    assert reads.manifest_besides_head('p"') == '(project == "p\\"") and (kind != "head")'


def test_absolute_and_character_class_path_filters_are_refused_in_one_sentence():
    from kenning.errors import UsageError

    for bad in ("/etc", "src/[ab]/*.py"):
        with pytest.raises(UsageError, match="path filter"):
            reads.expression(Filters(path_filter=bad), None)


# -- publishing a real project --------------------------------------------------------------


def _engine_rows(settings: config.Settings, model: Any, root: Path) -> list[dict[str, Any]]:
    index = Index.open(root, settings, embedder=model)
    with Engine(settings, index.descriptor) as engine:
        return engine.query(engine.chunks, f'project == "{index.project_id}"',
                            ["id", "path", "text", "start_byte"], "reading")


def _local_rows(settings: config.Settings, model: Any, root: Path) -> set[tuple[str, str]]:
    index = Index.open(root, settings, embedder=model)
    with index.snapshot() as snap:
        return {(p, (root / p).read_bytes()[s:e].decode()) for p, s, e in
                snap._conn.execute("SELECT path, start_byte, end_byte FROM chunks")}


def _search(settings: config.Settings, model: Any, root: Path, text: str,
            **filters: Any) -> list[dict]:
    index = Index.open(root, settings, embedder=model)
    with Engine(settings, index.descriptor) as engine:
        query = analyze(text)
        found = retrieval.search(
            engine, query, np.asarray(model.embed_query(text), np.float32), Filters(**filters),
            projects=[index.project_id], branches=frozenset({"dense", "lexical", "symbol"}),
            limit=5, floor=0.0, roots={}, max_file_size=1 << 20)
        return [hit for part in found for hit in part]


def test_publish_search_edit_publish_again(shared: config.Settings, model: Any, repo: Path):
    first = publish(repo, shared, embedder=model)
    assert (first.generation, first.files_added, first.rows_deleted) == (1, 5, 0)
    rows = _engine_rows(shared, model, repo)
    assert {(r["path"], r["text"]) for r in rows} == _local_rows(shared, model, repo)
    hits = _search(shared, model, repo, "exponential backoff for failed requests")
    assert hits[0]["path"] == "app/server.py" and "RetryPolicy" in hits[0]["content"]
    assert hits[0]["stale"] is False  # no checkout here: the engine's text, as published

    again = publish(repo, shared, embedder=model)
    assert again.nothing_changed and again.generation == 1 and again.chunks_sent == 0

    server = repo / "app/server.py"
    server.write_text(server.read_text().replace("Exponential backoff for failed requests",
                                                 "Jittered pauses between reconnection tries"))
    edited = publish(repo, shared, embedder=model)
    assert (edited.generation, edited.files_changed, edited.files_added) == (2, 1, 0)
    assert edited.rows_deleted >= 1
    rows = _engine_rows(shared, model, repo)
    assert {(r["path"], r["text"]) for r in rows} == _local_rows(shared, model, repo)
    assert not any("Exponential backoff" in r["text"] for r in rows)
    hits = _search(shared, model, repo, "jittered pauses between reconnection tries")
    assert hits[0]["path"] == "app/server.py" and "Jittered" in hits[0]["content"]


def test_a_removed_file_disappears_and_dry_run_changes_nothing(shared: config.Settings,
                                                               model: Any, repo: Path):
    publish(repo, shared, embedder=model)
    util_rows = [r for r in _engine_rows(shared, model, repo) if r["path"] == "lib/util.js"]
    (repo / "lib/util.js").unlink()
    dry = publish(repo, shared, embedder=model, dry_run=True)
    assert (dry.files_removed, dry.rows_deleted, dry.generation) == (1, len(util_rows), 1)
    assert util_rows == [r for r in _engine_rows(shared, model, repo)
                         if r["path"] == "lib/util.js"]
    done = publish(repo, shared, embedder=model)
    assert (done.files_removed, done.generation) == (1, 2)
    assert not any(r["path"] == "lib/util.js" for r in _engine_rows(shared, model, repo))
    index = Index.open(repo, shared, embedder=model)
    with Engine(shared, index.descriptor) as engine:
        files = engine.query(engine.manifest, f'project == "{index.project_id}" and kind == '
                             '"file"', ["key", "digest"], "reading")
        assert sorted(r["key"] for r in files) == sorted(
            ["app/server.py", "app/db.py", "docs/guide.md", "README.md"])
        assert all(r["digest"] for r in files)
        assert "lib" not in {r["key"] for r in engine.query(
            engine.manifest, f'project == "{index.project_id}" and kind == "cluster"', ["key"],
            "reading")}


CLASSED = {
    "src/app.py": "def serve(port):\n    \"\"\"Serve the app on a port.\"\"\"\n    return port\n",
    "src/lib.rs": ("/// Adds two numbers.\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n"
                   "#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n"
                   "        assert_eq!(super::add(1, 2), 3);\n    }\n}\n"),
    "tests/test_app.py": "def test_serve():\n    assert serve(80) == 80\n",
    "docs/guide.md": "# Guide\n\nHow to serve the app.\n",
    "gen/api_pb2.py": "DESCRIPTOR = object()\n\n\ndef serve_pb(port):\n    return port\n",
    "completions/app.bash": "complete -W 'serve stop' app\n",
    "examples/demo.py": "def demo():\n    return serve(8080)\n",
}


def test_kind_filters_give_the_same_rows_locally_and_in_the_engine(
        shared: config.Settings, model: Any, tmp_path: Path):
    from index_helpers import make_repo

    root = make_repo(tmp_path / "classed", CLASSED)
    # every kind embedded, so that every chunk is published (only chunks with a vector are)
    shared = config.load({"embedder.batch_size": "8", "embedder.concurrency": "1",
                          "index.embed_kinds": ",".join(FILE_KINDS)})
    publish(root, shared, embedder=model)
    index = Index.open(root, shared, embedder=model)
    with index.snapshot() as snap, Engine(shared, index.descriptor) as engine:
        for kind in ("code", "docs", "test", "generated", "completion", "example", "function"):
            keep = Filters(kind=kind).bind(root)
            assert keep is not None
            where, params = condition(snap._conn, keep)
            local = set(snap._conn.execute(
                f"SELECT c.path, c.start_byte FROM chunks c WHERE {where}", params))
            expr = reads.expression(Filters(kind=kind), [index.project_id])
            remote = {(r["path"], r["start_byte"]) for r in engine.query(
                engine.chunks, expr, ["path", "start_byte"], "filtering")}
            assert local and remote == local, kind
    hits = _search(shared, model, root, "serve the app on a port", kind="test")
    assert hits and {h["path"] for h in hits} <= {"tests/test_app.py", "src/lib.rs"}


@pytest.mark.skipif(bool(MILVUS_URI), reason="it drops the model's collection")
def test_a_collection_made_before_classes_says_how_to_get_them(
        shared_uri: str, model: Any, repo: Path, monkeypatch: pytest.MonkeyPatch):
    from kenning.retrieval.projects import ProjectRef
    from kenning.services.search import search
    from kenning.shared import remove

    monkeypatch.setattr(Engine, "create_with_classes", False)
    settings = config.load({"shared.uri": shared_uri, "search.backend": "shared"})
    publish(repo, settings, embedder=model)
    pid = Index.open(repo, settings, embedder=model).project_id
    refs = [ProjectRef(pid, repo)]
    out = search("start the server", refs, settings=settings, embedder=model, kind="function",
                 refresh=False)
    assert out["results"] and not out["warnings"]  # a declaration kind needs no class
    out = search("start the server", refs, settings=settings, embedder=model, kind="test",
                 refresh=False)
    assert out["warnings"] == [
        f"The shared index at {shared_uri} holds chunks published before their class was "
        "stored, so --kind test cannot filter them. Results come from the local indexes only."]
    monkeypatch.setattr(Engine, "create_with_classes", True)
    remove(settings, pid, embedder=model)  # the last project: the old collection goes
    publish(repo, settings, embedder=model)
    with Engine(settings, Index.open(repo, settings, embedder=model).descriptor) as engine:
        assert engine.classes
    out = search("start the server", refs, settings=settings, embedder=model, kind="test",
                 refresh=False)
    assert not out["warnings"]


def test_bm25_ranks_the_row_with_the_term_first(shared: config.Settings, model: Any,
                                                repo: Path):
    publish(repo, shared, embedder=model)
    index = Index.open(repo, shared, embedder=model)
    ours = reads.expression(Filters(), [index.project_id])
    with Engine(shared, index.descriptor) as engine:
        for text, path in (("journal_mode", "app/db.py"), ("parseHeader", "lib/util.js"),
                           ("TOML", "docs/guide.md")):
            hits = reads.bm25(engine, analyze(text), 5, ours)
            assert hits and hits[0][0]["path"] == path
        hits = reads.symbol_rows(engine, analyze("start_server"), 5, ours)
        assert hits[0][0]["symbol"] == "start_server"


WEIGHED = {
    # "ledger" three times in a body; once in a body and in the symbol; in a path and a body
    "src/audit.py": ("def audit(entries):\n    \"\"\"Check each ledger line against the ledger "
                     "totals.\"\"\"\n    return [e for e in entries if e.ledger]\n"),
    "src/totals.py": "def ledger_total(rows):\n    return sum(r.amount for r in rows)\n",
    "ledger/report.py": "def monthly(rows):\n    return [r.ledger for r in rows]\n",
    "src/other.py": "def unrelated(x):\n    return x * 2\n",
}


def test_bm25_weighs_symbol_and_path_as_the_local_branch_does(shared: config.Settings,
                                                              model: Any, tmp_path: Path):
    from index_helpers import make_repo
    from kenning.retrieval import lexical

    root = make_repo(tmp_path / "weighed", WEIGHED)
    publish(root, shared, embedder=model)
    index = Index.open(root, shared, embedder=model)
    query = analyze("ledger")
    with index.snapshot() as snap, Engine(shared, index.descriptor) as engine:
        found = lexical.search(snap, query, limit=10)
        where = {row.id: row.path for row in snap.chunk_rows([i for i, _ in found])}
        local = [where[i] for i, _ in found]
        remote = [row["path"] for row, _ in reads.bm25(
            engine, query, 10, reads.expression(Filters(), [index.project_id]))]
    # the name outweighs three mentions in a body, the path one; unweighted it would be last
    assert local == remote == ["src/totals.py", "ledger/report.py", "src/audit.py"]


def test_the_engine_answers_what_ranking_and_status_read_of_a_snapshot(
        shared: config.Settings, model: Any, repo: Path):
    from kenning.retrieval.units import declared_words

    publish(repo, shared, embedder=model)
    (repo / "app/db.py").write_text("def close(conn):\n    conn.close()\n")
    (repo / "app/cache.py").write_text("def evict(key):\n    return key\n")
    assert refresh(repo, shared, embedder=model).status == "complete"
    index = Index.open(repo, shared, embedder=model)
    with index.snapshot() as snap, Engine(shared, index.descriptor) as engine:
        # the names each published file declares, for ranking, as the local index has them
        paths = ["app/server.py", "lib/util.js", "docs/guide.md"]
        local = declared_words(snap, paths)
        assert retrieval.declared(engine, index.project_id, paths) == local
        assert {"start", "server", "retry", "policy"} <= local["app/server.py"]
        # how far the snapshot is ahead of what was published
        assert publishing.unpublished(engine, snap, index.project_id) == {
            "added": 1, "changed": 1, "removed": 0}


def test_an_interrupted_publish_converges_on_the_next(shared: config.Settings, model: Any,
                                                      repo: Path):
    publish(repo, shared, embedder=model)
    db_file = repo / "app/db.py"
    db_file.write_text(db_file.read_text().replace("Open the database in WAL mode.",
                                                   "Open the store with a write-ahead log."))
    (repo / "README.md").unlink()
    # indexed here, where the model is loaded: the publish killed below has nothing to embed
    assert refresh(repo, shared, embedder=model).status == "complete"
    release_all()  # an embedded engine's file is for one process at a time
    env = {**os.environ, "KENNING_TEST_KILL_AT": "chunks-sent"}
    killed = subprocess.run([sys.executable, "-m", "kenning", "publish", str(repo)], env=env,
                            capture_output=True, text=True, timeout=240)
    assert killed.returncode == -9, killed.stderr
    rows = _engine_rows(shared, model, repo)
    assert any("WAL mode" in r["text"] for r in rows)  # killed before the stale rows went
    assert any("write-ahead" in r["text"] for r in rows)
    index = Index.open(repo, shared, embedder=model)
    with Engine(shared, index.descriptor) as engine:
        assert head_of(engine, index.project_id)["state"] == "publishing"
    # the files edited again meanwhile, and one more removed
    db_file.write_text(db_file.read_text().replace("write-ahead log", "WAL journal"))
    (repo / "docs/guide.md").unlink()
    done = publish(repo, shared, embedder=model)
    assert done.generation == 2
    rows = _engine_rows(shared, model, repo)
    assert {(r["path"], r["text"]) for r in rows} == _local_rows(shared, model, repo)
    assert len(rows) == len({r["id"] for r in rows})
    with Engine(shared, index.descriptor) as engine:
        head = head_of(engine, index.project_id)
        assert head["state"] == "published" and head["generation"] == 2
        assert not engine.query(engine.manifest, f'project == "{index.project_id}" and kind == '
                                '"file" and digest == ""', ["key"], "reading")


def test_concurrent_publishers_of_one_project_are_serialised(shared: config.Settings,
                                                             model: Any, repo: Path):
    publish(repo, shared, embedder=model)
    index = Index.open(repo, shared, embedder=model)
    (repo / "README.md").write_text("# Demo\n\nChanged.\n")
    with Engine(shared, index.descriptor) as engine:
        head = head_of(engine, index.project_id)
        live = {"host": socket.gethostname(), "pid": os.getppid(), "token": "other"}
        publishing._write_head(engine, index.project_id, {
            **head, "state": "publishing", "owner": live, "claimed_at": time.time()})
    with pytest.raises(SharedBusy, match="being published by another process"):
        publish(repo, shared, embedder=model)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with Engine(shared, index.descriptor) as engine:
        publishing._write_head(engine, index.project_id, {
            **head, "state": "publishing", "owner": {**live, "pid": gone.pid},
            "claimed_at": time.time()})
    taken_over = publish(repo, shared, embedder=model)
    assert taken_over.generation == 2 and taken_over.files_changed == 1


def test_primary_keys_are_deterministic():
    # pinned: a key that changed between releases would make a retried publish write new rows
    # (BLAKE2b-128 of the parts joined by U+001F)
    assert row_key("p", "a.py", 0, 10) == "7b88cf4642d91bcdc2adcea8c6185caf"
    assert row_key("p", "a.py", 0, 10) != row_key("p", "a.py", 0, 11)
    assert len(row_key("p")) == 32


def test_a_declaration_is_put_together_only_where_the_rows_pin_every_byte():
    from kenning.shared.reading import _stitched

    def row(start: int, line: int, text: str) -> dict[str, Any]:
        return {"start_byte": start, "end_byte": start + len(text.encode()), "start_line": line,
                "text": text}

    first, second = "def f():\n    a = 1\n", "    return a\n"
    # the parts meet, or only line breaks lie between them: the declaration, byte for byte
    assert _stitched([row(0, 1, first), row(19, 3, second)], (0, 32, 1, 3)) == first + second
    assert (_stitched([row(0, 1, first), row(21, 5, second)], (0, 34, 1, 5))
            == first + "\n\n" + second)
    # two bytes between them on one line: spaces, a comment? unknown, so no declaration
    assert _stitched([row(0, 1, first), row(21, 3, second)], (0, 34, 1, 3)) is None
    # a part the engine cut at its text limit
    assert _stitched([row(0, 1, first), {**row(19, 3, second), "end_byte": 99}],
                     (0, 99, 1, 3)) is None


def test_publish_cli_prints_json_and_a_summary(shared: config.Settings, repo: Path):
    from click.testing import CliRunner
    from kenning.cli import cli
    from kenning.cli.publish_cmd import summary

    result = CliRunner().invoke(cli, ["publish", str(repo), "--json-output"])
    assert result.exit_code == 0, result.output
    final = json.loads(result.output.strip().splitlines()[-1])
    assert final["type"] == "publish_result" and final["files_added"] == 5
    assert "generation 1" in summary(final) and "5 added, 0 changed, 0 removed" in summary(final)
    final.update(nothing_changed=True)
    assert summary(final).startswith("Nothing changed since generation 1")


def test_publish_without_a_shared_index_says_so_before_indexing(model: Any, repo: Path):
    from kenning.errors import ConfigError, IndexMissing

    with pytest.raises(ConfigError, match="No shared index is configured"):
        publish(repo, config.load(), embedder=model)
    with pytest.raises(IndexMissing):
        Index.open(repo, config.load(), embedder=model)


def test_a_killed_first_publish_is_named_as_such(shared: config.Settings, model: Any,
                                                 repo: Path, capsys: pytest.CaptureFixture[str]):
    from index_helpers import kenning_cli

    assert refresh(repo, shared, embedder=model).status == "complete"
    release_all()  # an embedded engine's file is for one process at a time
    env = {**os.environ, "KENNING_TEST_KILL_AT": "chunks-sent"}
    killed = subprocess.run([sys.executable, "-m", "kenning", "publish", str(repo)], env=env,
                            capture_output=True, text=True, timeout=240)
    assert killed.returncode == -9, killed.stderr
    code, out, _ = kenning_cli(capsys, "status", str(repo))
    assert code == 0 and "None" not in out.split("shared", 1)[1], out
    assert "A first publish did not finish" in out
    done = publish(repo, shared, embedder=model)
    assert done.resend_all is not None and "did not finish" in done.resend_all, done.resend_all
    assert done.generation == 1
