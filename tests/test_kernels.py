"""The kernels on both backends: exact results, filters, edge sizes, and identical errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from kenning import kernels
from kenning.kernels import Kernels, _checks

BACKENDS = kernels.available_backends()
# BLAKE3("abc") from the reference test vectors, truncated to 16 bytes
BLAKE3_ABC = bytes.fromhex("6437b3ac38465133ffb63b75273a8db5")


@pytest.fixture(params=BACKENDS)
def k(request: pytest.FixtureRequest) -> Kernels:
    return kernels.for_backend(request.param)


def brute_topk(
    queries: np.ndarray, db: np.ndarray, k: int, allowed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Sorting every distance by (distance, row): the definition the kernels must meet."""
    rows = np.arange(db.shape[0]) if allowed is None else np.flatnonzero(allowed)
    bits = np.unpackbits(db[rows], axis=1).astype(np.int64)
    ids, dists = [], []
    for query in queries:
        dist = (bits != np.unpackbits(query)).sum(axis=1)
        order = np.lexsort((rows, dist))[:k]
        ids.append(rows[order])
        dists.append(dist[order])
    kk = min(k, rows.shape[0])
    return (np.array(ids, dtype=np.int64).reshape(len(queries), kk),
            np.array(dists, dtype=np.uint32).reshape(len(queries), kk))


def random_bits(rng: np.random.Generator, n: int, width: int) -> np.ndarray:
    return rng.integers(0, 256, size=(n, width), dtype=np.uint8)


def test_backend_is_readable_and_rust_is_preferred() -> None:
    assert kernels.BACKEND in ("rust", "numpy")
    forced = os.environ.get("KENNING_KERNELS")
    if forced:
        assert forced == kernels.BACKEND
    else:
        assert BACKENDS[0] == kernels.BACKEND


@pytest.mark.parametrize("forced", ["numpy", "bogus"])
def test_kenning_kernels_forces_a_backend(forced: str) -> None:
    code = "import kenning.kernels as k; print(k.BACKEND)"
    env = {**os.environ, "KENNING_KERNELS": forced}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if forced == "numpy":
        assert run.stdout.strip() == "numpy"
    else:
        assert run.returncode != 0 and "is not a kernel backend" in run.stderr


# --- binarize


@pytest.mark.parametrize("dims", [1, 7, 8, 9, 63, 64, 65, 384, 2560])
def test_binarize_is_packbits_of_the_sign(k: Kernels, dims: int) -> None:
    rng = np.random.default_rng(dims)
    x = rng.standard_normal((17, dims)).astype(np.float32)
    center = rng.standard_normal(dims).astype(np.float32) * 0.1
    np.testing.assert_array_equal(k.binarize(x), np.packbits(x > 0, axis=1))
    np.testing.assert_array_equal(k.binarize(x, center), np.packbits(x - center > 0, axis=1))
    assert k.binarize(x).dtype == np.uint8


def test_binarize_zero_is_not_positive_and_edge_shapes(k: Kernels) -> None:
    x = np.array([[0.0, -0.0, 1e-45, -1e-45, np.inf, -np.inf]], dtype=np.float32)
    assert k.binarize(x).tolist() == [[0b0010_1000]]
    assert k.binarize(np.empty((0, 10), np.float32)).shape == (0, 2)
    assert k.binarize(np.empty((3, 0), np.float32)).shape == (3, 0)


# --- quantize_int8 and rescore


def test_quantize_round_trips_within_half_a_step(k: Kernels) -> None:
    x = np.random.default_rng(1).standard_normal((50, 384)).astype(np.float32)
    codes, scales = k.quantize_int8(x)
    assert codes.dtype == np.int8 and scales.dtype == np.float32
    assert (np.abs(codes).max(axis=1) == 127).all()
    err = np.abs(codes.astype(np.float32) * scales[:, None] - x)
    assert (err <= scales[:, None] / 2 + 1e-6).all()


def test_quantize_zero_rows_and_ties_to_even(k: Kernels) -> None:
    codes, scales = k.quantize_int8(np.array([[0, 0, 0], [127, 0.5, -1.5]], dtype=np.float32))
    assert scales.tolist() == [0.0, 1.0]
    assert codes.tolist() == [[0, 0, 0], [127, 0, -2]]
    codes, scales = k.quantize_int8(np.empty((0, 4), np.float32))
    assert codes.shape == (0, 4) and scales.shape == (0,)


def test_rescore_recovers_cosine(k: Kernels) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((200, 384)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    codes, scales = k.quantize_int8(x)
    scores = k.rescore(x[0], codes, scales)
    assert scores.dtype == np.float32 and scores.shape == (200,)
    np.testing.assert_allclose(scores, x @ x[0], atol=0.02)
    assert int(np.argmax(scores)) == 0


# --- hamming_topk


@pytest.mark.parametrize("width", [1, 5, 8, 48, 50, 320])
@pytest.mark.parametrize("nq", [1, 3, 9, 16, 17, 64])
def test_topk_is_exact(k: Kernels, width: int, nq: int) -> None:
    rng = np.random.default_rng(width * 100 + nq)
    db = random_bits(rng, 500, width)
    queries = random_bits(rng, nq, width)
    ids, dists = k.hamming_topk(queries, db, 20)
    want_ids, want_dists = brute_topk(queries, db, 20)
    assert ids.dtype == np.int64 and dists.dtype == np.uint32
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(dists, want_dists)


def test_topk_breaks_ties_by_lower_row(k: Kernels) -> None:
    db = np.zeros((100, 8), dtype=np.uint8)
    db[::3, 0] = 1  # rows 0, 3, 6, ... at distance 1 from a zero query; the rest at 0
    ids, dists = k.hamming_topk(np.zeros((1, 8), np.uint8), db, 70)
    zeros = [i for i in range(100) if i % 3]
    assert ids[0].tolist() == zeros + [0, 3, 6, 9]
    assert dists[0].tolist() == [0] * 66 + [1] * 4


def test_filtered_search_still_returns_k_hits(k: Kernels) -> None:
    rng = np.random.default_rng(3)
    db = random_bits(rng, 2000, 40)
    queries = db[[5, 17]].copy()
    mask = np.zeros(2000, dtype=bool)
    mask[1000:] = True
    ids, _ = k.hamming_topk(queries, db, 10, allowed=mask)
    assert ids.shape == (2, 10) and (ids >= 1000).all()
    np.testing.assert_array_equal(ids, brute_topk(queries, db, 10, mask)[0])
    row_ids = np.array([1999, 5, 400, 5, 17], dtype=np.int32)  # unsorted, duplicated
    ids, dists = k.hamming_topk(queries, db, 10, allowed=row_ids)
    assert ids.shape == (2, 4)
    as_mask = np.isin(np.arange(2000), row_ids)
    np.testing.assert_array_equal(ids, brute_topk(queries, db, 10, as_mask)[0])
    assert ids[0, 0] == 5 and ids[1, 0] == 17 and dists[0, 0] == 0
    assert sorted(ids[0].tolist()) == [5, 17, 400, 1999]


def test_sorted_row_ids_in_a_strided_view_filter_like_their_mask(k: Kernels) -> None:
    rng = np.random.default_rng(9)
    db = random_bits(rng, 300, 16)
    row_ids = np.arange(300, dtype=np.int64)[::3]  # sorted and unique, not contiguous
    ids, dists = k.hamming_topk(db[:2], db, 7, allowed=row_ids)
    want = brute_topk(db[:2], db, 7, np.isin(np.arange(300), row_ids))
    np.testing.assert_array_equal(ids, want[0])
    np.testing.assert_array_equal(dists, want[1])


def test_a_mask_whose_bytes_are_not_0_or_1_filters_like_a_clean_one(k: Kernels) -> None:
    db = random_bits(np.random.default_rng(10), 40, 16)
    raw = np.random.default_rng(11).choice(np.array([0, 1, 2, 255], np.uint8), 40)
    ids, dists = k.hamming_topk(db[:3], db, 6, allowed=np.frombuffer(raw.tobytes(), dtype=bool))
    want = brute_topk(db[:3], db, 6, raw != 0)
    np.testing.assert_array_equal(ids, want[0])
    np.testing.assert_array_equal(dists, want[1])


def test_a_mask_handed_to_the_kernels_holds_only_0_and_1() -> None:
    # Rust reads the mask as bool, whose only valid bytes are 0 and 1
    db = random_bits(np.random.default_rng(12), 4, 8)
    odd = np.frombuffer(bytes([0, 1, 2, 255]), dtype=bool)
    *_, mask, ids = _checks.topk_args(db[:1], db, 2, odd)
    assert mask is not None and ids is None and mask.view(np.uint8).tolist() == [0, 1, 1, 1]


def test_a_mask_and_row_ids_together_are_refused(k: Kernels) -> None:
    # the backends take the two filters as separate arguments; the checks never pass both
    db = random_bits(np.random.default_rng(8), 6, 8)
    mask, ids = np.ones(6, dtype=bool), np.arange(3, dtype=np.int64)
    with pytest.raises(ValueError, match="takes a mask or row ids, not both"):
        k._impl["hamming_topk"](db[:1], db, 2, mask, ids)


@pytest.mark.parametrize("allowed", [np.zeros(50, dtype=bool), np.array([], dtype=np.int64)])
def test_everything_filtered_out_gives_empty_hits(k: Kernels, allowed: np.ndarray) -> None:
    db = random_bits(np.random.default_rng(4), 50, 16)
    ids, dists = k.hamming_topk(db[:3], db, 5, allowed=allowed)
    assert ids.shape == (3, 0) and dists.shape == (3, 0)


def test_k_zero_k_past_n_zero_rows_and_zero_queries(k: Kernels) -> None:
    db = random_bits(np.random.default_rng(5), 7, 16)
    assert k.hamming_topk(db[:2], db, 0)[0].shape == (2, 0)
    ids, _ = k.hamming_topk(db[:2], db, 100)
    assert ids.shape == (2, 7) and ids[0, 0] == 0
    assert k.hamming_topk(db[:2], db[:0], 5)[0].shape == (2, 0)
    assert k.hamming_topk(db[:0], db, 5)[0].shape == (0, 5)


def test_memmapped_readonly_db(k: Kernels, tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    db = random_bits(rng, 3000, 48)
    db.tofile(tmp_path / "bits")
    mapped = np.memmap(tmp_path / "bits", dtype=np.uint8, mode="r", shape=db.shape)
    ids, dists = k.hamming_topk(db[:4], mapped, 8)
    np.testing.assert_array_equal(ids, brute_topk(db[:4], db, 8)[0])
    del mapped


@pytest.mark.skipif("rust" not in BACKENDS, reason="the Rust core is not built")
def test_every_simd_kernel_and_thread_count_agree() -> None:
    from kenning import _core

    rng = np.random.default_rng(7)
    for width in [48, 320, 130]:
        db = random_bits(rng, 5000, width)
        queries = random_bits(rng, 19, width)  # a pass of 16 queries, then 3 more
        want = brute_topk(queries, db, 25)
        for name in _core.kernels():
            for threads in (1, 2, 5):
                ids, dists = _core.hamming_topk(queries, db, 25, threads=threads, kernel=name)
                np.testing.assert_array_equal(ids, want[0], err_msg=f"{name} x{threads}")
                np.testing.assert_array_equal(dists, want[1])


# --- hashing and diff


def test_hash_many_is_truncated_blake3(k: Kernels) -> None:
    assert k.hash_many([b"abc", "abc", b""]) == [
        BLAKE3_ABC, BLAKE3_ABC, bytes.fromhex("af1349b9f5f9a1a6a0404dea36dcc949")]
    assert k.hash_many([]) == []
    assert k.hash_many(iter(["é"])) == k.hash_many(["é".encode()])


def test_hash_files_reads_only_regular_files_inside_the_root(k: Kernels, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    content = np.random.default_rng(8).integers(0, 256, 300_000, dtype=np.uint8).tobytes()
    big.write_bytes(content)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "abc").write_bytes(b"abc")
    (tmp_path / "link").symlink_to(big)
    (tmp_path / "dirlink").symlink_to(tmp_path / "sub")
    os.mkfifo(tmp_path / "fifo")
    rels = ["big.bin", "sub/abc", "missing", "sub", "link", "dirlink/abc", "fifo", "../big.bin"]
    got = k.hash_files(tmp_path, rels, 1 << 20)
    assert got == [k.hash_many([content])[0], BLAKE3_ABC, None, None, None, None, None, None]
    assert k.hash_files(str(tmp_path), ["big.bin"], 1000) == [None]


def test_diff_sorts_keys_in_manifest_order(k: Kernels) -> None:
    old = {"a": b"1", "b": b"2", "c": b"3", "gone": b"4"}
    new = {"new": b"5", "c": b"3", "b": b"x", "a": b"1"}
    assert k.diff(old, new) == (["c", "a"], ["b"], ["new"], ["gone"])
    assert k.diff({}, {}) == ([], [], [], [])


# --- identical errors on bad input

F32 = np.ones((4, 16), np.float32)
U8 = np.ones((4, 8), np.uint8)
BAD_INPUTS = [
    ("binarize", (F32.astype(np.float64),), TypeError, "x must have dtype float32, got float64"),
    ("binarize", (F32[0],), ValueError, "x must be 2-dimensional, got 1 dimensions"),
    ("binarize", (F32[:, ::2],), ValueError, "x must be C-contiguous"),
    ("binarize", (F32.tolist(),), TypeError, "x must be a numpy array of float32, got list"),
    ("binarize", (np.full((2, 3), np.nan, np.float32),), ValueError,
     "binarize input contains NaN"),
    ("binarize", (F32, np.full(16, np.nan, np.float32)), ValueError,
     "binarize center contains NaN"),
    ("binarize", (F32, np.ones(15, np.float32)), ValueError, "center has 15 dims but x has 16"),
    ("quantize_int8", (np.array([[1, np.inf]], np.float32),), ValueError,
     "quantize_int8 input contains NaN or infinity"),
    ("rescore", (F32[0], U8.astype(np.int8), np.ones(4, np.float32)), ValueError,
     "rows have 8 dims but the query has 16"),
    ("rescore", (F32[0, :8], U8.astype(np.int8), np.ones(3, np.float32)), ValueError,
     "scales has 3 entries but there are 4 rows"),
    ("hamming_topk", (U8, U8, -1), ValueError, "k must be >= 0, got -1"),
    ("hamming_topk", (U8, U8, 2.0), TypeError, "k must be an int, got float"),
    ("hamming_topk", (U8.astype(np.int8), U8, 2), TypeError,
     "queries must have dtype uint8, got int8"),
    ("hamming_topk", (np.ones((2, 4), np.uint8), U8, 2), ValueError,
     "queries have 4 bytes per row but db has 8"),
    ("hamming_topk", (U8, U8[0], 2), ValueError, "db must be 2-dimensional"),
    ("hamming_topk", (U8, np.ones((8, 4), np.uint8).T, 2), ValueError,
     "db must be C-contiguous"),
    ("hamming_topk", (U8, U8, 2, np.ones(3, bool)), ValueError,
     "allowed mask has 3 entries but db has 4 rows"),
    ("hamming_topk", (U8, U8, 2, np.array([4])), ValueError,
     "allowed row id 4 is out of range for 4 rows"),
    ("hamming_topk", (U8, U8, 2, np.array([-1])), ValueError,
     "allowed row id -1 is out of range for 4 rows"),
    ("hamming_topk", (U8, U8, 2, np.array([0.5])), TypeError,
     "allowed must be a bool mask or integer row ids, got float64"),
    ("hamming_topk", (U8, U8, 2, [0, 1]), TypeError, "allowed must be a numpy array"),
    ("hash_many", ([b"a", 3],), TypeError,
     "hash_many items must be bytes or str, got int at index 1"),
    ("hash_many", (b"abc",), TypeError, "hash_many takes a sequence of bytes or str"),
    ("hash_files", (".", "path", 1), TypeError, "hash_files takes a sequence of paths"),
    ("hash_files", (".", ["a", 3], 1), TypeError,
     "hash_files paths must be str, got int at index 1"),
    ("diff", ({1: b"x"}, {}), TypeError, "diff keys must be str, got int"),
    ("diff", ({}, {"a": "x"}), TypeError, "diff digests must be bytes, got str"),
    ("diff", ([], {}), TypeError, "diff old must be a mapping of key -> digest, got list"),
]


@pytest.mark.parametrize(("name", "args", "error", "message"), BAD_INPUTS,
                         ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD_INPUTS)])
def test_bad_input_raises_the_same_error_on_every_backend(
    name: str, args: tuple, error: type[Exception], message: str
) -> None:
    seen = set()
    for backend in BACKENDS:
        with pytest.raises(error, match=None) as info:
            getattr(kernels.for_backend(backend), name)(*args)
        assert message in str(info.value), f"{backend}: {info.value}"
        seen.add(str(info.value))
    assert len(seen) == 1, seen
