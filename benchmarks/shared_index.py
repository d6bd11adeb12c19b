"""The shared index: publish time (first, and after a one-file edit) and search latency, local
against shared, with the overlap of their top 10, on synthetic indexes of growing size.

The synthetic project copies a real corpus until its index holds the requested number of
chunks; the copies share their vectors, so the top 10 of local and shared search are compared
by path within a copy (which of several equal copies comes first is a tie either side may
break). The engine is milvus-lite unless ``--uri`` names a server.

    python benchmarks/shared_index.py --source /tmp/evalkit/corpora/requests-2.32.3 \\
        --sizes 10000,100000 [--uri http://localhost:19530] [--work /tmp/kenning-shared-bench]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_speed import QUERIES, THIS_TREE, FixedQueries  # noqa: E402

sys.path.insert(0, str(THIS_TREE))


def _project(work: Path, size: int, source: Path, settings: Any, embedder: Any) -> Path:
    """A project of copies of ``source`` holding at least ``size`` chunks, indexed by a plain
    refresh (the copies share their vectors, which are stored once per chunk text)."""
    from kenning.indexer import refresh

    target = work / f"project-{size}"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    per_copy = refresh(source, settings, embedder=embedder, wait=True).chunks
    for copy in range(-(-size // per_copy)):
        shutil.copytree(source, target / f"copy{copy:04d}", symlinks=True,
                        ignore=shutil.ignore_patterns(".git"))
    refresh(target, settings, embedder=embedder, wait=True)
    return target


def _edit_one_file(target: Path, settings: Any, embedder: Any) -> str:
    """Append a function to one Python file of the first copy and refresh the index."""
    from kenning.indexer import refresh

    victim = sorted((target / "copy0000").rglob("*.py"))[0]
    with victim.open("a") as fh:
        fh.write("\n\ndef shared_index_benchmark_probe(value):\n"
                 "    \"\"\"Return the value unchanged, for the publish benchmark.\"\"\"\n"
                 "    return value\n")
    refresh(target, settings, embedder=embedder, wait=True)
    return str(victim.relative_to(target))


def _latency(settings: Any, ref: Any, fixed: Any, runs: int) -> tuple[float, float, dict]:
    from kenning.search import search

    times, tops = [], {}
    for _ in range(runs):
        for q in QUERIES:
            started = time.perf_counter()
            out = search(q, [ref], settings=settings, refresh=False, embedder=fixed, limit=10)
            times.append((time.perf_counter() - started) * 1000)
            # copyNNNN/<path>: equal copies tie, so a hit is its path within a copy
            tops[q] = [(r["path"].split("/", 1)[-1], r["start_line"]) for r in out["results"]]
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))], tops


def run(args: argparse.Namespace) -> None:
    from kenning import config
    from kenning.embedding import make_embedder
    from kenning.search import ProjectRef
    from kenning.shared import Engine, publish
    from kenning.store import Index

    work = Path(args.work or tempfile.mkdtemp(prefix="kenning-shared-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / "home", ignore_errors=True)  # indexes of an earlier run
    os.environ["KENNING_HOME"] = str(work / "home")
    os.environ["KENNING_CONFIG"] = str(work / "config.toml")
    uri = args.uri or str(work / "shared.db")
    if not args.uri and Path(uri).exists():
        Path(uri).unlink()
    settings = config.load({"shared.uri": uri})
    embedder = make_embedder(settings)
    fixed = FixedQueries(embedder, QUERIES)
    print(f"engine {uri}; source {args.source}")
    print("| chunks | first publish s | MB sent | one-file edit publish s | rows sent / deleted"
          " | local p50 / p90 ms | shared p50 / p90 ms | top-10 overlap (distinct hits) |")
    print("|---|---|---|---|---|---|---|---|")
    for size in [int(s) for s in args.sizes.split(",")]:
        target = _project(work, size, Path(args.source).resolve(), settings, embedder)
        first = publish(target, settings, embedder=fixed, refresh=False)
        _edit_one_file(target, settings, embedder)
        edit = publish(target, settings, embedder=fixed, refresh=False)
        index = Index.open(target, settings, embedder=embedder)
        ref = ProjectRef(index.project_id, target)
        local = _latency(settings, ref, fixed, args.runs)
        shared_settings = config.load({"shared.uri": uri, "search.backend": "shared"})
        shared = _latency(shared_settings, ref, fixed, args.runs)
        overlap = statistics.mean(
            len(set(local[2][q]) & set(shared[2][q])) / max(1, len(set(local[2][q])))
            for q in QUERIES)
        print(f"| {first.chunks_sent} | {first.seconds:.1f} | {first.bytes_sent / 1e6:.1f} | "
              f"{edit.seconds:.2f} | {edit.chunks_sent} / {edit.rows_deleted} | "
              f"{local[0]:.1f} / {local[1]:.1f} | {shared[0]:.1f} / {shared[1]:.1f} | "
              f"{overlap:.2f} |" + (f" ({len(first.skipped)} files skipped)"
                                    if first.skipped else ""), flush=True)
        with Engine(settings, index.descriptor) as engine:
            engine.client.drop_collection(engine.chunks)  # the next size starts empty
            engine.client.drop_collection(engine.manifest)
    embedder.close()
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", required=True, help="a small corpus to replicate")
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--uri", help="a Milvus server (default: milvus-lite in --work)")
    parser.add_argument("--work", help="folder for the projects and the engine file (kept)")
    parser.add_argument("--runs", type=int, default=3, help="passes over the queries")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
