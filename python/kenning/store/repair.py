"""Rebuilding a damaged index (``kenning index --full``), keeping every vector that is intact.

The caller holds the index lock. Vectors are kept only from blocks whose checksum still
matches (``store.integrity``) and only rows an embedder can have made (``store.plausible``), so
nothing damaged or forged survives; everything else (files, chunks, the full-text table) is
rebuilt by the refresh that follows, and only chunks whose vector was lost are embedded again.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kenning.store import db, graph, integrity, plausible, vectors

if TYPE_CHECKING:
    from kenning.store import Index


@dataclass(frozen=True)
class Repair:
    problems: list[str]  # what was damaged
    vectors_kept: int


def repair_if_damaged(index: Index) -> Repair | None:
    """Check the whole index; if anything is damaged, rebuild it from scratch with the intact
    vectors in it and return what was found (None: the index is sound)."""
    if not (index.dir / db.DB_NAME).exists():
        return None
    problems = integrity.full_check(index.dir)
    if not problems:
        return None
    hashes, rows = _intact_vectors(index.dir)
    for path in index.dir.iterdir():  # everything but the lock and the centring vector
        if path.name.startswith((db.DB_NAME, "vectors.")) or graph.SUFFIX in path.name:
            path.unlink(missing_ok=True)
    from kenning.store.writer import IndexWriter

    with IndexWriter(index) as writer:  # a new database, with a new index token
        if hashes:
            writer.add_rows(hashes, rows)
    return Repair(problems, len(hashes))


def _intact_vectors(directory: Path) -> tuple[list[bytes], vectors.VectorRows]:
    """The rows of every block whose checksum still matches, with their content hashes."""
    empty: tuple[list[bytes], vectors.VectorRows] = ([], vectors.VectorRows(
        np.zeros((0, 0), np.uint8), np.zeros((0, 0), np.int8), np.zeros(0, np.float32)))
    try:
        conn = db.connect(f"{(directory / db.DB_NAME).as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return empty
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        dims = int(json.loads(meta["descriptor"])["dims"])
        committed, epoch = int(meta.get("vector_rows") or 0), int(meta.get("vector_epoch") or 0)
        by_id = dict(conn.execute("SELECT vector_id, content_hash FROM vectors"))
        blocks = conn.execute("SELECT start, rows, digest FROM vector_blocks").fetchall()
    except (sqlite3.Error, KeyError, ValueError):
        return empty
    finally:
        conn.close()
    readable = min(committed, vectors.readable_rows(directory, dims, epoch))
    if readable == 0:
        return empty
    rows = vectors.read_rows(directory, dims, readable, epoch)
    keep: list[int] = []
    hashes: list[bytes] = []
    for start, count, expected in sorted(blocks):
        ids = range(start, start + count)
        if start + count > readable or any(i not in by_id for i in ids):
            continue
        block = [by_id[i] for i in ids]
        if integrity.digest(block, rows, start, start + count) == expected:
            keep.extend(ids)
            hashes.extend(block)
    centred = vectors.read_center(directory, dims) is not None
    forged = set(np.flatnonzero(plausible.implausible(rows, centred=centred)).tolist())
    first: dict[bytes, int] = {}
    for i, h in zip(keep, hashes, strict=True):  # a damaged table may repeat a hash
        if i not in forged:
            first.setdefault(h, i)
    take = np.asarray(list(first.values()), dtype=np.int64)
    return list(first), vectors.VectorRows(
        np.array(rows.bits[take]), np.array(rows.int8[take]), np.array(rows.scales[take]))
