"""Measure the relevance floor: rescored cosines of genuine targets vs deliberately irrelevant
queries, per indexed corpus of the docstring dev set (and any other indexed roots).

    python benchmarks/eval_floor.py --queries /work/shared/eval/dev/queries.jsonl \\
        --corpora-dir /tmp/evalkit/corpora [--roots /tmp/semble-bench/repos/chi ...]

The floor must sit below nearly every genuine target's cosine (or search would hide the right
answer) and above what irrelevant queries reach (or they return confident noise).
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict
from pathlib import Path

import numpy as np

IRRELEVANT = [
    "chocolate cake recipe with fresh strawberries", "who won the football world cup in 1998",
    "best hiking trails in the alps in summer", "how to grow tomatoes on a balcony",
    "symptoms of the common cold in children", "the history of the roman empire",
    "cheap flights from london to new york", "how to knit a wool scarf",
    "lyrics of a famous love song", "train a puppy to sit and stay",
    "what is the capital city of australia", "tips for a job interview as a nurse",
    "the plot of a mystery novel set in venice", "how to bake sourdough bread at home",
    "the rules of chess for beginners", "migrating birds of northern europe",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--corpora-dir", required=True)
    parser.add_argument("--roots", nargs="*", default=[])
    parser.add_argument("--sample", type=int, default=100)
    args = parser.parse_args()
    os.environ.setdefault("KENNING_HOME", "/tmp/kenning-eval-home")
    os.environ.setdefault("KENNING_CONFIG", "/tmp/kenning-eval-home/config.toml")
    from kenning import config
    from kenning.embedding import make_embedder
    from kenning.retrieval import dense
    from kenning.store import Index

    settings = config.load()
    embedder = make_embedder(settings)
    queries = [json.loads(x) for x in Path(args.queries).read_text().splitlines() if x]
    by_package = defaultdict(list)
    for q in queries:
        by_package[q["package"]].append(q)
    roots = [Path(args.corpora_dir) / p for p in sorted(by_package)] + [Path(r) for r in args.roots]
    genuine_target, genuine_top, irrelevant_top = [], [], []
    irrelevant_vectors = [embedder.embed_query(q) for q in IRRELEVANT]
    for root in roots:
        index = Index.open(root.resolve(), settings, embedder=embedder)
        with index.snapshot() as snap:
            for vector in irrelevant_vectors:
                hits = dense.search(snap, vector)
                irrelevant_top.append(hits[0][1] if hits else 0.0)
            for q in by_package.get(root.name, [])[: args.sample]:
                vector = embedder.embed_query(q["query"])
                hits = dense.search(snap, vector)
                genuine_top.append(hits[0][1] if hits else 0.0)
                # the chunks of the target's file that overlap its lines
                ids = [r.id for r in snap.file_chunks([q["path"]]).get(q["path"], [])
                       if not (r[4] < q["start_line"] or r[3] > q["end_line"])]
                scores = dense.cosines(snap, vector, ids)
                if scores:
                    genuine_target.append(max(scores.values()))

    def pct(values: list[float]) -> str:
        p = np.percentile(values, [1, 5, 10, 50, 90, 99])
        return " ".join(f"{v:.3f}" for v in p)

    print("percentiles: p1 p5 p10 p50 p90 p99")
    print(f"genuine target cosine  ({len(genuine_target)}): {pct(genuine_target)}")
    print(f"genuine top-1 cosine   ({len(genuine_top)}): {pct(genuine_top)}")
    print(f"irrelevant top-1 cosine ({len(irrelevant_top)}): {pct(irrelevant_top)}")
    for floor in (0.1, 0.12, 0.15, 0.18, 0.2, 0.25):
        kept = np.mean([v >= floor for v in genuine_target])
        blocked = np.mean([v < floor for v in irrelevant_top])
        print(f"floor {floor:.2f}: keeps {kept:.1%} of genuine targets, "
              f"empties {blocked:.1%} of irrelevant queries")


if __name__ == "__main__":
    main()
