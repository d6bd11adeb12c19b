"""Refit the confidence model of ``kenning.retrieval.confidence`` and measure its weak flags.

Searches the dev kits in-process (as eval_quality.py does; indexes are reused from its
KENNING_HOME), records each of the first 10 results' evidence and whether it answers, then fits
the module's two logistic regressions (Newton's method, L2 1e-2 on the coefficients): the
search's, on whether a question is answerable; the result's, on whether each result of an
answerable question answers it. ``WEAK_BELOW`` is the threshold that flags the most absent
questions while it flags the first result of at most 10% of the answerable ones (the lowest such).
It prints the coefficients to paste into the module and, for the fitted and the shipped values:
the share of absent-answer questions that get ``no_strong_match`` (goal >= 80%) and the share of
answerable questions whose first result is weak (goal <= 10%).

The dev data: semble-bench dev repositories (a result answers when it overlaps a target), the
docstring dev set (a seeded sample per package; a result answers when it overlaps the function)
and benchmarks/absent_questions.jsonl (questions whose answer is not in the repository, each
with the pattern that proves it: checked here, over the source files, before it is used).

    python benchmarks/fit_confidence.py --repos-dir /tmp/conf/repos \\
        --repo chi --repo express --repo model2vec --repo rack --repo sinatra \\
        --docstring-queries /work/shared/eval/dev/queries.jsonl \\
        --corpora-dir /tmp/evalkit/corpora --sample 40 --rows /tmp/conf/rows.jsonl

``--rows`` keeps the evidence: given again with ``--reuse``, it refits without searching.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import eval_quality  # noqa: E402
import grep_baseline  # noqa: E402
from kenning.retrieval import confidence  # noqa: E402

HERE = Path(__file__).resolve().parent
K = 10
FIRST_FLAGGED_GOAL = 0.10
L2 = 1e-2


def _semble_kit(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("semble_score", path / "score.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["semble_score"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _questions(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every question: its set, project name, root, query, and how to tell an answer."""
    out: list[dict[str, Any]] = []
    kit = Path(args.semble_kit)
    score = _semble_kit(kit)
    specs = score.load_specs(kit / "repos.json", kit / "repos_extra.json")
    roots = {}
    for name in args.repo:
        spec = specs[name]
        roots[name] = Path(args.repos_dir) / name / (spec.benchmark_root or "")
    for task in score.load_tasks(kit / "annotations", specs):
        if task.repo in roots:
            out.append({"set": "semble", "name": task.repo, "root": roots[task.repo],
                        "query": task.query,
                        "answers": [(t.path, t.start, t.end) for t in task.targets]})
    by_package: dict[str, list[dict[str, Any]]] = {}
    for line in Path(args.docstring_queries).read_text().splitlines():
        if line:
            item = json.loads(line)
            by_package.setdefault(item["package"], []).append(item)
    for package, items in sorted(by_package.items()):
        if args.sample and len(items) > args.sample:
            items = random.Random(0).sample(items, args.sample)
        root = Path(args.corpora_dir) / package
        roots[package] = root
        out += [{"set": "docstring", "name": re.sub(r"-[0-9][^-]*$", "", package),
                 "root": root, "query": q["query"],
                 "answers": [(q["path"], q["start_line"], q["end_line"])]} for q in items]
    for line in Path(args.absent).read_text().splitlines():
        if not line:
            continue
        item = json.loads(line)
        root = roots[item["repo"]]
        _check_absent(root, item)
        out.append({"set": "absent", "name": re.sub(r"-[0-9][^-]*$", "", item["repo"]),
                    "root": root, "query": item["query"], "answers": []})
    return out


_sources: dict[Path, list[Any]] = {}


def _check_absent(root: Path, item: dict[str, Any]) -> None:
    if root not in _sources:
        _sources[root] = grep_baseline.source_files(root)
    pattern = re.compile(item["absent"], re.IGNORECASE)
    for f in _sources[root]:
        for number, line in enumerate(f.lines, 1):
            if pattern.search(line):
                raise SystemExit(f"{item['query']!r}: /{item['absent']}/ is in "
                                 f"{root / f.path}:{number}, so its answer may be there.")


def _answers(hit: dict[str, Any], answers: list[tuple[str, int | None, int | None]]) -> bool:
    for path, start, end in answers:
        same_file = hit["path"] == path or hit["path"].endswith("/" + path)
        if same_file and (start is None or end is None
                          or not (hit["end_line"] < start or hit["start_line"] > end)):
            return True
    return False


def _collect(args: argparse.Namespace) -> list[dict[str, Any]]:
    settings, embedder = eval_quality._setup()
    seen: list[tuple[list[float], bool]] = []
    features = confidence.features

    def recording(result: dict[str, Any], *rest: Any) -> list[float]:
        values = features(result, *rest)
        seen.append((values, bool(result.get("weak"))))  # weak by the older rules
        return values

    confidence.features = recording  # type: ignore[assignment]
    rows = []
    indexed: set[Path] = set()
    for q in _questions(args):
        if q["root"] not in indexed:
            eval_quality._index(q["root"], settings, embedder)
            indexed.add(q["root"])
        seen.clear()
        hits = eval_quality._search(q["root"], q["name"], q["query"], "hybrid", K, settings,
                                    embedder)
        rows.append({"set": q["set"], "name": q["name"], "query": q["query"],
                     "results": [{"features": values, "older_weak": older,
                                  "answers": _answers(hit, q["answers"])}
                                 for (values, older), hit in zip(seen, hits, strict=True)]})
    confidence.features = features  # type: ignore[assignment]
    return rows


def fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Logistic regression weights (intercept first) by Newton's method."""
    x1 = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(x1.shape[1])
    penalty = L2 * np.eye(len(w))
    penalty[0, 0] = 0
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(x1 @ w, -50, 50)))
        grad = x1.T @ (p - y) + penalty @ w
        hess = (x1.T * (p * (1 - p))) @ x1 + penalty
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


Model = tuple[np.ndarray, np.ndarray]  # the search's weights, the result's (intercept first)


def _sigmoid(w: np.ndarray, x: list[float]) -> float:
    return float(1 / (1 + np.exp(-np.clip(w[0] + np.dot(w[1:], x), -50, 50))))


def fit_both(rows: list[dict[str, Any]]) -> Model:
    """The search's model on whether each question is answerable, the result's on whether each
    result of an answerable question answers it."""
    asked = [row for row in rows if row["results"]]
    query = fit(np.array([confidence.of_search([r["features"] for r in row["results"]])
                          for row in asked]),
                np.array([float(row["set"] != "absent") for row in asked]))
    results = [r for row in rows if row["set"] != "absent" for r in row["results"]]
    result = fit(np.array([r["features"][:5] for r in results]),
                 np.array([float(r["answers"]) for r in results]))
    return query, result


def shares(rows: list[dict[str, Any]], model: Model, below: float) -> dict[str, float]:
    """Absent questions flagged, answerable ones whose first result is weak, and the
    answerable ones flagged as a whole (no_strong_match)."""
    flags = []
    for row in rows:
        search = confidence.of_search([r["features"] for r in row["results"]])
        flags.append([bool(r["older_weak"]) or _sigmoid(model[0], search)
                      * _sigmoid(model[1], r["features"][:5]) < below for r in row["results"]])
    absent = [f for f, row in zip(flags, rows, strict=True) if row["set"] == "absent"]
    present = [f for f, row in zip(flags, rows, strict=True) if row["set"] != "absent"]
    return {"absent_flagged": sum(all(f) for f in absent) / max(len(absent), 1),
            "answerable_first_weak": sum(bool(f) and f[0] for f in present) / max(len(present), 1),
            "answerable_flagged": sum(all(f) for f in present) / max(len(present), 1)}


def _python(name: str, w: np.ndarray) -> str:
    return (f"{name}_INTERCEPT = {w[0]:.4f}\n"
            f"{name}_COEFFICIENTS = ({', '.join(f'{c:.4f}' for c in w[1:])})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--semble-kit", default="/work/shared/eval/semble-bench")
    parser.add_argument("--repos-dir", default="/tmp/semble-bench/repos")
    parser.add_argument("--repo", action="append", default=[])
    parser.add_argument("--docstring-queries", default="/work/shared/eval/dev/queries.jsonl")
    parser.add_argument("--corpora-dir", default="/tmp/evalkit/corpora")
    parser.add_argument("--sample", type=int, default=40)
    parser.add_argument("--absent", default=str(HERE / "absent_questions.jsonl"))
    parser.add_argument("--rows", help="JSONL of the evidence recorded (written, or read with "
                        "--reuse)")
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    if args.reuse:
        rows = [json.loads(line) for line in Path(args.rows).read_text().splitlines() if line]
    else:
        rows = _collect(args)
        if args.rows:
            Path(args.rows).write_text("".join(json.dumps(r) + "\n" for r in rows))
    results = [r for row in rows for r in row["results"]]
    model = fit_both(rows)
    below = 0.01
    kept = [(shares(rows, model, t), round(float(t), 2)) for t in np.arange(0.01, 1.0, 0.01)]
    kept = [(s, t) for s, t in kept if s["answerable_first_weak"] <= FIRST_FLAGGED_GOAL]
    if kept:  # the most absent questions flagged, at the lowest threshold that does it
        below = max(kept, key=lambda st: (st[0]["absent_flagged"], -st[1]))[1]
    print(f"{len(rows)} questions ({sum(row['set'] == 'absent' for row in rows)} absent), "
          f"{len(results)} results, {sum(r['answers'] for r in results)} answering")
    print(_python("QUERY", model[0]), f"# {confidence.QUERY_FEATURES}")
    print(_python("RESULT", model[1]), f"# {confidence.FEATURES[:5]}")
    print(f"WEAK_BELOW = {below:.2f}")
    print("fitted:", json.dumps(shares(rows, model, below)))
    shipped = (np.array([confidence.QUERY_INTERCEPT, *confidence.QUERY_COEFFICIENTS]),
               np.array([confidence.RESULT_INTERCEPT, *confidence.RESULT_COEFFICIENTS]))
    print("shipped:", json.dumps(shares(rows, shipped, confidence.WEAK_BELOW)))
    for name in sorted({row["name"] for row in rows}):
        part = [row for row in rows if row["name"] == name]
        print(f"  {name}: {json.dumps(shares(part, shipped, confidence.WEAK_BELOW))}")


if __name__ == "__main__":
    main()
