"""The approximate path (usearch HNSW over sign bits) against the exact Rust scan.

    python benchmarks/ann_vs_exact.py [--rows 1000000,5000000] [--dims 384] [--queries 200]

Data: sign bits of synthetic clustered vectors (a Gaussian mixture of 2,000 centres, like
topics in a code base; uniform random bits have no neighbours worth finding and would make any
graph index look bad). Queries are fresh draws from the same mixture, not rows of the index.
Reports build time (sync from empty, then +1% incrementally), file size, recall@50 against the
exact scan (by id, and by distance so ties at the 50th place do not count as misses), and
median single-query latency of both paths. Used to choose ``index.ann_threshold``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from kenning import _core, kernels
from kenning.store.ann import AnnIndex

K = 50


def clustered_bits(n: int, dims: int, centers: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    out = np.empty((n, (dims + 7) // 8), dtype=np.uint8)
    step = 100_000
    for start in range(0, n, step):
        m = min(step, n - start)
        x = centers[rng.integers(0, len(centers), m)] + 1.0 * rng.standard_normal(
            (m, dims), dtype=np.float32)
        out[start:start + m] = kernels.binarize(x)
    return out


def median_ms(fn, queries: np.ndarray) -> float:  # type: ignore[no-untyped-def]
    times = []
    for q in queries:
        q = q[None, :]
        start = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def run(n: int, dims: int, nq: int, rng: np.random.Generator, workdir: Path) -> None:
    centers = rng.standard_normal((2000, dims)).astype(np.float32)
    bits = clustered_bits(n, dims, centers, rng)
    queries = clustered_bits(nq, dims, centers, rng)
    path = workdir / f"bench-{n}.usearch"
    grown = int(n * 0.99)

    start = time.perf_counter()
    AnnIndex(path, dims).sync(bits, grown)
    build = time.perf_counter() - start
    start = time.perf_counter()
    added = AnnIndex(path, dims).sync(bits)
    incremental = time.perf_counter() - start
    size_mb = path.stat().st_size / 1e6

    exact_ids, exact_dists = kernels.hamming_topk(queries, bits, K)
    exact_ms = median_ms(lambda q: kernels.hamming_topk(q, bits, K), queries)
    exact_1t = median_ms(lambda q: _core.hamming_topk(q, bits, K, threads=1), queries)
    print(f"\n{n:,} x {dims}-bit: build {build:.1f} s ({grown / build:,.0f} rows/s), "
          f"+{added:,} rows incrementally {incremental:.1f} s (load + add + save), "
          f"file {size_mb:,.0f} MB; exact scan {exact_ms:.2f} ms ({exact_1t:.2f} ms on 1 thread)")
    print("  expansion | recall@50 ids | recall@50 dist | ann ms | exact/ann")
    for expansion in (64, 128, 256, 512):
        view = AnnIndex(path, dims, expansion_search=expansion).view()
        ids, dists = view.search(queries, K)
        by_id = np.mean([len(set(a) & set(b)) / K for a, b in
                         zip(ids, exact_ids, strict=True)])
        by_dist = np.mean(dists <= exact_dists[:, -1:])
        ann_ms = median_ms(lambda q, v=view: v.search(q, K), queries)
        print(f"  {expansion:9d} | {by_id:13.3f} | {by_dist:14.3f} | {ann_ms:6.2f} | "
              f"{exact_ms / ann_ms:8.1f}x", flush=True)
    path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1000000", help="comma-separated row counts")
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(r) for r in args.rows.split(",")):
            run(n, args.dims, args.queries, rng, Path(tmp))


if __name__ == "__main__":
    main()
