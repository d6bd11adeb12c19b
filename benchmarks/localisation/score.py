"""Score the dev localisation set: bug reports in, the files their fix changed as targets.

Runs the semble-bench scorer over `annotations/` (one file per repository, the scorer's
format) and prints NDCG@10 and first-result accuracy (the share of queries whose first result
is a file the fix changed), overall and per repository:

    # kenning hybrid search, through eval_quality.py's batch adapter (one process per repo)
    PYTHONPATH=python python benchmarks/localisation/score.py --out /tmp/localisation

    # a built-in baseline of the scorer, for comparison
    python benchmarks/localisation/score.py --method bm25 --out /tmp/localisation-bm25

    # the table again from a per-query file written by an earlier run
    python benchmarks/localisation/score.py --from-per-query /tmp/localisation/per_query.jsonl

The scorer is `../shared/eval/semble-bench/score.py` beside the checkout unless `--scorer`
says otherwise; it finds the repository checkouts in its own default folder (`--repos-dir`).
KENNING_HOME defaults to /tmp/kenning-eval-home as in eval_quality.py, so indexes are reused.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
ANNOTATIONS = HERE / "annotations"
ADAPTER = REPO_ROOT / "benchmarks" / "eval_quality.py"
DEFAULT_SCORER = REPO_ROOT.parent / "shared" / "eval" / "semble-bench" / "score.py"


def run_scorer(args: argparse.Namespace, per_query: Path, summary: Path) -> None:
    cmd = [sys.executable, str(args.scorer), "run", "--annotations", str(args.annotations),
           "--out", str(summary), "--per-query", str(per_query), "--quiet"]
    if args.method == "kenning":
        batch = (f"{shlex.quote(sys.executable)} {shlex.quote(str(ADAPTER))} batch"
                 " --root {root} --name {repo} --queries {queries} --out {out} -k {k}"
                 f" --mode {args.mode}")
        cmd += ["--method", "batch", "--label", f"kenning-{args.mode}", "--batch-cmd", batch]
    else:
        cmd += ["--method", args.method, "--label", args.method]
    if args.repos_dir:
        cmd += ["--repos-dir", args.repos_dir]
    for repo in args.repo:
        cmd += ["--repo", repo]
    env = {**os.environ}
    env.setdefault("KENNING_HOME", "/tmp/kenning-eval-home")
    env.setdefault("KENNING_CONFIG", "/tmp/kenning-eval-home/config.toml")
    subprocess.run(cmd, check=True, env=env)


def first_is_target(row: dict[str, Any]) -> bool:
    """True when the first result matches a target: some target's first match is at rank 1."""
    return any(rank == 1 for rank in row["ranks"])


def table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_repo[row["repo"]].append(row)
    repos = {
        repo: {"queries": len(items),
               "ndcg10": statistics.fmean(r["ndcg10"] for r in items),
               "first": sum(first_is_target(r) for r in items)}
        for repo, items in sorted(by_repo.items())
    }
    return {
        "repos": repos,
        "queries": len(rows),
        "ndcg10_repo_mean": statistics.fmean(r["ndcg10"] for r in repos.values()),
        "ndcg10_query_mean": statistics.fmean(r["ndcg10"] for r in rows),
        "first": sum(r["first"] for r in repos.values()),
        "first_repo_mean": statistics.fmean(r["first"] / r["queries"] for r in repos.values()),
    }


def render(t: dict[str, Any]) -> str:
    lines = [f"{'repo':20s} {'queries':>7s} {'NDCG@10':>8s} {'first':>9s}"]
    for repo, r in t["repos"].items():
        lines.append(f"{repo:20s} {r['queries']:7d} {r['ndcg10']:8.3f} "
                     f"{r['first']:4d}/{r['queries']:<4d}")
    lines.append(f"NDCG@10 {t['ndcg10_repo_mean']:.3f} (mean over {len(t['repos'])} repos; "
                 f"{t['ndcg10_query_mean']:.3f} over {t['queries']} queries)")
    lines.append(f"first-result accuracy {t['first']}/{t['queries']} = "
                 f"{t['first'] / t['queries']:.3f} ({t['first_repo_mean']:.3f} mean over repos)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--method", default="kenning",
                        help="kenning (batch adapter) or a built-in method of the scorer "
                             "(bm25, bm25-file, ripgrep, ripgrep-keywords)")
    parser.add_argument("--mode", default="hybrid", help="kenning: eval_quality.py's --mode")
    parser.add_argument("--annotations", type=Path, default=ANNOTATIONS,
                        help="annotation folder (default: this set's)")
    parser.add_argument("--scorer", type=Path, default=DEFAULT_SCORER)
    parser.add_argument("--repos-dir", help="the scorer's --repos-dir (one checkout per repo)")
    parser.add_argument("--repo", action="append", default=[], help="only this repository")
    parser.add_argument("--out", type=Path, default=Path("/tmp/localisation-score"),
                        help="folder for per_query.jsonl, summary.json and table.json")
    parser.add_argument("--from-per-query", type=Path,
                        help="tabulate this per-query JSONL instead of running the scorer")
    args = parser.parse_args()

    per_query = args.from_per_query
    if per_query is None:
        args.out.mkdir(parents=True, exist_ok=True)
        per_query = args.out / "per_query.jsonl"
        run_scorer(args, per_query, args.out / "summary.json")
    rows = [json.loads(line) for line in per_query.read_text().splitlines() if line.strip()]
    if not rows:
        raise SystemExit(f"{per_query} holds no scored query.")
    result = table(rows)
    if args.from_per_query is None:
        (args.out / "table.json").write_text(json.dumps(result, indent=2) + "\n")
    print(render(result))


if __name__ == "__main__":
    main()
