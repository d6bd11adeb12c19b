"""The whole search on long bug reports: where the first file to change ranks.

The queries of ``long_queries.jsonl`` (bug reports for requests 2.32.3, half with a traceback)
are searched as a user would (all branches, ten results, no refresh) on the indexed corpus, and
the file rank of the first target is scored: first-result accuracy and MRR@10. It imports only
what every tree has, so the same command measures another tree's sources:

    KENNING_HOME=/tmp/x PYTHONPATH=python python benchmarks/bug_reports.py CORPUS
    KENNING_HOME=/tmp/x PYTHONPATH=/tmp/head/python python benchmarks/bug_reports.py CORPUS
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kenning import config
from kenning.embedding import borrowed
from kenning.retrieval import resolve_projects
from kenning.services.search import search

QUERIES = Path(__file__).with_name("long_queries.jsonl")


def main(root: Path) -> None:
    settings = config.load()
    refs = resolve_projects(settings, [root])
    items = [json.loads(line) for line in QUERIES.read_text().splitlines() if line.strip()]
    scores: dict[bool, list[float]] = {True: [], False: []}
    with borrowed(settings) as embedder:
        for item in items:
            found = search(item["query"], refs, settings=settings, embedder=embedder,
                           refresh=False, limit=10)
            files = list(dict.fromkeys(hit["path"] for hit in found["results"]))
            rank = next((i for i, p in enumerate(files, 1) if p in item["targets"]), None)
            scores["Traceback (most recent call last)" in item["query"]].append(
                1.0 / rank if rank else 0.0)
    for name, values in (("with a traceback", scores[True]), ("without", scores[False]),
                         ("all", scores[True] + scores[False])):
        first = sum(v == 1.0 for v in values)
        print(f"{name:17s} first {first}/{len(values)}  MRR@10 {sum(values) / len(values):.3f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
