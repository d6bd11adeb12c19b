"""Integrity of an index: checksums of the committed vector rows, and the checks that use them.

Every committed batch of vector rows is a block with a BLAKE3 digest over the content hashes of
its rows (``vectors`` ordered by id) and their bytes in the three vector files, recorded in
``vector_blocks`` in the transaction that commits the rows. A flipped bit, a shifted or cut
file, or a scrambled ``vectors`` table changes a digest. Where it costs little the last block
is checked (a reader mapping new rows, a writer about to append); ``full_check`` checks every
block, every row (``store.plausible``: rows taken from the shared index were made elsewhere),
the database (``PRAGMA quick_check``), the chunks' paths and the full-text table (used by
``kenning doctor`` and ``kenning index --full``).
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kenning import kernels
from kenning.store import db, plausible, vectors
from kenning.store.db import is_damage

# Rows per block when many are recorded at once (a compaction, an index from before blocks).
BLOCK_ROWS = 4096


def digest(hashes: Sequence[bytes], rows: vectors.VectorRows, start: int, stop: int) -> bytes:
    """The digest of rows ``start:stop`` whose content hashes are ``hashes``."""
    data = b"".join([*hashes, rows.bits[start:stop].tobytes(), rows.int8[start:stop].tobytes(),
                     rows.scales[start:stop].tobytes()])
    return kernels.hash_many([data])[0]


def record(conn: sqlite3.Connection, first_id: int, hashes: Sequence[bytes],
           rows: vectors.VectorRows, *, block_rows: int = BLOCK_ROWS) -> None:
    """Record the blocks of new rows (``rows``, ids from ``first_id`` on, with content hashes
    ``hashes``) inside the caller's transaction."""
    for at in range(0, len(hashes), block_rows):
        part = hashes[at:at + block_rows]
        conn.execute("INSERT OR REPLACE INTO vector_blocks(start, rows, digest) VALUES (?, ?, ?)",
                     (first_id + at, len(part), digest(part, rows, at, at + len(part))))


def _hashes(conn: sqlite3.Connection, start: int, stop: int) -> list[bytes]:
    return [r[0] for r in conn.execute(
        "SELECT content_hash FROM vectors WHERE vector_id >= ? AND vector_id < ? "
        "ORDER BY vector_id", (start, stop))]


def _bad_block(start: int, count: int) -> str:
    return f"vector rows {start}-{start + count - 1} do not match their checksum"


def last_block_problem(conn: sqlite3.Connection, rows: vectors.VectorRows) -> str | None:
    """What is wrong with the last committed block, if anything (rows is what is committed)."""
    try:
        block = conn.execute("SELECT start, rows, digest FROM vector_blocks "
                             "ORDER BY start DESC LIMIT 1").fetchone()
    except sqlite3.OperationalError as exc:  # an index no writer of this version has opened
        if "no such table" not in str(exc):
            raise
        return None
    if block is None:
        return None
    start, count, expected = block
    if start + count != len(rows.scales):
        return (f"the checksums cover {start + count} vector rows, the index commits "
                f"{len(rows.scales)}")
    hashes = _hashes(conn, start, start + count)
    if len(hashes) != count or digest(hashes, rows, start, start + count) != expected:
        return _bad_block(start, count)
    return None


def sampled_block_problem(conn: sqlite3.Connection, rows: vectors.VectorRows) -> str | None:
    """What is wrong with one committed block drawn at random, if anything: a refresh checks
    one, so damage to an old block is found within a few refreshes at the cost of one block's
    digest each (a cursor would cost a write to a refresh that changes nothing)."""
    count = conn.execute("SELECT count(*) FROM vector_blocks").fetchone()[0]
    if not count:
        return None
    start, rows_in, expected = conn.execute(
        "SELECT start, rows, digest FROM vector_blocks ORDER BY start LIMIT 1 OFFSET ?",
        (random.randrange(count),)).fetchone()
    if start + rows_in > len(rows.scales):
        return (f"the checksum of vector rows {start}-{start + rows_in - 1} does not fit the "
                "committed rows")
    hashes = _hashes(conn, start, start + rows_in)
    if len(hashes) != rows_in or digest(hashes, rows, start, start + rows_in) != expected:
        return _bad_block(start, rows_in)
    return None


def block_problems(conn: sqlite3.Connection, rows: vectors.VectorRows) -> list[str]:
    """Every block checked: the blocks that do not match, and rows no block covers."""
    problems: list[str] = []
    table = conn.execute("SELECT vector_id, content_hash FROM vectors ORDER BY vector_id")
    ids, hashes = map(list, zip(*table, strict=True)) if table else ([], [])
    total = len(rows.scales)
    if ids != list(range(total)):
        problems.append(f"the vectors table holds {len(ids)} ids where {total} rows, numbered "
                        "from 0, are committed")
    covered = 0
    for start, count, expected in conn.execute(
            "SELECT start, rows, digest FROM vector_blocks ORDER BY start"):
        if start != covered or start + count > total:
            problems.append(f"the checksum of vector rows {start}-{start + count - 1} does not "
                            "fit the committed rows")
            break
        if digest(hashes[start:start + count], rows, start, start + count) != expected:
            problems.append(_bad_block(start, count))
        covered = start + count
    else:
        if covered != total:
            problems.append(f"vector rows {covered}-{total - 1} have no checksum")
    return problems


def row_problems(rows: vectors.VectorRows, *, centred: bool) -> list[str]:
    """The rows that no embedder makes (``store.plausible``): a vector forged or damaged before
    it was stored, which its block's checksum was taken over."""
    bad = np.flatnonzero(plausible.implausible(rows, centred=centred))
    if not len(bad):
        return []
    return [f"{len(bad)} vector row{'s are' if len(bad) > 1 else ' is'} not what an embedder "
            f"makes (row {bad[0]} first: a scale, norm or sign bits no embedding has)"]


def orphan_problems(conn: sqlite3.Connection) -> list[str]:
    """Chunks of no indexed file: a flipped byte inside a path, which SQLite's check cannot
    see (and which may leave a text that is not UTF-8)."""
    orphans = conn.execute("SELECT count(*) FROM chunks WHERE path NOT IN "
                           "(SELECT path FROM files)").fetchone()[0]
    return [f"{orphans} chunks belong to no indexed file"] if orphans else []


def database_problems(conn: sqlite3.Connection) -> list[str]:
    """SQLite's own check of the database file, and of the full-text table's index (the
    latter needs a connection that may write; nothing is changed)."""
    try:
        found = [r[0] for r in conn.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        return [f"the database cannot be checked ({exc})"]
    if found != ["ok"]:
        return [f"the database fails SQLite's check ({'; '.join(found[:3])})"]
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
        finally:
            conn.execute("ROLLBACK")
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise
        return [f"the full-text table is damaged ({exc})"]
    return []


def full_check(directory: Path) -> list[str]:
    """Everything checked: the database, the full-text table, the vector files' sizes and every
    block. An empty list means the index is sound. Raises only sqlite3.OperationalError (busy,
    unreadable), not for damage."""
    path = directory / db.DB_NAME
    if not path.exists():
        return []  # no index here yet: nothing committed to check
    try:  # mode=rw: never create a database
        conn = db.connect(f"{path.as_uri()}?mode=rw", uri=True, isolation_level=None,
                          timeout=30.0)
    except sqlite3.DatabaseError as exc:
        return [f"the database cannot be opened ({exc})"]
    try:
        problems = database_problems(conn)
        if problems:
            return problems
        conn.execute("BEGIN")
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        dims = int(json.loads(meta["descriptor"])["dims"])
        count, epoch = int(meta.get("vector_rows") or 0), int(meta.get("vector_epoch") or 0)
        size_problem = vectors.size_problem(directory, dims, count, epoch)
        if size_problem:
            return [size_problem]
        rows = vectors.read_rows(directory, dims, count, epoch)
        return orphan_problems(conn) + (block_problems(conn, rows) or row_problems(
            rows, centred=vectors.read_center(directory, dims) is not None))
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc) and isinstance(exc, sqlite3.OperationalError):
            raise
        return [f"the database cannot be read ({exc})"]
    except (KeyError, ValueError) as exc:
        return [f"its metadata is unreadable ({exc})"]
    finally:
        conn.close()
