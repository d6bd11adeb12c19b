"""The vector branch: a Hamming top-N over the sign bits, rescored with the int8 rows.

1-bit vectors find the candidates; the int8 rows give them a cosine close to the float one,
which orders them and is what the relevance floor is measured on (never the Hamming distance).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from kenning import kernels
from kenning.embedding.profiles import normalise_name
from kenning.store import Snapshot, graph

SHORTLIST = 300  # Hamming candidates rescored per query
# Rescored cosine below which a chunk is not relevant to the query; symbol matches are kept
# whatever their cosine. For all-MiniLM-L6-v2: the highest floor that keeps nearly every genuine
# target while most irrelevant queries get no result (benchmarks/README.md).
MINILM_FLOOR = 0.15
# A floor holds only for the model it was measured on: e5 and bge cosines sit high, OpenAI's
# low, so one number would remove nothing for some models and true hits for others. A model
# not listed gets no floor: its results are ranked, never cut by score. Ollama's all-minilm
# (its default tag, 22m or l6-v2) is the same model as the embedded one.
FLOORS = {name: MINILM_FLOOR
          for name in ("all-minilm-l6-v2", "all-minilm", "all-minilm:22m", "all-minilm:l6-v2")}
# The cosine of a one- or two-word query ("application", "Rack::Builder") is too low and too
# flat to judge relevance; such queries rely on their words and symbols being present instead.
FLOOR_MIN_TERMS = 3


def relevance_floor(model: str) -> float | None:
    """The floor measured for ``model`` (whatever its path prefix or ``:latest`` tag), else
    None."""
    return FLOORS.get(normalise_name(model).rsplit("/", 1)[-1])


def _shortlist(snap: Snapshot, bits: np.ndarray, k: int, allowed: np.ndarray | None,
               ann_dir: Path | None) -> np.ndarray:
    """Hamming candidates: from the HNSW graph when it holds exactly the snapshot's rows of the
    snapshot's vector epoch, else (missing, stale, another epoch) an exact scan."""
    ann = (graph.current(ann_dir, int(snap.descriptor["dims"]), snap.vector_epoch,
                         snap.vector_rows) if ann_dir is not None else None)
    if ann is not None:
        ids, _ = ann.search(bits, k, allowed)
        return ids[0][ids[0] >= 0]
    ids, _ = kernels.hamming_topk(bits, snap.bits, k, allowed)
    return ids[0]


def search(snap: Snapshot, query_vector: np.ndarray, *, shortlist: int = SHORTLIST,
           allowed: np.ndarray | None = None,
           ann_dir: Path | None = None) -> list[tuple[int, float]]:
    """``(vector id, rescored cosine)`` best first, among the rows ``allowed`` (a bool mask over
    the vector rows, from ``Snapshot.allowed_vectors``) when given. ``ann_dir`` (the index
    folder, given when ``index.vector_search`` asks for the graph) lets the shortlist come from
    its HNSW graph."""
    if snap.vector_rows == 0 or (allowed is not None and not allowed.any()):
        return []
    bits = kernels.binarize(query_vector[None, :], snap.center)
    candidates = _shortlist(snap, bits, shortlist, allowed, ann_dir)
    cosines = kernels.rescore(query_vector, np.ascontiguousarray(snap.int8[candidates]),
                              np.ascontiguousarray(snap.scales[candidates]))
    order = np.argsort(-cosines, kind="stable")
    return list(zip(candidates[order].tolist(), cosines[order].tolist(), strict=True))


def cosines(snap: Snapshot, query_vector: np.ndarray,
            chunk_ids: Iterable[int]) -> dict[int, float]:
    """The rescored cosine of each chunk that has a vector (chunks still unembedded are absent)."""
    rows = snap.vectors_of_chunks(chunk_ids)
    if not rows:
        return {}
    vids = np.asarray([r[1] for r in rows], dtype=np.int64)
    scores = kernels.rescore(query_vector, np.ascontiguousarray(snap.int8[vids]),
                             np.ascontiguousarray(snap.scales[vids]))
    return {row[0]: float(score) for row, score in zip(rows, scores, strict=True)}
