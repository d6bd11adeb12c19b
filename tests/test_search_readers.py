"""Read connections kept between searches: reused while the index stays at the snapshot's
generation, never used for another generation or an index that is gone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kenning import config
from kenning.indexer import refresh
from kenning.search import ProjectRef, api, search
from kenning.store import Index


@pytest.fixture
def root(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("def alpha():\n    return 1\n")
    refresh(repo, config.load(), embed=False)
    return repo


def test_a_connection_serves_later_searches_of_the_same_generation(root: Path) -> None:
    readers = api._Readers()
    index = Index.open(root, config.load())
    with index.snapshot() as snap:
        with readers.at(index.dir, snap.generation) as first:
            assert first is not None
            assert first.execute("SELECT symbol FROM chunks").fetchall() == [("alpha",)]
        with readers.at(index.dir, snap.generation) as again:
            assert again is first


def test_no_connection_for_a_generation_the_index_moved_past(root: Path) -> None:
    readers = api._Readers()
    settings = config.load()
    index = Index.open(root, settings)
    with index.snapshot() as old:
        (root / "b.py").write_text("def beta():\n    return 2\n")
        refresh(root, settings, embed=False)
        with readers.at(index.dir, old.generation) as conn:
            assert conn is None
        # the snapshot itself still answers for its generation, without beta
        assert old.conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 1
    with index.snapshot() as new, readers.at(index.dir, new.generation) as conn:
        assert conn is not None
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 2


def test_no_connection_once_the_index_is_gone(root: Path) -> None:
    readers = api._Readers()
    index = Index.open(root, config.load())
    with index.snapshot() as snap, readers.at(index.dir, snap.generation) as conn:
        assert conn is not None
        generation = snap.generation
    shutil.rmtree(index.dir)
    with readers.at(index.dir, generation) as conn:
        assert conn is None
    # built again from scratch: the same generation number, but the connection kept from
    # before reads the deleted file, so a new one is opened
    (root / "b.py").write_text("def beta():\n    return 2\n")
    refresh(root, config.load(), embed=False)
    with index.snapshot() as snap:
        assert snap.generation == generation
        with readers.at(index.dir, snap.generation) as conn:
            assert conn is not None
            assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 2


def test_searches_find_new_chunks_after_a_refresh(root: Path) -> None:
    settings = config.load()
    ref = [ProjectRef("p", root)]
    first = search("alpha", ref, settings=settings, branches=("lexical", "symbol"))
    assert [r["symbol"] for r in first["results"]] == ["alpha"]
    (root / "b.py").write_text("def beta():\n    return 2\n")
    again = search("beta", ref, settings=settings, branches=("lexical", "symbol"))
    assert [r["symbol"] for r in again["results"]] == ["beta"]
