"""The filtered scan's mask from the columns kept in memory equals the one SQL computes, for
every kind of filter, follows vectors that arrive within a generation and is carried over to
the next generation (real index)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from index_helpers import FILES, make_repo
from kenning.indexing.indexer import refresh
from kenning.retrieval.filters import Filters
from kenning.store import Index, Snapshot, masks
from kenning.store.chunk_filter import condition

pytest_plugins = ["index_helpers"]  # fixtures: model, settings

MORE = {
    "tests/test_server.py": "from app.server import start_server\n\n\n"
                            "def test_start_server():\n    start_server(0)\n",
    "app/odd, name [1].py": "def odd_name():\n    return 'a comma and brackets'\n",
    "Makefile": "all:\n\techo build\n",
}
FILTERS = [Filters(path_filter="app"), Filters(path_filter="app/*.py"),
           Filters(path_filter="**/*.md"), Filters(path_filter="app/odd, name [[]1].py"),
           Filters(language="python"), Filters(language="rust"), Filters(kind="docs"),
           Filters(kind="code"), Filters(kind="function"), Filters(kind="test"),
           Filters(path_filter="app", language="python", kind="class")]


def _by_sql(snap: Snapshot, filters: Filters, root: Path) -> set[int]:
    keep = filters.bind(root)
    assert keep is not None
    where, params = condition(snap._conn, keep)
    return {row[0] for row in snap._conn.execute(
        "SELECT v.vector_id FROM chunks c JOIN vectors v ON v.content_hash = c.content_hash "
        f"WHERE v.vector_id < ? AND {where}", [snap.vector_rows, *params])}


def _by_columns(snap: Snapshot, filters: Filters, root: Path) -> set[int]:
    keep = filters.bind(root)
    assert keep is not None
    key = (snap.token, snap.vector_epoch, snap.generation)
    columns = masks.kept.columns(snap.directory, key, snap._conn, snap.vector_rows)
    if columns is None:  # the first ask of a snapshot: the caller keeps to SQL
        columns = masks.kept.columns(snap.directory, key, snap._conn, snap.vector_rows)
    assert columns is not None
    mask = masks.allowed(columns, snap._conn, keep, snap.vector_rows)
    assert mask.shape == (snap.vector_rows,)
    return set(np.flatnonzero(mask).tolist())


def test_the_mask_from_columns_is_the_mask_sql_computes(tmp_path, settings, model):
    repo = make_repo(tmp_path / "repo", {**FILES, **MORE})
    refresh(repo, settings, embedder=model)
    with Index.open(repo, settings, embedder=model).snapshot() as snap:
        assert snap.vector_rows > 0
        kept = [_by_sql(snap, f, repo) for f in FILTERS]
        assert all(kept[:5]) and not kept[5]  # the filters select something, or nothing
        for filters, expected in zip(FILTERS, kept, strict=True):
            assert _by_columns(snap, filters, repo) == expected, filters
            keep = filters.bind(repo)
            assert keep is not None
            assert set(np.flatnonzero(snap.allowed_vectors(keep)).tolist()) == expected


def test_vectors_that_arrive_within_a_generation_join_the_mask(tmp_path, settings, model):
    repo = make_repo(tmp_path / "repo")
    refresh(repo, settings, embedder=model, embed=False)  # chunks first, no vectors
    index = Index.open(repo, settings, embedder=model)
    python = Filters(language="python")
    with index.snapshot() as snap:
        assert snap.vector_rows == 0 and _by_columns(snap, python, repo) == set()
        generation = snap.generation
    refresh(repo, settings, embedder=model)  # the vectors, in the same generation
    with index.snapshot() as snap:
        assert snap.generation == generation and snap.vector_rows > 0
        expected = _by_sql(snap, python, repo)
        assert expected and _by_columns(snap, python, repo) == expected


def test_the_columns_are_carried_over_to_the_next_generation(tmp_path, settings, model):
    repo = make_repo(tmp_path / "repo", {**FILES, **MORE})
    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    with index.snapshot() as snap:
        for filters in FILTERS:
            _by_columns(snap, filters, repo)  # read once, every column
    (repo / "app" / "server.py").write_text("def stop_server() -> None:\n    pass\n")
    (repo / "lib" / "util.js").unlink()
    (repo / "tests" / "test_db.py").write_text("def test_connect():\n    assert True\n")
    refresh(repo, settings, embedder=model)
    with index.snapshot() as snap:
        key = (snap.token, snap.vector_epoch, snap.generation)
        # carried over at the first ask, where a snapshot never seen would get None
        assert masks.kept.columns(snap.directory, key, snap._conn, snap.vector_rows) is not None
        for filters in FILTERS:
            assert _by_columns(snap, filters, repo) == _by_sql(snap, filters, repo), filters
