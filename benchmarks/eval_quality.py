"""Retrieval quality of kenning search, each branch alone and fused, on the shared eval sets.

Runs in-process: each corpus is indexed once (KENNING_HOME defaults to /tmp/kenning-eval-home,
so indexes are reused between runs), then every query is searched with each branch set.

    # docstring dev set (build the corpora first, see /work/shared/eval/README.md)
    python benchmarks/eval_quality.py docstring --queries /work/shared/eval/dev/queries.jsonl \\
        --corpora-dir /tmp/evalkit/corpora [--sample 30]

    # semble-bench dev split, through its scorer's batch protocol (one process per repo)
    python /work/shared/eval/semble-bench/score.py run --method batch --label hybrid \\
        --batch-cmd 'python benchmarks/eval_quality.py batch --root {root} --name {repo} \\
            --queries {queries} --out {out} -k {k} --mode hybrid'

    # add `--limit-check FILE` to record, per query, whether -n 60 gives the same first k

Each project is searched under its name (`--name`; the docstring set's package names), as a
`[[projects]]` entry with that id would be: a benchmark root is often a folder inside the
repository (`axum/src`), whose own name is not the project's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

MODES = {"bm25": ("lexical",), "dense": ("dense",), "hybrid": ("dense", "lexical", "symbol")}


def _setup() -> tuple[Any, Any]:
    os.environ.setdefault("KENNING_HOME", "/tmp/kenning-eval-home")
    os.environ.setdefault("KENNING_CONFIG", "/tmp/kenning-eval-home/config.toml")
    from kenning import config
    from kenning.embedding import make_embedder

    settings = config.load()
    return settings, make_embedder(settings)


def _index(root: Path, settings: Any, embedder: Any) -> float:
    from kenning.indexing.indexer import refresh

    started = time.perf_counter()
    refresh(root, settings, embedder=embedder, wait=True)
    return time.perf_counter() - started


def _search(root: Path, name: str, query: str, mode: str, k: int, settings: Any,
            embedder: Any) -> list[dict[str, Any]]:
    from kenning.retrieval import ProjectRef
    from kenning.services.search import search

    result = search(query, [ProjectRef(name, root)], settings=settings, limit=k,
                    refresh=False, embedder=embedder, branches=MODES[mode])
    return result["results"]


def docstring(args: argparse.Namespace) -> None:
    settings, embedder = _setup()
    queries = [json.loads(line) for line in Path(args.queries).read_text().splitlines() if line]
    by_package: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in queries:
        if not args.package or q["package"].startswith(args.package):
            by_package[q["package"]].append(q)
    modes = args.modes.split(",")
    ranks: dict[str, dict[str, list[tuple[int | None, int | None, int]]]] = defaultdict(dict)
    latencies: dict[str, list[float]] = defaultdict(list)
    for package, items in sorted(by_package.items()):
        if args.sample and len(items) > args.sample:  # the queries the kit's score.py samples
            items = random.Random(f"{args.seed}:{package}").sample(items, args.sample)
        root = Path(args.corpora_dir) / package
        print(f"[index] {package}: {_index(root, settings, embedder):.1f} s", file=sys.stderr)
        for mode in modes:
            rows = []
            for q in items:
                started = time.perf_counter()
                hits = _search(root, re.sub(r"-[0-9][^-]*$", "", package), q["query"], mode, 10,
                               settings, embedder)
                latencies[mode].append(time.perf_counter() - started)
                span = file = None
                for rank, h in enumerate(hits, 1):
                    if h["path"] == q["path"]:
                        file = file or rank
                        if span is None and not (h["end_line"] < q["start_line"]
                                                 or h["start_line"] > q["end_line"]):
                            span = rank
                lines = sum(h["end_line"] - h["start_line"] + 1 for h in hits) // max(len(hits), 1)
                rows.append((span, file, lines))
            ranks[mode][package] = rows
    print("| mode | queries | span MRR@10 | span R@1 | span R@10 | file MRR@10 | file R@1 | "
          "file R@10 | lines | p50 ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for mode in modes:
        rows = [r for package_rows in ranks[mode].values() for r in package_rows]

        def mrr(i: int, rows: list[Any] = rows) -> float:
            return sum(1 / r[i] for r in rows if r[i]) / len(rows)

        def recall(i: int, n: int, rows: list[Any] = rows) -> float:
            return sum(1 for r in rows if r[i] and r[i] <= n) / len(rows)

        p50 = statistics.median(latencies[mode]) * 1000
        print(f"| {mode} | {len(rows)} | {mrr(0):.3f} | {recall(0, 1):.3f} | {recall(0, 10):.3f} "
              f"| {mrr(1):.3f} | {recall(1, 1):.3f} | {recall(1, 10):.3f} "
              f"| {statistics.mean(r[2] for r in rows):.0f} | {p50:.0f} |")


def batch(args: argparse.Namespace) -> None:
    """semble-bench batch protocol: JSONL queries in, one JSON line of results per query out."""
    settings, embedder = _setup()
    root = Path(args.root).resolve()
    index_s = _index(root, settings, embedder)
    with open(args.out, "w", encoding="utf-8") as out:
        out.write(json.dumps({"meta": {"index_ms": round(index_s * 1000)}}) + "\n")
        for line in Path(args.queries).read_text().splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            started = time.perf_counter()
            hits = _search(root, args.name, item["query"], args.mode, args.k, settings, embedder)
            ms = (time.perf_counter() - started) * 1000
            results = [{"path": h["path"], "start_line": h["start_line"],
                        "end_line": h["end_line"], "score": h["score"]} for h in hits]
            if args.limit_check:
                _check_limit(args, root, item["query"], hits, settings, embedder)
            out.write(json.dumps({"id": item["id"], "results": results,
                                  "latency_ms": round(ms, 2)}) + "\n")


def _check_limit(args: argparse.Namespace, root: Path, query: str, hits: list[dict[str, Any]],
                 settings: Any, embedder: Any) -> None:
    """Append to ``--limit-check`` whether the first k results come back the same when
    ``--limit-against`` results are asked for."""
    more = _search(root, args.name, query, args.mode, args.limit_against, settings, embedder)
    same = [h["id"] for h in more[: len(hits)]] == [h["id"] for h in hits]
    with open(args.limit_check, "a", encoding="utf-8") as out:
        out.write(json.dumps({"repo": args.name, "query": query, "same": same}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    doc = sub.add_parser("docstring", help="the docstring dev set, every mode")
    doc.add_argument("--queries", required=True)
    doc.add_argument("--corpora-dir", required=True)
    doc.add_argument("--package")
    doc.add_argument("--sample", type=int, default=0)
    doc.add_argument("--seed", type=int, default=0)
    doc.add_argument("--modes", default="bm25,dense,hybrid")
    doc.set_defaults(run=docstring)
    bat = sub.add_parser("batch", help="semble-bench batch protocol for one repo")
    bat.add_argument("--root", required=True)
    bat.add_argument("--name", default="eval", help="the project's name (the repo's)")
    bat.add_argument("--queries", required=True)
    bat.add_argument("--out", required=True)
    bat.add_argument("-k", type=int, default=10)
    bat.add_argument("--mode", choices=sorted(MODES), default="hybrid")
    bat.add_argument("--limit-check", help="append here, per query, whether its first k results "
                     "are the same with --limit-against results asked for")
    bat.add_argument("--limit-against", type=int, default=60)
    bat.set_defaults(run=batch)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
