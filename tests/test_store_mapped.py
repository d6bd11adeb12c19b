"""The vector files' maps kept between snapshots: reused only while the committed rows and the
files stay the same, so a snapshot always sees exactly the rows on disk it commits to."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from index_helpers import make_repo
from kenning.errors import IndexError_
from kenning.indexing.indexer import refresh
from kenning.store import Index, vectors
from kenning.store.vectors import INT8

pytest_plugins = ["index_helpers"]  # fixtures: model, settings

SOURCE = {f"m{i}.py": f"def keep_{i}(items):\n    return [x for x in items if x > {i}]\n"
          for i in range(3)}
RENAMED = {f"m{i}.py": f"def parse_{i}(text):\n    return text.split(',')[{i}]\n"
           for i in range(3)}


def _on_disk(index: Index, rows: int) -> np.ndarray:
    """The int8 rows in the index's file of vector epoch 0, read without any map."""
    dims = int(index.descriptor["dims"])
    return np.fromfile(index.dir / INT8, dtype=np.int8)[: rows * dims].reshape(rows, dims)


def test_snapshots_share_the_maps_of_unchanged_files(tmp_path, settings, model):
    root = make_repo(tmp_path / "repo", SOURCE)
    refresh(root, settings, embedder=model)
    index = Index.open(root, settings, embedder=model)
    with index.snapshot() as one, index.snapshot() as two:
        assert one.int8 is two.int8 and one.bits is two.bits
        assert not one.int8.flags.writeable


def test_new_rows_are_mapped_and_old_snapshots_keep_theirs(tmp_path, settings, model):
    root = make_repo(tmp_path / "repo", SOURCE)
    refresh(root, settings, embedder=model)
    index = Index.open(root, settings, embedder=model)
    with index.snapshot() as old:
        (root / "new.py").write_text("def brand_new(x):\n    return x * 2\n")
        refresh(root, settings, embedder=model)
        with index.snapshot() as new:
            assert new.vector_rows > old.vector_rows == len(old.int8)
            assert np.array_equal(new.int8, _on_disk(index, new.vector_rows))


@pytest.mark.parametrize("reading", [False, True], ids=["closed", "still-reading"])
def test_a_rebuilt_index_maps_its_new_files(tmp_path, settings, model, reading):
    root = make_repo(tmp_path / "repo", SOURCE)
    refresh(root, settings, embedder=model)
    index = Index.open(root, settings, embedder=model)
    old = index.snapshot()
    before = np.array(old.int8)
    if not reading:
        old.close()
    shutil.rmtree(index.dir)
    for path, text in RENAMED.items():  # as many chunks, other vectors
        (root / path).write_text(text)
    refresh(root, settings, embedder=model)
    with index.snapshot() as snap:
        assert snap.vector_rows == len(before)  # the same count: only the files tell them apart
        assert np.array_equal(snap.int8, _on_disk(index, snap.vector_rows))
        assert not np.array_equal(snap.int8, before)
    assert np.array_equal(old.int8, before)  # a reader of the removed index keeps its view
    old.close()


@pytest.fixture
def replacing(tmp_path, settings, model, monkeypatch):
    """An index whose ``read_rows`` first replaces the int8 file with a copy of itself (a new
    file, as a compaction or rebuild makes), the first ``times`` times it is called; the calls
    are counted."""
    root = make_repo(tmp_path / "repo", SOURCE)
    refresh(root, settings, embedder=model)
    index = Index.open(root, settings, embedder=model)
    read_rows = vectors.read_rows
    calls: list[int] = []

    def setup(times: int) -> tuple[Index, list[int]]:
        def replace_then_read(*args, **kwargs):
            calls.append(1)
            if len(calls) <= times:
                path = index.dir / INT8
                shutil.copyfile(path, path.with_suffix(".copy"))
                os.replace(path.with_suffix(".copy"), path)
            return read_rows(*args, **kwargs)

        monkeypatch.setattr(vectors, "read_rows", replace_then_read)
        return index, calls

    return setup


def test_files_replaced_while_mapping_are_mapped_again(replacing):
    index, calls = replacing(times=1)
    with index.snapshot() as snap:
        assert len(calls) == 2  # the first map was of files replaced meanwhile: not used
        assert np.array_equal(snap.int8, _on_disk(index, snap.vector_rows))


def test_files_that_keep_changing_give_a_clear_error(replacing):
    index, _ = replacing(times=10)
    with pytest.raises(IndexError_, match="keep changing"):
        index.snapshot()
