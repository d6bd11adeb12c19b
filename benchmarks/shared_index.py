"""The shared index: publish time (first, and after a one-file edit) and search latency, local
against shared (ratio measured in one run), with the engine's Hamming top 300 alone, the
overlap of the two top 10s, and the engine's bytes per row (on disk, and by field), on
synthetic projects of growing size.

A synthetic project copies an indexed corpus (``search_speed.build``: hard-linked files, the
source's chunks, each copy's vectors jittered) until its index holds the requested number of
chunks, so BM25 vocabulary, symbols and the cosine distribution are those of real code. Each
size is built, published, edited, published again and searched, then removed (``--keep``
keeps it). Everything lives in ``--work`` (a temporary folder by default, with its own
``KENNING_HOME`` and ``KENNING_CONFIG``); the engine is milvus-lite there unless ``--uri``
names a server. A 1M-chunk size needs about 6 GB of disk and hours on two busy cores.

    python benchmarks/shared_index.py --source /tmp/evalkit/corpora/requests-2.32.3 \\
        --seed-home /tmp/kenning-eval-home --sizes 10000,100000 [--uri http://host:19530] \\
        [--work /tmp/kenning-shared-bench] [--runs 3]

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


def _seed(source: Path, settings: Any, embedder: Any, home: Path) -> None:
    """Copy the source's index from ``home`` into this run's home, so its vectors are not
    computed again (``home`` is only read)."""
    from kenning.project import index_dir, kenning_home
    from kenning.store import make_descriptor, project_id_for

    here = index_dir(make_descriptor(embedder), project_id_for(source, settings))
    there = Path(home) / here.relative_to(kenning_home())
    if there.is_dir() and not here.exists():
        shutil.copytree(there, here, ignore=shutil.ignore_patterns("*.lock"))


def _edit_one_file(target: Path, settings: Any, embedder: Any) -> str:
    """Append a function to one Python file of the first copy (a file of its own, no longer a
    link to the source's) and refresh the index."""
    from kenning.indexing.indexer import refresh

    victim = sorted((target / "copy0000").rglob("*.py"))[0]
    text = victim.read_text()
    victim.unlink()
    victim.write_text(text + "\n\ndef shared_index_benchmark_probe(value):\n"
                      "    \"\"\"Return the value unchanged, for the publish benchmark.\"\"\"\n"
                      "    return value\n")
    refresh(target, settings, embedder=embedder, wait=True)
    return str(victim.relative_to(target))


def _latency(settings: Any, ref: Any, fixed: Any, runs: int) -> tuple[float, float, dict]:
    from kenning.services.search import search

    for q in QUERIES:  # warm: the page cache, and for milvus-lite loading the collection
        search(q, [ref], settings=settings, refresh=False, embedder=fixed, limit=10)
    times, tops = [], {}
    for _ in range(runs):
        for q in QUERIES:
            started = time.perf_counter()
            out = search(q, [ref], settings=settings, refresh=False, embedder=fixed, limit=10,
                         shared_projects=[ref.id])
            times.append((time.perf_counter() - started) * 1000)
            tops[q] = [(r["path"], r["start_line"]) for r in out["results"]]
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))], tops


def _hamming(engine: Any, project: str, fixed: Any, runs: int) -> float:
    """p50 ms of the engine's exact Hamming top 300 alone (no rescoring, no other branch)."""
    from kenning import kernels
    from kenning.shared import reads, retrieval

    center = reads.published(engine, [project])[project].center
    times = []
    for _ in range(runs):
        for q in QUERIES:
            bits = kernels.binarize(fixed.embed_query(q)[None, :], center)[0]
            started = time.perf_counter()
            reads.hamming(engine, bits, retrieval.SHORTLIST, reads.at_project(project))
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _disk_bytes(uri: str) -> int | None:
    """The milvus-lite file's size (None for a server; the file keeps the space of dropped
    collections, so a size's rows are measured by what the file grew)."""
    from kenning.store.shared_engine import SERVER_SCHEMES

    if uri.startswith(SERVER_SCHEMES):
        return None
    return Path(uri).stat().st_size if Path(uri).exists() else 0


def _field_bytes(engine: Any, project: str, sample: int = 2000) -> dict[str, float]:
    """Mean bytes per row of each field, over a sample of the project's rows: strings as UTF-8,
    integers 8, the sign bits dims/8, the BM25 sparse vector 8 per distinct token."""
    from kenning.shared.reads import at_project

    strings = ["id", "project", "path", "content_hash", "language", "kind", "symbol",
               "signature", "text", "words", "rescore"]
    rows = engine.query(engine.chunks, at_project(project),
                        [*strings, "symbol_words"], "sampling rows", limit=sample)
    n = max(1, len(rows))
    out = {name: sum(len(r[name].encode()) for r in rows) / n for name in strings}
    out["symbol_words"] = sum(len(w.encode()) for r in rows for w in r["symbol_words"]) / n
    out["integers (6)"] = 48.0
    out["bits"] = engine.dims / 8
    out["sparse (BM25)"] = sum(8 * len(set(r["words"].split())) for r in rows) / n
    return out

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
    from kenning.retrieval import ProjectRef
    from kenning.services.search import search
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
    from kenning.retrieval import ProjectRef
    from kenning.shared import Engine, publish
    from kenning.store import Index
    from search_speed import build

    work = Path(args.work or tempfile.mkdtemp(prefix="kenning-shared-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / "home", ignore_errors=True)  # indexes of an earlier run
    os.environ["KENNING_HOME"] = str(work / "home")
    os.environ["KENNING_CONFIG"] = str(work / "config.toml")
    uri = args.uri or str(work / "shared.db")
    if not args.uri and Path(uri).exists():
        Path(uri).unlink()
    settings = config.load({"shared.uri": uri})
    shared_settings = config.load({"shared.uri": uri, "search.backend": "shared"})
    embedder = make_embedder(settings)
    source = Path(args.source).resolve()
    if args.seed_home:
        _seed(source, settings, embedder, Path(args.seed_home))
    fixed = FixedQueries(embedder, QUERIES)
    print(f"engine {uri}; source {source}")
    table = ["| chunks | build local s | first publish s | MB sent | one-file edit publish s "
             "| rows sent / deleted | local p50 / p90 ms | shared p50 / p90 ms | shared / local "
             "p50 | engine Hamming top 300 p50 ms | top-10 overlap | engine bytes per row |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    fields = []
    print("\n".join(table), flush=True)
    for size in [int(s) for s in args.sizes.split(",")]:
        target = work / f"project-{size}"
        shutil.rmtree(target, ignore_errors=True)
        build_s = build(target, size, source, settings, embedder)
        before = _disk_bytes(uri)
        first = publish(target, settings, embedder=fixed, refresh=False)
        after = _disk_bytes(uri)
        disk = after - before if after is not None and before is not None else None
        _edit_one_file(target, settings, embedder)
        edit = publish(target, settings, embedder=fixed, refresh=False)
        index = Index.open(target, settings, embedder=embedder)
        ref = ProjectRef(index.project_id, target)
        local = _latency(settings, ref, fixed, args.runs)
        shared = _latency(shared_settings, ref, fixed, args.runs)
        with Engine(settings, index.descriptor) as engine:
            hamming = _hamming(engine, index.project_id, fixed, args.runs)
            fields.append((first.chunks_sent, _field_bytes(engine, index.project_id)))
        overlap = statistics.mean(
            len(set(local[2][q]) & set(shared[2][q])) / max(1, len(set(local[2][q])))
            for q in QUERIES)
        row = (f"| {first.chunks_sent} | {build_s:.0f} | {first.seconds:.1f} | "
               f"{first.bytes_sent / 1e6:.1f} | {edit.seconds:.2f} | {edit.chunks_sent} / "
               f"{edit.rows_deleted} | {local[0]:.1f} / {local[1]:.1f} | {shared[0]:.1f} / "
               f"{shared[1]:.1f} | {shared[0] / local[0]:.1f} | {hamming:.1f} | {overlap:.2f} | "
               + (f"{disk / first.chunks_sent:.0f} |" if disk else "(server) |")
               + (f" ({len(first.skipped)} files skipped)" if first.skipped else ""))
        table.append(row)
        print(row, flush=True)
        if not args.keep:
            with Engine(settings, index.descriptor) as engine:
                engine.client.drop_collection(engine.chunks)  # the next size starts empty
                engine.client.drop_collection(engine.manifest)
            shutil.rmtree(index.dir, ignore_errors=True)
            shutil.rmtree(target, ignore_errors=True)
    print("\nmean bytes per row, by field (a sample of 2,000 rows):")
    names = list(fields[0][1])
    print("| chunks | " + " | ".join(names) + " | total |")
    print("|---|" + "---|" * (len(names) + 1))
    for chunks, sizes in fields:
        print(f"| {chunks} | " + " | ".join(f"{sizes[n]:.0f}" for n in names)
              + f" | {sum(sizes.values()):.0f} |")
    print("\nsummary:\n" + "\n".join(table))
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
    parser.add_argument("--work", help="folder for the projects and the engine file (default: "
                        "a temporary folder, removed at the end)")
    parser.add_argument("--keep", action="store_true", help="keep each size's project, index "
                        "and collections (in --work) instead of removing them after measuring")
    parser.add_argument("--seed-home", help="a KENNING_HOME that already indexes --source (only "
                        "read): its index is copied instead of embedding the source again")
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
