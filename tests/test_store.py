"""The store: consistent read snapshots beside a writer, committed rows only, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from index_helpers import check_consistent, git
from kenning.errors import IndexMissing
from kenning.indexing.indexer import refresh
from kenning.store import Index, make_descriptor
from kenning.store.vectors import BITS, INT8, SCALE

pytest_plugins = ["index_helpers"]  # fixtures: model, settings, repo


def test_missing_index_is_a_clear_error(repo, settings, model):
    with pytest.raises(IndexMissing) as err:
        Index.open(repo, settings, embedder=model)
    assert "kenning index" in (err.value.hint or "")


def test_descriptor_decides_the_folder(repo, settings, model):
    index = Index.open(repo, settings, embedder=model, create=True)
    descriptor = make_descriptor(model)
    assert descriptor["precision"] == "b1+int8" and descriptor["dims"] == 384
    assert index.descriptor == descriptor and index.project_id in str(index.dir)
    with index.snapshot() as snap:  # created but never refreshed: an empty, readable view
        assert (snap.generation, snap.vector_rows, snap.bits.shape) == (0, 0, (0, 48))


def test_a_chunker_change_is_another_index(repo, settings, model, monkeypatch):
    """Chunks cut by another chunker version never mix with these: that version finds no index
    here and builds its own."""
    from kenning import chunking

    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    assert index.descriptor["chunker_version"] == chunking.CHUNKER_VERSION
    monkeypatch.setattr(chunking, "CHUNKER_VERSION", chunking.CHUNKER_VERSION + 1)
    with pytest.raises(IndexMissing):
        Index.open(repo, settings, embedder=model)
    assert refresh(repo, settings, embedder=model).files_added > 0  # indexed anew, beside it
    assert Index.open(repo, settings, embedder=model).dir != index.dir


def test_a_reader_keeps_its_snapshot_while_the_writer_commits(repo, settings, model):
    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    old = index.snapshot()
    old_chunks = old.file_chunks(list(old.file_states()))
    old_bits = np.array(old.bits)
    (repo / "app" / "db.py").unlink()
    (repo / "new.py").write_text("def brand_new_function():\n    return 'fresh'\n")
    result = refresh(repo, settings, embedder=model)  # never blocked by the open reader
    assert result.generation == 2 and result.vectors_embedded >= 1
    try:
        assert old.generation == 1
        assert old.file_chunks(list(old.file_states())) == old_chunks
        assert old._conn.execute("SELECT max(generation) FROM snapshots").fetchone()[0] == 1
        assert np.array_equal(np.array(old.bits), old_bits)
    finally:
        old.close()
    with index.snapshot() as new:
        assert new.generation == 2 and new.vector_rows > len(old_bits)
        paths = set(new.file_chunks(list(new.file_states())))
        assert "new.py" in paths and "app/db.py" not in paths
        with pytest.raises(Exception, match="readonly|read-only"):
            new._conn.execute("DELETE FROM chunks")


def test_uncommitted_tail_is_never_read_and_is_cut_by_the_next_writer(repo, settings, model):
    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    rows = check_consistent(index)["rows"]
    for name in (BITS, INT8, SCALE):  # what a crash between write and commit leaves behind
        with (index.dir / name).open("ab") as fh:
            fh.write(b"\xff" * 1000)
    with index.snapshot() as snap:
        assert snap.vector_rows == rows and snap.int8.shape == (rows, 384)
    with index.writer():
        pass
    assert (index.dir / INT8).stat().st_size == rows * 384
    assert (index.dir / BITS).stat().st_size == rows * 48
    assert (index.dir / SCALE).stat().st_size == rows * 4


def _vectors_by_hash(snap) -> dict[bytes, bytes]:
    rows = snap.vectors_of_hashes(None)
    return {h: snap.int8[i].tobytes() + snap.bits[i].tobytes() for h, i in rows.items()}


def test_unused_vectors_are_reclaimed_without_disturbing_readers(repo, settings, model,
                                                                  monkeypatch):
    from kenning.indexing import indexer

    monkeypatch.setattr(indexer, "COMPACT_MIN_DEAD", 0)
    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    old = index.snapshot()
    before = _vectors_by_hash(old)
    for path in ("app/server.py", "app/db.py", "lib/util.js", "docs/guide.md"):
        (repo / path).unlink()  # most chunks go: their vectors are now unused
    result = refresh(repo, settings, embedder=model)
    try:
        assert result.vectors_dropped > 0 and result.vectors_embedded == 0
        assert _vectors_by_hash(old) == before  # the open reader still sees its rows
    finally:
        old.close()
    state = check_consistent(index)
    assert state["rows"] <= state["chunks"] and state["status"] == "complete"
    with index.snapshot() as snap:
        after = _vectors_by_hash(snap)
    assert after and all(before[h] == v for h, v in after.items())  # same rows, new ids
    assert not (index.dir / INT8).exists()  # epoch 0's files are gone
    assert (index.dir / "vectors.1.int8").stat().st_size == state["rows"] * 384


def test_small_garbage_is_kept_so_switching_back_is_free(repo, settings, model):
    refresh(repo, settings, embedder=model)
    (repo / "lib" / "util.js").unlink()
    assert refresh(repo, settings, embedder=model).vectors_dropped == 0
    git(repo, "checkout", "--", "lib/util.js")
    assert refresh(repo, settings, embedder=model).vectors_embedded == 0


def test_a_compaction_cut_short_before_its_commit_is_discarded(repo, settings, model):
    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    before = check_consistent(index)
    for name in ("vectors.1.bits", "vectors.1.int8", "vectors.1.scale"):
        (index.dir / name).write_bytes(b"\0" * 100)  # written, never committed
    with index.snapshot() as snap:
        assert snap.vector_rows == before["rows"]  # readers use the committed epoch
    with index.writer():
        pass
    assert not list(index.dir.glob("vectors.1.*")) and check_consistent(index) == before
