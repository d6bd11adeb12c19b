"""Walk + hash + chunk with the embedder off, on a large real tree.

    python benchmarks/walk_chunk.py [ROOT] [--repeat N]

ROOT defaults to this machine's CPython standard library. Each stage runs on its own so its
rate is visible: the walk (all ignore rules, binary sniffing), content hashing of every file
(``kenning.kernels.hash_files``), and chunking with the token counter of the default local
model (the embedder's ``count_tokens``; the model itself is never loaded), then chunking again
with a free counter to show what the chunker costs apart from the tokenizer. Medians of
``--repeat`` runs. Asserts the chunk invariants (budget, byte/text agreement) on the way.
"""

from __future__ import annotations

import argparse
import statistics
import sysconfig
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from kenning import config, kernels
from kenning.chunking import chunk_file
from kenning.embedding import make_embedder
from kenning.indexing.sources import WalkStats, walk


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float, object]:
    """Median wall and CPU seconds of ``repeat`` runs (CPU shows the cost on a busy machine)."""
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=sysconfig.get_paths()["stdlib"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = Path(args.root)
    settings = config.load()
    max_size = int(settings["index.max_file_size"])
    embedder = make_embedder(settings)
    budget = int(embedder.max_tokens)

    stats = WalkStats()
    files = list(walk(root, max_file_size=max_size, stats=stats))
    t_walk, c_walk, _ = timed(lambda: list(walk(root, max_file_size=max_size)), args.repeat)
    total = sum(f.size for f in files)
    mb = total / 1e6
    paths = [f.path for f in files]
    t_hash, c_hash, digests = timed(lambda: kernels.hash_files(root, paths, max_size), args.repeat)
    assert isinstance(digests, list) and all(d is not None for d in digests)
    contents = [f.abs_path.read_bytes() for f in files]

    def chunk_all(count: Callable[[str], int]) -> list[int]:
        per_file = []
        for f, data in zip(files, contents, strict=True):
            found = chunk_file(f.path, data, f.language, max_tokens=budget, count_tokens=count)
            per_file.append(len(found))
        return per_file

    t_chunk, c_chunk, counts = timed(lambda: chunk_all(embedder.count_tokens), 1)
    t_free, c_free, _ = timed(lambda: chunk_all(lambda text: len(text) // 4), 1)
    assert isinstance(counts, list)
    # Spot-check the contract on a sample with the real counter.
    for f, data in list(zip(files, contents, strict=True))[:: max(1, len(files) // 50)]:
        for c in chunk_file(
            f.path, data, f.language, max_tokens=budget, count_tokens=embedder.count_tokens
        ):
            assert embedder.count_tokens(c.text) <= budget
            assert c.text == data[c.start_byte : c.end_byte].decode("utf-8", "replace")
    languages = Counter(f.language or "none" for f in files).most_common(6)

    n = len(files)
    print(f"tree: {root}  ({n} files, {mb:.1f} MB; skipped files {dict(stats.skipped)}, ")
    print(f"      pruned folders {dict(stats.skipped_dirs)}; top languages {languages})")
    print(f"budget: {budget} tokens ({embedder.model})   chunks: {sum(counts)}")
    rows = [
        ("walk", t_walk, c_walk),
        ("hash", t_hash, c_hash),
        ("chunk (model tokenizer)", t_chunk, c_chunk),
        ("chunk (free counter)", t_free, c_free),
        ("walk + hash + chunk", t_walk + t_hash + t_chunk, c_walk + c_hash + c_chunk),
    ]
    rate = f"{'files/s':>9} {'MB/s':>8}"
    print(f"{'stage':26} {'wall':>9} {rate}   {'cpu':>9} {rate}")
    for name, wall, cpu in rows:
        print(
            f"{name:26} {wall:8.2f}s {n / wall:9.0f} {mb / wall:8.2f}   "
            f"{cpu:8.2f}s {n / cpu:9.0f} {mb / cpu:8.2f}"
        )


if __name__ == "__main__":
    main()
