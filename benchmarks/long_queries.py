"""How the vector branch should use a query longer than the model's window.

Each query of ``long_queries.jsonl`` is a bug report written for requests 2.32.3 (the evalkit
dev corpus: ``build_dataset.py rebuild``), an environment dump and often a traceback, longer
than the 256 word pieces the embedded model reads; its targets are the files to change. The
vector branch alone ranks the chunks of the indexed corpus for each query, its query vector
made from the text the search embeds (the query without its frame lines) three ways:

- ``cut``: the whole text embedded at once, which the model cuts at its window (as before);
- ``mean``: the normalised mean of its parts' vectors (``kenning.embedding.long_queries``);
- ``max``: each part searched on its own, a chunk scored by its best part.

It prints the first-result accuracy and MRR@10 of a target file for each. Run it from the
repository root, on a corpus indexed with the local model:

    KENNING_HOME=/tmp/x python benchmarks/long_queries.py /tmp/evalkit/corpora/requests-2.32.3
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from kenning import config
from kenning.embedding import borrowed, long_queries
from kenning.retrieval import dense
from kenning.retrieval.query import analyze
from kenning.store import Index

QUERIES = Path(__file__).with_name("long_queries.jsonl")


def ranked_paths(snap: object, hits: list[tuple[int, float]]) -> list[str]:
    """The files of the vector hits, best first, each once."""
    owners = snap.chunks_of_vectors([v for v, _ in hits])  # type: ignore[attr-defined]
    order = [cid for v, _ in hits for cid in owners.get(v, ())]
    paths = {row[0]: row[1] for row in snap.chunk_rows(order)}  # type: ignore[attr-defined]
    return list(dict.fromkeys(paths[cid] for cid in order))


def main(root: Path) -> None:
    settings = config.load()
    index = Index.open(root.resolve(), settings)
    queries = [json.loads(line) for line in QUERIES.read_text().splitlines() if line.strip()]
    scores: dict[str, list[float]] = {"cut": [], "mean": [], "max": []}
    with borrowed(settings) as embedder, index.snapshot() as snap:
        for item in queries:
            text, targets = analyze(item["query"]).embedded, set(item["targets"])
            parts = long_queries.parts(embedder, text)
            vectors = {"cut": np.asarray(embedder.embed_query(text), np.float32),
                       "mean": long_queries.embed(embedder, text)}
            runs = {mode: dense.search(snap, vector) for mode, vector in vectors.items()}
            best: dict[int, float] = {}
            for part in parts:
                for vid, score in dense.search(snap, long_queries.embed(embedder, part)):
                    best[vid] = max(best.get(vid, -1.0), score)
            runs["max"] = sorted(best.items(), key=lambda hit: -hit[1])
            for mode, hits in runs.items():
                paths = ranked_paths(snap, hits)[:10]
                rank = next((i for i, p in enumerate(paths, 1) if p in targets), None)
                scores[mode].append(1.0 / rank if rank else 0.0)
            print(f"{len(parts)} parts, {embedder.count_tokens(text)} tokens: "
                  + ", ".join(f"{m} {scores[m][-1]:.2f}" for m in scores))
    for mode, values in scores.items():
        first = sum(v == 1.0 for v in values)
        print(f"{mode:5s} first {first}/{len(values)}  MRR@10 {sum(values) / len(values):.3f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
