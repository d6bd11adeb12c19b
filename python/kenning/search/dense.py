"""The vector branch: a Hamming top-N over the sign bits, rescored with the int8 rows.

1-bit vectors find the candidates; the int8 rows give them a cosine close to the float one,
which orders them and is what the relevance floor is measured on (never the Hamming distance).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from kenning import kernels
from kenning.store import Snapshot, graph

SHORTLIST = 300  # Hamming candidates rescored per query
ANN_FILE = graph.NAME  # the HNSW graph's file at vector epoch 0 (``graph.path`` names any epoch's)


def allowed_vectors(conn: sqlite3.Connection, rows: int, where: str,
                    params: list[object]) -> np.ndarray:
    """Vector ids of the chunks that pass a filter: the scan's ``allowed`` set."""
    sql = ("SELECT DISTINCT v.vector_id FROM chunks c JOIN vectors v "
           f"ON v.content_hash = c.content_hash WHERE v.vector_id < ? AND {where}")
    ids = [row[0] for row in conn.execute(sql, [rows, *params])]
    return np.asarray(sorted(ids), dtype=np.int64)


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
    """``(vector id, rescored cosine)`` best first. ``ann_dir`` (the index folder, given when
    ``index.vector_search`` asks for the graph) lets the shortlist come from its HNSW graph."""
    if snap.vector_rows == 0 or (allowed is not None and len(allowed) == 0):
        return []
    bits = kernels.binarize(query_vector[None, :], snap.center)
    candidates = _shortlist(snap, bits, shortlist, allowed, ann_dir)
    cosines = kernels.rescore(query_vector, np.ascontiguousarray(snap.int8[candidates]),
                              np.ascontiguousarray(snap.scales[candidates]))
    order = np.argsort(-cosines, kind="stable")
    return list(zip(candidates[order].tolist(), cosines[order].tolist(), strict=True))


def chunks_of(conn: sqlite3.Connection, vector_ids: Iterable[int], where: str = "",
              params: list[object] | None = None) -> dict[int, list[int]]:
    """vector id -> the chunk ids that share it (and pass the filter)."""
    ids = list(vector_ids)
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    sql = ("SELECT v.vector_id, c.id FROM vectors v "
           f"JOIN chunks c ON c.content_hash = v.content_hash WHERE v.vector_id IN ({marks})")
    args: list[object] = list(ids)
    if where:
        sql += f" AND {where}"
        args += params or []
    found: dict[int, list[int]] = {}
    for vector_id, chunk_id in conn.execute(sql, args):
        found.setdefault(vector_id, []).append(chunk_id)
    for chunk_list in found.values():
        chunk_list.sort()
    return found


def cosines(conn: sqlite3.Connection, snap: Snapshot, query_vector: np.ndarray,
            chunk_ids: Iterable[int]) -> dict[int, float]:
    """The rescored cosine of each chunk that has a vector (chunks still unembedded are absent)."""
    ids = list(chunk_ids)
    if not ids or snap.vector_rows == 0:
        return {}
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        "SELECT c.id, v.vector_id FROM chunks c JOIN vectors v ON v.content_hash = c.content_hash "
        f"WHERE c.id IN ({marks}) AND v.vector_id < ?", [*ids, snap.vector_rows]).fetchall()
    if not rows:
        return {}
    vids = np.asarray([r[1] for r in rows], dtype=np.int64)
    scores = kernels.rescore(query_vector, np.ascontiguousarray(snap.int8[vids]),
                             np.ascontiguousarray(snap.scales[vids]))
    return {row[0]: float(score) for row, score in zip(rows, scores, strict=True)}
