"""Read connections kept between snapshots: each snapshot borrows one pinned at the latest
generation; one goes back to the pool only once its read transaction has ended, never to serve
an index that was removed (and maybe rebuilt), and never to two snapshots at once."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from pathlib import Path

import pytest
from kenning import config, store
from kenning.errors import IndexMissing
from kenning.indexing.indexer import refresh
from kenning.retrieval import ProjectRef
from kenning.services.search import search
from kenning.store import Index


@pytest.fixture
def root(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("def alpha():\n    return 1\n")
    refresh(repo, config.load(), embed=False)
    return repo


def _count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])


def _is_closed(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
    except sqlite3.ProgrammingError:
        return True
    return False


def test_a_connection_serves_later_snapshots_at_the_latest_generation(root: Path) -> None:
    settings = config.load()
    index = Index.open(root, settings)
    with index.snapshot() as first:
        conn, generation = first._conn, first.generation
        assert first._conn.in_transaction and _count(first._conn) == 1
    assert not conn.in_transaction  # the read transaction ended with the snapshot
    (root / "b.py").write_text("def beta():\n    return 2\n")
    refresh(root, settings, embed=False)
    with index.snapshot() as again:
        assert again._conn is conn
        assert again.generation == generation + 1 and _count(again._conn) == 2


def test_an_open_snapshot_keeps_its_connection_and_generation(root: Path) -> None:
    settings = config.load()
    index = Index.open(root, settings)
    with index.snapshot() as old:
        (root / "b.py").write_text("def beta():\n    return 2\n")
        refresh(root, settings, embed=False)
        with index.snapshot() as new:
            assert new._conn is not old._conn
            assert new.generation == old.generation + 1 and _count(new._conn) == 2
        assert _count(old._conn) == 1  # still its own generation, without beta


def test_a_snapshot_closed_twice_lends_its_connection_once(root: Path) -> None:
    index = Index.open(root, config.load())
    snap = index.snapshot()
    snap.close()
    snap.close()
    with index.snapshot() as one, index.snapshot() as two:
        assert one._conn is not two._conn


def test_a_connection_closed_by_its_user_is_not_kept(root: Path) -> None:
    index = Index.open(root, config.load())
    with index.snapshot() as snap:
        snap._conn.close()
    with index.snapshot() as snap:
        assert _count(snap._conn) == 1


def test_idle_connections_are_bounded(root: Path) -> None:
    index = Index.open(root, config.load())
    snaps = [index.snapshot() for _ in range(5)]
    conns = [s._conn for s in snaps]
    for snap in snaps:
        snap.close()
    kept = [c for c in conns if not _is_closed(c)]
    assert len(kept) == store._readers.KEEP  # the rest were closed, not left to pile up


def test_no_connection_survives_the_removal_of_its_index(root: Path) -> None:
    index = Index.open(root, config.load())
    with index.snapshot() as snap:
        old, generation = snap._conn, snap.generation
    shutil.rmtree(index.dir)
    with pytest.raises(IndexMissing):
        index.snapshot()
    assert _is_closed(old)
    # built again from scratch: the same generation number, but the old connection read the
    # deleted file; the new snapshot reads the new one
    (root / "b.py").write_text("def beta():\n    return 2\n")
    refresh(root, config.load(), embed=False)
    with index.snapshot() as snap:
        assert snap.generation == generation and snap._conn is not old
        assert _count(snap._conn) == 2


def test_a_removed_index_is_let_go_as_soon_as_it_is_found_missing(root: Path) -> None:
    index = Index.open(root, config.load())
    with index.snapshot() as snap:
        old = snap._conn
    shutil.rmtree(index.dir)
    with pytest.raises(IndexMissing):
        Index.open(root, config.load())  # what every command does first
    assert _is_closed(old)


def test_a_closed_snapshot_cannot_read_through_a_lent_connection(root: Path) -> None:
    index = Index.open(root, config.load())
    with index.snapshot() as snap:
        pass
    with index.snapshot() as other:  # borrows the connection `snap` had
        assert snap._conn is not other._conn
        with pytest.raises(sqlite3.ProgrammingError):
            snap._conn.execute("SELECT 1")


def test_only_the_indexes_read_last_keep_connections(tmp_path: Path, root: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store._readers, "INDEXES", 1)
    other = tmp_path / "other"
    other.mkdir()
    (other / "b.py").write_text("def beta():\n    return 2\n")
    refresh(other, config.load(), embed=False)
    with Index.open(root, config.load()).snapshot() as snap:
        first = snap._conn
    with Index.open(other, config.load()).snapshot() as snap:
        assert _count(snap._conn) == 1
    assert _is_closed(first)


def test_a_rebuilt_index_never_gets_a_connection_to_the_old_file(root: Path) -> None:
    index = Index.open(root, config.load())
    with index.snapshot() as snap:
        old = snap._conn
    shutil.rmtree(index.dir)  # no snapshot in between: the pool still holds the old connection
    (root / "b.py").write_text("def beta():\n    return 2\n")
    refresh(root, config.load(), embed=False)
    with index.snapshot() as snap:
        assert snap._conn is not old and _count(snap._conn) == 2
    assert _is_closed(old)


def test_threads_never_share_a_connection(root: Path) -> None:
    index = Index.open(root, config.load())
    in_use: set[int] = set()
    lock = threading.Lock()
    failures: list[str] = []

    def work() -> None:
        for _ in range(200):
            with index.snapshot() as snap:
                with lock:
                    if id(snap._conn) in in_use:
                        failures.append("a connection lent to two snapshots at once")
                    in_use.add(id(snap._conn))
                if _count(snap._conn) != 1:
                    failures.append("a wrong count")
                with lock:
                    in_use.discard(id(snap._conn))

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_searches_find_new_chunks_after_a_refresh(root: Path) -> None:
    settings = config.load()
    ref = [ProjectRef("p", root)]
    first = search("alpha", ref, settings=settings, branches=("lexical", "symbol"))
    assert [r["symbol"] for r in first["results"]] == ["alpha"]
    (root / "b.py").write_text("def beta():\n    return 2\n")
    again = search("beta", ref, settings=settings, branches=("lexical", "symbol"))
    assert [r["symbol"] for r in again["results"]] == ["beta"]
