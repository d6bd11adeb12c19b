"""The approximate path wired into the index: the refresh keeps a usearch graph over the
committed sign bits (per vector epoch), and search uses it only while it is exactly current."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kenning import config, hostos
from kenning.errors import ConfigError
from kenning.indexing import indexer
from kenning.retrieval import dense, resolve_projects
from kenning.services.search import search
from kenning.store import Index, graph
from kenning.store.ann import AnnIndex

pytest_plugins = ["index_helpers"]  # fixtures: model, settings, repo

QUERIES = ["exponential backoff for failed requests", "open the database in WAL mode",
           "parse an HTTP header line"]


def settings(mode: str = "ann", **extra: str) -> config.Settings:
    return config.load({"embedder.batch_size": "4", "embedder.concurrency": "1",
                        "index.vector_search": mode, **extra})


def graphs(index: Index) -> list[str]:
    return sorted(p.name for p in index.dir.glob("*.usearch*"))


def graph_rows(index: Index, epoch: int) -> int:
    return len(AnnIndex(graph.path(index.dir, epoch), 384).view())


def snapshot_state(index: Index) -> tuple[int, int]:
    with index.snapshot() as snap:
        return snap.vector_epoch, snap.vector_rows


def run(repo: Path, query: str, mode: str, **kwargs: Any) -> list[tuple[str, float]]:
    found = search(query, resolve_projects(settings(mode), [str(repo)]), settings=settings(mode),
                   refresh=False, **kwargs)
    return [(hit["id"], hit["score"]) for hit in found["results"]]


def test_the_graph_follows_edits_and_is_rebuilt_after_a_compaction(repo, model, monkeypatch):
    first = indexer.refresh(repo, settings(), embedder=model)
    index = Index.open(repo, settings(), embedder=model)
    epoch, rows = snapshot_state(index)
    assert (epoch, first.graph_rows_added) == (0, rows) and rows > 0
    assert graphs(index) == ["vectors.usearch"] and graph_rows(index, 0) == rows

    (repo / "app" / "cache.py").write_text(
        "def evict_oldest(entries: dict) -> None:\n    \"\"\"Drop the least recently used.\"\"\"\n"
        "    entries.pop(next(iter(entries)))\n")
    edit = indexer.refresh(repo, settings(), embedder=model)
    assert edit.vectors_embedded > 0 and edit.graph_rows_added == edit.vectors_embedded
    assert graph_rows(index, 0) == rows + edit.vectors_embedded == snapshot_state(index)[1]
    assert indexer.refresh(repo, settings(), embedder=model).graph_rows_added == 0

    monkeypatch.setattr(indexer, "COMPACT_MIN_DEAD", 0)
    for path in ("app/server.py", "lib/util.js", "docs/guide.md"):
        (repo / path).unlink()  # their vectors become garbage; the compaction renumbers the rest
    compacted = indexer.refresh(repo, settings(), embedder=model)
    epoch, rows = snapshot_state(index)
    assert compacted.vectors_dropped > 0 and epoch == 1
    assert compacted.graph_rows_added == rows  # rebuilt for the new ids, not appended to
    assert graphs(index) == ["vectors.1.usearch"] and graph_rows(index, 1) == rows
    with index.snapshot() as snap:  # the graph's vectors are the new epoch's rows
        stored = AnnIndex(graph.path(index.dir, 1), 384).view()
        ids, dists = stored.search(np.array(snap.bits[:rows]), 1)
        assert ids[:, 0].tolist() == list(range(rows)) and not dists.any()


def test_search_through_the_graph_equals_the_exact_scan(repo, model, graph_searches):
    indexer.refresh(repo, settings(), embedder=model)
    for query in QUERIES:
        exact = run(repo, query, "exact")
        assert not graph_searches
        assert run(repo, query, "ann") == exact and exact
        assert len(graph_searches) == 1
        graph_searches.clear()
    index = Index.open(repo, settings(), embedder=model)
    with index.snapshot() as snap:  # a shortlist shorter than the index: same candidates
        vector = model.embed_query(QUERIES[0])
        assert (dense.search(snap, vector, shortlist=5, ann_dir=index.dir)
                == dense.search(snap, vector, shortlist=5))


def test_filters_still_return_hits_through_the_graph(repo, model, graph_searches):
    indexer.refresh(repo, settings(), embedder=model)
    for filters in ({"path_filter": "app/"}, {"language": "javascript"}):
        hits = run(repo, "parse a value", "ann", **filters)
        assert hits and graph_searches
        assert hits == run(repo, "parse a value", "exact", **filters)
        graph_searches.clear()
    found = search("parse a value", resolve_projects(settings(), [str(repo)]),
                   settings=settings(), refresh=False, path_filter="lib/")
    assert {hit["path"] for hit in found["results"]} == {"lib/util.js"}


def test_a_stale_or_missing_graph_falls_back_to_the_exact_scan(repo, model, graph_searches):
    indexer.refresh(repo, settings(), embedder=model)
    index = Index.open(repo, settings(), embedder=model)
    _, rows = snapshot_state(index)
    query = QUERIES[1]
    exact = run(repo, query, "exact")
    with index.snapshot() as snap:  # a graph one row behind (say, an older snapshot's)
        AnnIndex(graph.path(index.dir, 0), 384).sync(np.array(snap.bits), rows - 1)
    assert run(repo, query, "ann") == exact and not graph_searches
    graph.path(index.dir, 0).rename(graph.path(index.dir, 3))  # another epoch's graph
    assert run(repo, query, "ann") == exact and not graph_searches
    graph.path(index.dir, 3).unlink()
    assert run(repo, query, "ann") == exact and not graph_searches  # none at all
    graph.path(index.dir, 0).write_bytes(b"not a graph" * 100)  # damaged on disk
    assert run(repo, query, "ann") == exact and not graph_searches
    assert indexer.refresh(repo, settings(), embedder=model).graph_rows_added == rows
    graph.path(index.dir, 0).unlink()

    leftover = index.dir / ".vectors.usearch.999.tmp"  # what a sync killed mid-save leaves
    leftover.write_bytes(b"half a graph")
    assert indexer.refresh(repo, settings(), embedder=model).graph_rows_added == rows
    assert graphs(index) == ["vectors.usearch"]  # caught up; the leftover is gone
    assert run(repo, query, "ann") == exact and graph_searches


def test_the_mode_decides_whether_a_graph_is_built(repo, model):
    index = Index.open(repo, settings(), embedder=model, create=True)
    indexer.refresh(repo, settings("exact", **{"index.ann_threshold": "1"}), embedder=model)
    assert graphs(index) == []
    indexer.refresh(repo, settings("auto"), embedder=model)  # far below the default threshold
    assert graphs(index) == []
    result = indexer.refresh(repo, settings("auto", **{"index.ann_threshold": "1"}),
                             embedder=model)
    assert result.graph_rows_added == snapshot_state(index)[1] and graphs(index)
    with pytest.raises(ConfigError):
        config.load({"index.vector_search": "sometimes"})


def test_a_search_refresh_leaves_the_graph_to_the_indexer(repo, model, graph_searches):
    indexer.refresh(repo, settings(), embedder=model)
    index = Index.open(repo, settings(), embedder=model)
    _, rows = snapshot_state(index)
    (repo / "app" / "jobs.py").write_text("def schedule_nightly_backup() -> None:\n    pass\n")
    found = search("schedule the nightly backup", resolve_projects(settings(), [str(repo)]),
                   settings=settings(), refresh=True, embedder=model)
    assert found["results"][0]["path"] == "app/jobs.py"  # fresh, from the exact scan
    assert not graph_searches and graph_rows(index, 0) == rows < snapshot_state(index)[1]
    assert indexer.refresh(repo, settings(), embedder=model).graph_rows_added == 1
    assert run(repo, "schedule the nightly backup", "ann")[0][0] == found["results"][0]["id"]
    assert graph_searches


def test_a_killed_index_run_keeps_the_old_graph_and_the_next_run_catches_up(repo, model,
                                                                            graph_searches):
    indexer.refresh(repo, settings(), embedder=model)
    index = Index.open(repo, settings(), embedder=model)
    _, rows = snapshot_state(index)
    (repo / "pkg").mkdir()
    for i in range(4):
        (repo / "pkg" / f"mod{i}.py").write_text(
            f"def handler_{i}(event):\n    return event.get('k{i}')\n\n\n"
            f"def helper_{i}(values):\n    return sorted(values)[:{i}]\n")
    env = {**os.environ, "KENNING_EMBEDDER_BATCH_SIZE": "4", "KENNING_EMBEDDER_CONCURRENCY": "1",
           "KENNING_INDEX_VECTOR_SEARCH": "ann", "KENNING_TEST_KILL_AT": "batch-committed:1"}
    proc = subprocess.run([sys.executable, "-m", "kenning", "index", str(repo)], env=env,
                          capture_output=True, timeout=120)
    assert proc.returncode == hostos.KILLED
    _, committed = snapshot_state(index)
    assert rows < committed and graph_rows(index, 0) == rows  # the old graph, untouched
    query = "look up a key in the event"
    assert run(repo, query, "ann") == run(repo, query, "exact") and not graph_searches
    resumed = indexer.refresh(repo, settings(), embedder=model)
    _, total = snapshot_state(index)
    assert resumed.graph_rows_added == total - rows and graph_rows(index, 0) == total
    assert run(repo, query, "ann") == run(repo, query, "exact") and graph_searches
