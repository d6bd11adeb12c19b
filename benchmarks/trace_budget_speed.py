"""Latency of the query paths of a bug report against a plain search, in one run: a short
question, the same question with a token budget, a traceback query (report, frames and error
line) and a long bug report without a trace (embedded in parts). Warm and in-process, the query
embedding included (a long query embeds several parts), no refresh.

    KENNING_HOME=/tmp/x python benchmarks/trace_budget_speed.py /tmp/evalkit/corpora/requests-2.32.3

The corpus must be indexed with the local model first (`kenning index`); the traceback and the
long report are the first of each kind in ``long_queries.jsonl``.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from kenning import config
from kenning.embedding import borrowed
from kenning.retrieval import resolve_projects
from kenning.services.search import search

RUNS = 15
PLAIN = "strip the authorization header when a redirect goes to another host"
QUERIES = Path(__file__).with_name("long_queries.jsonl")


def main(root: Path) -> None:
    settings = config.load()
    refs = resolve_projects(settings, [root])
    reports = [json.loads(line)["query"] for line in QUERIES.read_text().splitlines()]
    traced = next(q for q in reports if "Traceback (most recent call last)" in q)
    untraced = next(q for q in reports if "Traceback" not in q)
    cases: dict[str, tuple[str, dict[str, Any]]] = {
        "plain": (PLAIN, {}),
        "budget 1500": (PLAIN, {"budget_tokens": 1500}),
        "traceback": (traced, {}),
        "long report": (untraced, {}),
    }
    timings: dict[str, list[float]] = {name: [] for name in cases}
    with borrowed(settings) as embedder:
        for query, extra in cases.values():  # warm: the model, the index, the caches
            search(query, refs, settings=settings, embedder=embedder, refresh=False, **extra)
        for _ in range(RUNS):
            for name, (query, extra) in cases.items():
                started = time.perf_counter()
                found = search(query, refs, settings=settings, embedder=embedder,
                               refresh=False, **extra)
                timings[name].append((time.perf_counter() - started) * 1000)
                assert found["results"], name
    base = statistics.median(timings["plain"])
    for name, values in timings.items():
        p50 = statistics.median(values)
        p90 = sorted(values)[int(0.9 * (len(values) - 1))]
        print(f"{name:12s} p50 {p50:7.1f} ms  p90 {p90:7.1f} ms  x{p50 / base:.2f} of plain")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
