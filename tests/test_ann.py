"""The usearch HNSW path: incremental sync, atomic saves, memory-mapped views, filters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from kenning import kernels
from kenning.errors import IndexMissing
from kenning.store import ann
from kenning.store.ann import AnnIndex

DIMS = 384


@pytest.fixture(scope="module")
def bits() -> np.ndarray:
    """Sign bits of clustered vectors: structured like embeddings, unlike uniform noise."""
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((40, DIMS)).astype(np.float32)
    x = centers[rng.integers(0, 40, 4000)] + 0.9 * rng.standard_normal((4000, DIMS))
    return kernels.binarize(x.astype(np.float32))


def recall(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.mean([len(set(g) & set(w)) / len(w) for g, w in zip(got, want, strict=True)]))


def test_sync_adds_only_new_rows_and_persists(tmp_path: Path, bits: np.ndarray) -> None:
    path = tmp_path / "vectors.usearch"
    index = AnnIndex(path, DIMS)
    assert index.sync(bits, 2500) == 2500
    assert index.sync(bits) == 1500
    assert index.sync(bits) == 0
    assert len(AnnIndex(path, DIMS).view()) == 4000
    assert AnnIndex(path, DIMS).sync(bits) == 0  # a fresh handle sees what was saved
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vectors.usearch"]


def test_view_finds_the_exact_neighbours_with_high_recall(tmp_path: Path, bits: np.ndarray) -> None:
    AnnIndex(tmp_path / "v.usearch", DIMS).sync(bits)
    view = AnnIndex(tmp_path / "v.usearch", DIMS).view()
    queries = np.ascontiguousarray(bits[::200])
    ids, dists = view.search(queries, 20)
    want_ids, want_dists = kernels.hamming_topk(queries, bits, 20)
    assert ids.shape == (20, 20) and ids.dtype == np.int64 and dists.dtype == np.uint32
    # HNSW is approximate and its graph depends on the order threads add rows: a query's own
    # row comes first for nearly every query, not provably for all
    itself = ids[:, 0] == np.arange(0, 4000, 200)
    assert itself.mean() >= 0.9 and (dists[itself, 0] == 0).all()
    assert (np.diff(dists.astype(np.int64), axis=1) >= 0).all()
    assert recall(ids, want_ids) >= 0.9
    # one query alone is answered as a batch of one (the same k: a graph search's breadth
    # grows with k, so the fifth of 20 neighbours need not be the fifth of 5)
    single_ids, single_dists = view.search(bits[0], 5)
    batch_ids, batch_dists = view.search(bits[:1], 5)
    assert single_ids.shape == (1, 5) and (single_ids == batch_ids).all()
    assert (single_dists == batch_dists).all() and single_dists[0, 0] == 0


@pytest.mark.parametrize("broad_path", [False, True])
def test_filters_return_only_allowed_rows_and_k_of_them(
    tmp_path: Path, bits: np.ndarray, monkeypatch: pytest.MonkeyPatch, broad_path: bool
) -> None:
    if broad_path:  # force the deeper-search path instead of the exact scan of allowed rows
        monkeypatch.setattr(ann, "EXACT_FILTER_ROWS", 0)
    index = AnnIndex(tmp_path / "v.usearch", DIMS)
    index.sync(bits)
    mask = np.zeros(len(bits), dtype=bool)
    mask[3::7] = True
    ids, _ = index.search(bits[:4], 15, allowed=mask)
    assert ids.shape == (4, 15) and mask[ids].all()
    few = np.array([10, 3999, 7, 10])
    ids, dists = index.search(bits[7:8], 10, allowed=few)
    assert ids.tolist() == [[7, 10, 3999]] or sorted(ids[0].tolist()) == [7, 10, 3999]
    assert ids[0, 0] == 7 and dists[0, 0] == 0
    ids, _ = index.search(bits[:2], 5, allowed=np.zeros(len(bits), dtype=bool))
    assert ids.shape == (2, 0)


def test_small_filters_are_answered_exactly(tmp_path: Path, bits: np.ndarray) -> None:
    index = AnnIndex(tmp_path / "v.usearch", DIMS)
    index.sync(bits)
    allowed = np.arange(0, 4000, 3)
    got = index.search(bits[:5], 12, allowed=allowed)
    want = kernels.hamming_topk(bits[:5], bits, 12, allowed=allowed)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_an_index_longer_than_the_vector_file_is_rebuilt(tmp_path: Path, bits: np.ndarray) -> None:
    index = AnnIndex(tmp_path / "v.usearch", DIMS)
    index.sync(bits)
    assert AnnIndex(tmp_path / "v.usearch", DIMS).sync(bits[:100]) == 100
    assert len(AnnIndex(tmp_path / "v.usearch", DIMS).view()) == 100


def test_readers_keep_their_snapshot_while_a_writer_saves(tmp_path: Path, bits: np.ndarray) -> None:
    path = tmp_path / "v.usearch"
    AnnIndex(path, DIMS).sync(bits, 1000)
    reader = AnnIndex(path, DIMS).view()
    AnnIndex(path, DIMS).sync(bits)
    assert len(reader) == 1000 and reader.search(bits[5], 1)[0][0, 0] == 5
    assert len(AnnIndex(path, DIMS).view()) == 4000


def test_k_edges(tmp_path: Path, bits: np.ndarray) -> None:
    index = AnnIndex(tmp_path / "v.usearch", DIMS)
    index.sync(bits[:30])
    assert index.search(bits[:2], 0)[0].shape == (2, 0)
    ids, _ = index.search(bits[:2], 100)
    assert ids.shape == (2, 30) and sorted(ids[0].tolist()) == list(range(30))


def test_bad_input(tmp_path: Path, bits: np.ndarray) -> None:
    with pytest.raises(IndexMissing, match="no approximate index"):
        AnnIndex(tmp_path / "missing.usearch", DIMS).search(bits[:1], 5)
    index = AnnIndex(tmp_path / "v.usearch", DIMS)
    with pytest.raises(ValueError, match="bits have 8 bytes per row but the index needs 48"):
        index.sync(bits[:, :8].copy())
    with pytest.raises(ValueError, match="rows must be between 0 and 4000"):
        index.sync(bits, 5000)
    index.sync(bits[:50])
    with pytest.raises(ValueError, match="holds 384-bit vectors, not 256-bit"):
        AnnIndex(tmp_path / "v.usearch", 256).view()
    with pytest.raises(ValueError, match="k must be >= 0"):
        index.search(bits[:1], -1)
    with pytest.raises(ValueError, match="allowed row id 50 is out of range for 50 rows"):
        index.search(bits[:1], 5, allowed=np.array([50]))
    with pytest.raises(TypeError, match="query_bits must have dtype uint8"):
        index.search(bits[:1].astype(np.int8), 5)


def test_onnxruntime_still_imports_after_the_graph_is_used(tmp_path: Path) -> None:
    # usearch loaded before onnxruntime makes onnxruntime's import crash the process.
    script = (
        "import numpy as np\n"
        "from kenning.store.ann import AnnIndex\n"
        f"AnnIndex({str(tmp_path / 'g.usearch')!r}, 64)._new()\n"
        "import onnxruntime\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
