"""The shared index: publish time (first, and after a one-file edit) and search latency, local
against shared, with the overlap of their top 10, on synthetic indexes of growing size.

The synthetic project copies a real corpus until its index holds the requested number of
chunks; the copies share their vectors, so the top 10 of local and shared search are compared
by path within a copy (which of several equal copies comes first is a tie either side may
break). The engine is milvus-lite unless ``--uri`` names a server.

    python benchmarks/shared_index.py --source /tmp/evalkit/corpora/requests-2.32.3 \\
        --sizes 10000,100000 [--uri http://localhost:19530] [--work /tmp/kenning-shared-bench]

``--quality QUERIES`` measures instead what a searcher loses by going shared: each corpus of the
docstring dev set (``/work/shared/eval``) is indexed and published, and every query is searched
locally and from the engine; span and file MRR@10 of both.

    python benchmarks/shared_index.py --quality /work/shared/eval/dev/queries.jsonl \\
        --corpora-dir /tmp/evalkit/corpora [--sample 40]
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


def _ranks(hits: list[dict[str, Any]], target: dict[str, Any]) -> tuple[int | None, int | None]:
    """(span rank, file rank) of the target among the hits, 1-based."""
    span = file = None
    for rank, h in enumerate(hits, 1):
        if h["path"] == target["path"]:
            file = file or rank
            if span is None and not (h["end_line"] < target["start_line"]
                                     or h["start_line"] > target["end_line"]):
                span = rank
    return span, file


def quality(args: argparse.Namespace) -> None:
    import json
    import random

    from kenning import config
    from kenning.embedding import make_embedder
    from kenning.search import ProjectRef, search
    from kenning.shared import publish
    from kenning.store import Index

    work = Path(args.work or tempfile.mkdtemp(prefix="kenning-shared-quality-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("KENNING_HOME", "/tmp/kenning-eval-home")  # indexes reused
    os.environ["KENNING_CONFIG"] = str(work / "config.toml")
    uri = args.uri or str(work / "quality.db")
    local_settings = config.load({"shared.uri": uri})
    shared_settings = config.load({"shared.uri": uri, "search.backend": "shared"})
    embedder = make_embedder(local_settings)
    queries = [json.loads(line) for line in Path(args.quality).read_text().splitlines() if line]
    ranks: dict[str, list[tuple[int | None, int | None]]] = {"local": [], "shared": []}
    for package in sorted({q["package"] for q in queries}):
        items = [q for q in queries if q["package"] == package]
        if args.sample and len(items) > args.sample:
            items = random.Random(0).sample(items, args.sample)
        root = Path(args.corpora_dir) / package
        publish(root, local_settings, embedder=embedder)
        pid = Index.open(root, local_settings, embedder=embedder).project_id
        ref = ProjectRef(pid, root)
        for q in items:
            for name, settings in (("local", local_settings), ("shared", shared_settings)):
                out = search(q["query"], [ref], settings=settings, limit=10, refresh=False,
                             embedder=embedder, shared_projects=[pid])
                ranks[name].append(_ranks(out["results"], q))
    print("| backend | queries | span MRR@10 | file MRR@10 | span R@10 |")
    print("|---|---|---|---|---|")
    for name, rows in ranks.items():
        def mrr(i: int, rows: list[Any] = rows) -> float:
            return sum(1 / r[i] for r in rows if r[i]) / len(rows)

        recall = sum(1 for r in rows if r[0]) / len(rows)
        print(f"| {name} | {len(rows)} | {mrr(0):.3f} | {mrr(1):.3f} | {recall:.3f} |")
    embedder.close()


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
    parser.add_argument("--source", help="a small corpus to replicate")
    parser.add_argument("--quality", metavar="QUERIES", help="docstring dev queries (jsonl)")
    parser.add_argument("--corpora-dir", default="/tmp/evalkit/corpora")
    parser.add_argument("--sample", type=int, default=0, help="queries per corpus (0: all)")
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--uri", help="a Milvus server (default: milvus-lite in --work)")
    parser.add_argument("--work", help="folder for the projects and the engine file (kept)")
    parser.add_argument("--runs", type=int, default=3, help="passes over the queries")
    args = parser.parse_args()
    if args.quality:
        quality(args)
    elif args.source:
        run(args)
    else:
        parser.error("give --source (speed) or --quality (quality)")


if __name__ == "__main__":
    main()
