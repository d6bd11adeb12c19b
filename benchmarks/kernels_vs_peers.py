"""One table of ratios from one run: each kernel in Rust vs the NumPy twin, and the Hamming scan
vs faiss-cpu IndexBinaryFlat and usearch exact search.

    python benchmarks/kernels_vs_peers.py [--quick] [--rows 10000,100000,1000000] [--bits 2560,384]

Times are medians of repeated calls on random data (wall clock, ms); figures whose ratio is
reported (1 vs 16 queries, binarize vs np.packbits) are timed in turn, round by round, so a busy
spell on a shared machine weighs on both sides alike. "rust" uses its automatic
thread count; "rust 1T" is pinned to one thread, the fair match for faiss and usearch, which
are pinned to one thread too. Every result is checked against the NumPy twin before it counts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import blake3
import numpy as np
from kenning import _core, kernels

RUST, TWIN = kernels.for_backend("rust"), kernels.for_backend("numpy")
K = 50


def timed(fn: Callable[[], Any], budget: float = 1.0, max_reps: int = 7) -> float:
    """Median seconds of `fn` over repeats that fit in `budget` (at least 3 when affordable)."""
    times: list[float] = []
    spent = 0.0
    while len(times) < max_reps and (len(times) < 3 or spent < budget):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        spent += times[-1]
        if times[-1] > budget and len(times) >= 1:
            break
    return statistics.median(times)


def timed_together(fns: dict[str, Callable[[], Any]], budget: float = 2.0,
                   max_reps: int = 15) -> dict[str, float]:
    """Median seconds of each of ``fns``, called in turn each round, so that a busy spell on a
    shared machine weighs on all of them alike and their ratios stay fair."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    spent = 0.0
    while len(times[next(iter(fns))]) < max_reps and (len(times[next(iter(fns))]) < 5
                                                     or spent < budget):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
            spent += times[name][-1]
    return {name: statistics.median(values) for name, values in times.items()}


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.2f}"


def scan_rows(n: int, bits: int, rng: np.random.Generator) -> list[str]:
    import faiss
    from usearch.index import MetricKind
    from usearch.index import search as usearch_search

    width = bits // 8
    db = rng.integers(0, 256, size=(n, width), dtype=np.uint8)
    queries = rng.integers(0, 256, size=(16, width), dtype=np.uint8)
    one = queries[:1]

    want = TWIN.hamming_topk(queries, db, K)
    got = RUST.hamming_topk(queries, db, K)
    assert (got[0] == want[0]).all() and (got[1] == want[1]).all()

    faiss.omp_set_num_threads(1)
    index = faiss.IndexBinaryFlat(bits)
    index.add(db)
    fd, _ = index.search(queries, K)
    assert (np.sort(fd, axis=1) == want[1]).all()

    # the four Rust figures whose ratios the table reports are timed round by round
    t = timed_together({
        "rust": lambda: RUST.hamming_topk(one, db, K),
        "rust1T": lambda: _core.hamming_topk(one, db, K, threads=1),
        "rust16": lambda: RUST.hamming_topk(queries, db, K),
        "rust16_1T": lambda: _core.hamming_topk(queries, db, K, threads=1),
    })
    t |= {
        "numpy": timed(lambda: TWIN.hamming_topk(one, db, K)),
        "numpy16": timed(lambda: TWIN.hamming_topk(queries, db, K), budget=0.5, max_reps=3),
        "faiss": timed(lambda: index.search(one, K)),
        "faiss16": timed(lambda: index.search(queries, K)),
        "usearch": timed(lambda: usearch_search(db, one, K, MetricKind.Hamming, exact=True,
                                                threads=1, dtype="b1")),
        # the memory floor: one vectorised pass that only reads db
        "read": timed(lambda: np.bitwise_or.reduce(db.reshape(-1).view(np.uint64))),
    }
    return [
        f"{bits:5d} {n:>9,d} | {ms(t['rust'])} {ms(t['rust1T'])} {ms(t['rust16'])} "
        f"{t['rust16'] / t['rust']:5.1f}x {t['rust16_1T'] / t['rust1T']:5.1f}x | "
        f"{ms(t['numpy'])} {t['numpy'] / t['rust']:6.1f}x {t['numpy16'] / t['rust16']:6.1f}x | "
        f"{ms(t['faiss'])} {t['faiss'] / t['rust1T']:5.2f}x {t['faiss16'] / t['rust16_1T']:5.2f}x"
        f" | {ms(t['usearch'])} {t['usearch'] / t['rust1T']:6.1f}x | {ms(t['read'])}"
    ]


def other_kernels(rng: np.random.Generator, quick: bool) -> list[str]:
    n = 20_000 if quick else 100_000
    out = []
    for dims in (384, 2560):
        rows = n if dims == 384 else n // 5
        x = rng.standard_normal((rows, dims)).astype(np.float32)
        center = x[:1000].mean(axis=0)
        assert (RUST.binarize(x) == np.packbits(x > 0, axis=1)).all()
        assert (RUST.binarize(x, center) == np.packbits(x > center, axis=1)).all()
        # np.packbits is single-threaded: "rust 1T" is the like-for-like figure
        b = timed_together({
            "rust": lambda: RUST.binarize(x),  # noqa: B023
            "rust1T": lambda: _core.binarize(x, threads=1),  # noqa: B023
            "packbits": lambda: np.packbits(x > 0, axis=1),  # noqa: B023
            "rust_c": lambda: _core.binarize(x, center, threads=1),  # noqa: B023
            "packbits_c": lambda: np.packbits(x > center, axis=1),  # noqa: B023
        }, max_reps=9)
        r, r1, pb, rc, pbc = b["rust"], b["rust1T"], b["packbits"], b["rust_c"], b["packbits_c"]
        tw = timed(lambda: TWIN.binarize(x))  # noqa: B023
        mb = x.nbytes / 1e6
        out.append(f"binarize {rows:,}x{dims}: rust {mb / r:6.0f} MB/s, rust 1T {mb / r1:6.0f} MB/s"
                   f", np.packbits(x > 0, axis=1) {mb / pb:6.0f} MB/s: rust/np {pb / r:.2f}x, "
                   f"1T {pb / r1:.2f}x; centered 1T vs np.packbits(x > center) {pbc / rc:.2f}x; "
                   f"twin {tw / r:.2f}x")
        r, tw = timed(lambda: RUST.quantize_int8(x)), timed(lambda: TWIN.quantize_int8(x))  # noqa: B023
        out.append(f"quantize_int8 {rows:,}x{dims}: rust {ms(r)} ms, twin {ms(tw)} ms "
                   f"({tw / r:.1f}x)")
    x = rng.standard_normal((2000, 384)).astype(np.float32)
    codes, scales = RUST.quantize_int8(x)
    r, tw = timed(lambda: RUST.rescore(x[0], codes, scales)), timed(
        lambda: TWIN.rescore(x[0], codes, scales))
    out.append(f"rescore 2,000x384 shortlist: rust {ms(r)} ms, twin {ms(tw)} ms ({tw / r:.1f}x)")

    items = [rng.integers(0, 256, 1024, dtype=np.uint8).tobytes() for _ in range(n)]
    assert RUST.hash_many(items[:100]) == [blake3.blake3(i).digest(length=16) for i in items[:100]]
    r = timed(lambda: RUST.hash_many(items))
    r1 = timed(lambda: _core_hash_one_thread(items))
    loop = timed(lambda: [blake3.blake3(i).digest(length=16) for i in items])
    tw = timed(lambda: TWIN.hash_many(items))
    out.append(f"hash_many {n:,} x 1 KB: rust {ms(r)} ms ({n / r / 1e3:.0f}k/s), python loop "
               f"over blake3 {ms(loop)} ms ({loop / r:.1f}x; one rust thread {loop / r1:.1f}x), "
               f"twin {tw / r:.1f}x")

    keys = [f"src/module_{i}/file_{i}.py" for i in range(n * 10)]
    old = dict(zip(keys, RUST.hash_many(keys), strict=True))
    new = dict(old)
    for key in keys[::100]:
        new[key] = b"changed"
    r, tw = timed(lambda: RUST.diff(old, new)), timed(lambda: TWIN.diff(old, new))
    out.append(f"diff {len(keys):,} entries: rust {ms(r)} ms, twin {ms(tw)} ms ({tw / r:.1f}x)")
    return out


def _core_hash_one_thread(items: list[bytes]) -> None:
    # hash_many has no thread knob; slicing into 1 MB calls keeps each call on one thread
    for start in range(0, len(items), 900):
        _core.hash_many(items[start:start + 900])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k and 100k rows only")
    parser.add_argument("--rows", help="comma-separated row counts")
    parser.add_argument("--bits", default="2560,384", help="comma-separated vector widths")
    parser.add_argument("--scan-only", action="store_true", help="skip the other kernels")
    args = parser.parse_args()
    rows = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    if args.rows:
        rows = [int(r) for r in args.rows.split(",")]
    rng = np.random.default_rng(0)
    print(f"kernels: {', '.join(_core.kernels())}; cores: {os.cpu_count()}; "
          f"load average: {os.getloadavg()[0]:.1f}; k={K}; times in ms (median)")
    print(" bits      rows |     rust  rust 1T  rust 16q 16q/1q 16q/1q(1T) |    numpy "
          "numpy/rust 16q | faiss 1T  f/r1T  f16/r16 | usearch1T u/r1T | read db")
    for bits in (int(b) for b in args.bits.split(",")):
        for n in rows:
            for line in scan_rows(n, bits, rng):
                print(line, flush=True)
    if args.scan_only:
        return
    print()
    for line in other_kernels(rng, args.quick):
        print(line, flush=True)


if __name__ == "__main__":
    main()
