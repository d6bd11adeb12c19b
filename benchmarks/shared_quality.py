"""What a searcher loses by going shared, on the semble-bench dev repositories: every indexed
repository is published to one engine (as an organisation would: one collection, so the
engine's BM25 statistics span every project), then every query of the split is searched with
``search.backend = local`` and ``= shared``; NDCG@10 of each (the semble-bench scorer; mean of
the per-repository means, overall, by category and by language) and recall@10 of the shared
top 10 against the local one.

The indexes come from ``--eval-home``, which is only read: it is copied into the run's folder
first (a search appends to the home's usage log), and the run's ``KENNING_CONFIG`` points at
an empty file there. The engine is milvus-lite in the run's folder unless ``--uri`` names a
server.

    python benchmarks/shared_quality.py [--eval-home /tmp/kenning-eval-home] \\
        [--repos-dir /tmp/semble-bench/repos] [--repos fastapi,serde] [--work /tmp/sq] \\
        [--out rows.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_speed import THIS_TREE  # noqa: E402

sys.path.insert(0, str(THIS_TREE))


def _repo_mean(rows: list[dict[str, Any]], key: str) -> float:
    """Mean of the per-repository means (as the semble-bench report averages)."""
    by: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        by[r["repo"]].append(r[key])
    return statistics.mean(statistics.mean(v) for v in by.values()) if by else float("nan")


def _span(hit: dict[str, Any]) -> tuple[str, int, int]:
    return hit["path"], hit["start_line"], hit["end_line"]


def _report(rows: list[dict[str, Any]]) -> None:
    print(f"\n{len({r['repo'] for r in rows})} repositories, {len(rows)} queries")
    print("| slice | queries | local NDCG@10 | shared NDCG@10 | shared - local | "
          "recall@10 shared vs local |")
    print("|---|---|---|---|---|---|")
    slices = [("overall", rows)]
    slices += [(f"category {c}", [r for r in rows if r["cat"] == c])
               for c in sorted({r["cat"] for r in rows})]
    slices += [(f"language {lang}", [r for r in rows if r["lang"] == lang])
               for lang in sorted({r["lang"] for r in rows})]
    for name, part in slices:
        local, shared = _repo_mean(part, "local"), _repo_mean(part, "shared")
        print(f"| {name} | {len(part)} | {local:.3f} | {shared:.3f} | {shared - local:+.3f} | "
              f"{_repo_mean(part, 'recall'):.3f} |")
    for backend in ("local", "shared"):
        times = sorted(r[f"{backend}_ms"] for r in rows)
        print(f"{backend}: p50 {statistics.median(times):.1f} ms, "
              f"p90 {times[int(0.9 * (len(times) - 1))]:.1f} ms per query")
    worst = sorted(rows, key=lambda r: r["shared"] - r["local"])[:8]
    print("\nlargest losses (repo, query, local, shared):")
    for r in worst:
        if r["shared"] < r["local"]:
            print(f"  {r['repo']}: {r['query'][:70]!r} {r['local']:.3f} -> {r['shared']:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eval-home", default="/tmp/kenning-eval-home",
                        help="the home holding the repositories' indexes (only read)")
    parser.add_argument("--repos-dir", default="/tmp/semble-bench/repos")
    parser.add_argument("--kit", default="/work/shared/eval/semble-bench",
                        help="semble-bench: score.py, repos.json, annotations/")
    parser.add_argument("--repos", default="", help="comma-separated names (default: every "
                        "repository of the split with an index)")
    parser.add_argument("--uri", help="a Milvus server (default: milvus-lite in --work)")
    parser.add_argument("--work", help="folder for the home copy and the engine file (kept; "
                        "a later run reuses both)")
    parser.add_argument("--out", help="write the per-query rows here (JSON)")
    parser.add_argument("--branches", default="dense,lexical,symbol",
                        help="retrieval branches to search with (one alone shows where local "
                        "and shared differ)")
    args = parser.parse_args()

    work = Path(args.work or tempfile.mkdtemp(prefix="kenning-shared-quality-"))
    work.mkdir(parents=True, exist_ok=True)
    home = work / "home"
    if not home.exists():  # a copy: searching appends to the home's usage log
        shutil.copytree(args.eval_home, home, ignore=shutil.ignore_patterns("*.lock"))
    os.environ["KENNING_HOME"] = str(home)
    os.environ["KENNING_CONFIG"] = str(work / "config.toml")
    (work / "config.toml").touch()

    sys.path.insert(0, args.kit)
    import score as sb  # semble-bench's scorer
    from kenning import config
    from kenning.embedding import make_embedder
    from kenning.errors import KenningError
    from kenning.retrieval import ProjectRef
    from kenning.services.search import search
    from kenning.shared import publish
    from kenning.store import Index

    kit = Path(args.kit)
    specs = sb.load_specs(kit / "repos.json", kit / "repos_extra.json")
    tasks = sb.load_tasks(kit / "annotations", specs)
    wanted = set(filter(None, args.repos.split(",")))
    uri = args.uri or str(work / "shared.db")
    local_settings = config.load({"shared.uri": uri})
    shared_settings = config.load({"shared.uri": uri, "search.backend": "shared"})
    embedder = make_embedder(local_settings)

    refs: dict[str, ProjectRef] = {}
    print("| repository | chunks sent | publish s |")
    print("|---|---|---|")
    for name, spec in sorted(specs.items()):
        root = Path(args.repos_dir) / name / (spec.benchmark_root or "")
        if (wanted and name not in wanted) or not root.is_dir():
            continue
        try:
            index = Index.open(root, local_settings, embedder=embedder)
            done = publish(root, local_settings, embedder=embedder, refresh=False)
        except KenningError as exc:  # not indexed (yet), or incomplete
            print(f"| {name} | skipped: {exc.message} | |")
            continue
        refs[name] = ProjectRef(index.project_id, index.root)
        print(f"| {name} | {done.chunks_sent} | {done.seconds:.1f} |", flush=True)

    rows: list[dict[str, Any]] = []
    for task in tasks:
        ref = refs.get(task.repo)
        if ref is None:
            continue
        row: dict[str, Any] = {"repo": task.repo, "lang": specs[task.repo].language,
                               "cat": task.category, "query": task.query}
        tops = {}
        for backend, settings in (("local", local_settings), ("shared", shared_settings)):
            started = time.perf_counter()
            out = search(task.query, [ref], settings=settings, limit=10, refresh=False,
                         embedder=embedder, branches=args.branches.split(","),
                         shared_projects=[ref.id])
            row[f"{backend}_ms"] = (time.perf_counter() - started) * 1000
            for warning in out["warnings"]:
                print(f"  {task.repo} {backend}: {warning}", file=sys.stderr)
            hits = out["results"]
            row[backend] = sb.score_query([sb.Hit(h["path"], h["start_line"], h["end_line"],
                                                  h["score"]) for h in hits], task, 10, True)[0]
            tops[backend] = [_span(h) for h in hits]
            row[f"{backend}_hits"] = tops[backend]
        local_top = set(tops["local"])
        row["recall"] = (len(local_top & set(tops["shared"])) / len(local_top)
                         if local_top else 1.0)
        rows.append(row)
    embedder.close()
    if args.out:
        Path(args.out).write_text(json.dumps(rows))
    _report(rows)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
