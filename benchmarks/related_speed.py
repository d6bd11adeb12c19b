"""Latency of `related` (a location in, the code most like it out) and of a search whose
results carry their callers and callees, against a plain search, warm and in one process
over one real repository (query embedding excluded, no refresh).

    python benchmarks/related_speed.py --repo /tmp/evalkit/corpora/requests-2.32.3 --runs 5

The repository is indexed first with the configured embedder (set KENNING_HOME to keep the
index out of the user's). Each run searches every query of ``search_speed.QUERIES`` plainly
and with calls, and asks `related` about the first line of every 10th declaration, the three
taking turns.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from itertools import zip_longest
from pathlib import Path
from typing import Any

from search_speed import QUERIES, FixedQueries

LOCATIONS = 20  # declarations asked about per run


def _timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def _locations(root: Path, settings: Any) -> list[str]:
    """``PATH:LINE`` of the first line of every 10th declaration of the index, up to
    LOCATIONS."""
    from kenning.store import Index

    with Index.open(root, settings).snapshot() as snap:
        rows = snap._conn.execute(
            "SELECT path, start_line FROM chunks WHERE symbol IS NOT NULL AND kind != 'section' "
            "ORDER BY path, start_line").fetchall()
    return [f"{path}:{line}" for path, line in rows[::10][:LOCATIONS]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", required=True, help="the repository to index and search")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    from kenning import config
    from kenning.embedding import make_embedder
    from kenning.indexing.indexer import refresh
    from kenning.retrieval import ProjectRef
    from kenning.services.related import related
    from kenning.services.search import search

    root = Path(args.repo).resolve()
    settings = config.load()
    embedder = make_embedder(settings)
    indexed = refresh(root, settings, embedder=embedder, wait=True)
    fixed = FixedQueries(embedder, QUERIES)
    ref = [ProjectRef("bench", root)]
    locations = _locations(root, settings)
    paths: dict[str, Callable[[], list[Callable[[], Any]]]] = {
        "search": lambda: [lambda q=q: search(q, ref, settings=settings, embedder=fixed,
                                              refresh=False) for q in QUERIES],
        "search --calls": lambda: [lambda q=q: search(q, ref, settings=settings,
                                                      embedder=fixed, refresh=False,
                                                      calls=True) for q in QUERIES],
        "related": lambda: [lambda loc=loc: related(loc, ref, settings=settings,
                                                    refresh=False, cwd=root)
                            for loc in locations],
    }
    times: dict[str, list[float]] = {name: [] for name in paths}
    for calls in paths.values():  # warm the page cache and SQLite's statement cache
        for call in calls():
            call()
    for _ in range(args.runs):  # the paths take turns, so they meet the same machine load
        for turn in zip_longest(*([(name, call) for call in calls()]
                                  for name, calls in paths.items())):
            for name, call in filter(None, turn):
                times[name].append(_timed(call))
    base = statistics.median(times["search"])
    print(f"{root.name}: {indexed.files} files, {indexed.chunks} chunks; {args.runs} runs, "
          f"{len(QUERIES)} queries, {len(locations)} locations")
    print("| path | p50 ms | p90 ms | p50 / search p50 |")
    print("|---|---|---|---|")
    for name, found in times.items():
        ordered = sorted(found)
        p50 = statistics.median(ordered)
        print(f"| {name} | {p50:.1f} | {ordered[int(0.9 * len(ordered))]:.1f} "
              f"| {p50 / base:.2f} |")
    print(json.dumps({name: [round(t, 2) for t in found] for name, found in times.items()}))


if __name__ == "__main__":
    main()
