"""pytest-benchmark over backend x size for every kernel (not part of the default test run).

    python -m pytest benchmarks/test_kernels_bench.py --benchmark-group-by=group

Each benchmark checks its result; throughput is in ``extra_info``. Ratios between backends
come from one run of ``benchmarks/kernels_vs_peers.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from kenning import kernels

BACKENDS = kernels.available_backends()
RNG = np.random.default_rng(0)


@pytest.fixture(params=BACKENDS)
def k(request: pytest.FixtureRequest) -> kernels.Kernels:
    return kernels.for_backend(request.param)


@pytest.fixture(scope="module", params=[10_000, 100_000, 1_000_000], ids=lambda n: f"{n}rows")
def db_rows(request: pytest.FixtureRequest) -> int:
    return int(request.param)


def throughput(benchmark: Any, name: str, amount: float) -> None:
    """Records ``amount / median seconds`` (absent when run with --benchmark-disable)."""
    if benchmark.stats is not None:
        benchmark.extra_info[name] = amount / benchmark.stats.stats.median


_DBS: dict[tuple[int, int], np.ndarray] = {}


def database(n: int, bits: int) -> np.ndarray:
    if (n, bits) not in _DBS:
        _DBS[(n, bits)] = RNG.integers(0, 256, size=(n, bits // 8), dtype=np.uint8)
    return _DBS[(n, bits)]


@pytest.mark.parametrize("bits", [384, 2560])
@pytest.mark.parametrize("nq", [1, 16])
def test_hamming_topk(benchmark: Any, k: kernels.Kernels, db_rows: int, bits: int,
                      nq: int) -> None:
    db = database(db_rows, bits)
    queries = np.ascontiguousarray(db[:nq])
    benchmark.group = f"hamming_topk {bits}-bit {db_rows:,} rows x {nq} queries"
    ids, dists = benchmark(k.hamming_topk, queries, db, 50)
    assert (ids[:, 0] == np.arange(nq)).all() and (dists[:, 0] == 0).all()
    throughput(benchmark, "rows_per_s", db_rows * nq)


@pytest.mark.parametrize("dims", [384, 2560])
def test_binarize(benchmark: Any, k: kernels.Kernels, dims: int) -> None:
    x = RNG.standard_normal((20_000, dims)).astype(np.float32)
    benchmark.group = f"binarize 20,000 x {dims}"
    out = benchmark(k.binarize, x)
    assert (out == np.packbits(x > 0, axis=1)).all()
    throughput(benchmark, "MB_per_s", x.nbytes / 1e6)


def test_packbits_baseline(benchmark: Any) -> None:
    x = RNG.standard_normal((20_000, 384)).astype(np.float32)
    benchmark.group = "binarize 20,000 x 384"
    benchmark(lambda: np.packbits(x > 0, axis=1))


def test_quantize_and_rescore(benchmark: Any, k: kernels.Kernels) -> None:
    x = RNG.standard_normal((20_000, 384)).astype(np.float32)
    benchmark.group = "quantize_int8 20,000 x 384"
    codes, scales = benchmark(k.quantize_int8, x)
    assert np.abs(codes.astype(np.float32) * scales[:, None] - x).max() <= scales.max()


def test_hash_many(benchmark: Any, k: kernels.Kernels) -> None:
    items = [RNG.integers(0, 256, 1024, dtype=np.uint8).tobytes() for _ in range(20_000)]
    benchmark.group = "hash_many 20,000 x 1 KB"
    digests = benchmark(k.hash_many, items)
    assert len(set(digests)) == len(items)
    throughput(benchmark, "items_per_s", len(items))


def test_diff(benchmark: Any, k: kernels.Kernels) -> None:
    keys = [f"src/pkg_{i % 100}/file_{i}.py" for i in range(200_000)]
    old = dict(zip(keys, kernels.hash_many(keys), strict=True))
    new = {**old, keys[5]: b"changed"}
    benchmark.group = "diff 200,000 entries"
    unchanged, changed, added, removed = benchmark(k.diff, old, new)
    assert changed == [keys[5]] and not added and not removed
