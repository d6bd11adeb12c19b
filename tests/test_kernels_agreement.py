"""Property tests: the Rust core and the NumPy twin agree on random inputs and edge sizes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from kenning import kernels

pytestmark = pytest.mark.skipif(
    "rust" not in kernels.available_backends(), reason="the Rust core is not built"
)
RUST, TWIN = kernels.for_backend("rust"), kernels.for_backend("numpy")
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

floats = st.floats(-4, 4, width=32, allow_nan=False)


@st.composite
def float_rows(draw: st.DrawFn) -> np.ndarray:
    n, d = draw(st.integers(0, 12)), draw(st.integers(0, 70))
    return draw(hnp.arrays(np.float32, (n, d), elements=floats))


@st.composite
def search_case(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, np.ndarray | None]:
    width = draw(st.sampled_from([1, 3, 8, 13, 48, 64, 70, 320]))
    n = draw(st.integers(0, 300))
    nq = draw(st.sampled_from([0, 1, 2, 9, 16, 17, 64]))
    # few distinct byte values make many ties
    values = st.sampled_from([0, 1, 3, 255]) if draw(st.booleans()) else st.integers(0, 255)
    db = draw(hnp.arrays(np.uint8, (n, width), elements=values))
    queries = draw(hnp.arrays(np.uint8, (nq, width), elements=values))
    k = draw(st.integers(0, n + 5))
    kind = draw(st.sampled_from(["none", "mask", "ids"]))
    allowed: np.ndarray | None = None
    if kind == "mask":
        allowed = draw(hnp.arrays(np.bool_, n))
    elif kind == "ids" and n:
        allowed = np.array(draw(st.lists(st.integers(0, n - 1), max_size=40)), dtype=np.int64)
    return queries, db, k, allowed


@FAST
@given(float_rows(), st.booleans())
def test_binarize_agrees(x: np.ndarray, centered: bool) -> None:
    center = x.mean(axis=0).astype(np.float32) if centered and x.shape[0] else None
    if center is not None and center.shape[0] == 0:
        center = None
    np.testing.assert_array_equal(RUST.binarize(x, center), TWIN.binarize(x, center))


@FAST
@given(float_rows())
def test_quantize_agrees_bit_for_bit(x: np.ndarray) -> None:
    (codes, scales), (codes2, scales2) = RUST.quantize_int8(x), TWIN.quantize_int8(x)
    np.testing.assert_array_equal(codes, codes2)
    np.testing.assert_array_equal(scales, scales2)
    if x.shape[0] and x.shape[1]:
        np.testing.assert_allclose(RUST.rescore(x[0], codes, scales),
                                   TWIN.rescore(x[0], codes, scales), rtol=1e-4, atol=1e-3)


@FAST
@given(search_case())
def test_hamming_topk_agrees(case: tuple[np.ndarray, np.ndarray, int, np.ndarray | None]) -> None:
    queries, db, k, allowed = case
    ids, dists = RUST.hamming_topk(queries, db, k, allowed)
    ids2, dists2 = TWIN.hamming_topk(queries, db, k, allowed)
    np.testing.assert_array_equal(ids, ids2)
    np.testing.assert_array_equal(dists, dists2)
    assert ids.dtype == ids2.dtype == np.int64 and dists.dtype == dists2.dtype == np.uint32


@FAST
@given(st.lists(st.one_of(st.binary(max_size=3000), st.text(max_size=200)), max_size=30))
def test_hash_many_agrees(items: list[bytes | str]) -> None:
    assert RUST.hash_many(items) == TWIN.hash_many(items)


manifests = st.dictionaries(st.text(max_size=4), st.binary(min_size=1, max_size=2), max_size=30)


@FAST
@given(manifests, manifests)
def test_diff_agrees_and_partitions_the_keys(old: dict[str, bytes], new: dict[str, bytes]) -> None:
    unchanged, changed, added, removed = RUST.diff(old, new)
    assert (unchanged, changed, added, removed) == TWIN.diff(old, new)
    assert sorted(unchanged + changed + added) == sorted(new)
    assert sorted(removed) == sorted(set(old) - set(new))
