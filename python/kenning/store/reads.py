"""The reads of one snapshot: every query the search side makes of an index, by name.

``Snapshot`` (``kenning.store``) inherits these methods; they run inside its read transaction.
A ``ChunkFilter`` (``chunk_filter``) says which chunks a filtered read keeps; it is turned into
SQL here, so no caller writes SQL against the schema.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

import numpy as np

from kenning.store import db, masks
from kenning.store.chunk_filter import ChunkFilter, condition

# (id, path, start line, end line, start byte, end byte, language, kind, symbol, generated) of
# a chunk
ChunkRow = tuple[int, str, int, int, int, int, "str | None", str, "str | None", int]
# (id, start byte, end byte, start line, end line, kind, symbol, signature) of a file's chunk
FileChunk = tuple[int, int, int, int, int, str, "str | None", "str | None"]
_CHUNK_COLUMNS = ("id, path, start_line, end_line, start_byte, end_byte, language, kind, symbol, "
                  "generated")


def _marks(values: Collection[object]) -> str:
    return ",".join("?" * len(values))


class SnapshotReads:
    """The named reads of a snapshot (mixed into ``Snapshot``)."""

    _conn: sqlite3.Connection
    directory: Path
    token: str
    generation: int
    vector_epoch: int
    vector_rows: int

    # -- the lexical table (FTS5 over chunks_fts(body, symbol, path), rowid = chunk id)

    def fts_count(self, match: str, cap: int) -> int:
        """How many rows the FTS5 expression ``match`` finds, counting no further than ``cap``."""
        return int(self._conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)",
            (match, cap)).fetchone()[0])

    def fts_top(self, match: str, weights: Sequence[float], limit: int,
                keep: ChunkFilter | None = None) -> list[tuple[int, float]]:
        """``(chunk id, bm25)`` of the best ``limit`` rows ``match`` finds among the chunks
        ``keep`` keeps, best first (FTS5's bm25 is lower-is-better)."""
        columns = ", ".join(str(w) for w in weights)
        if keep is not None:
            where, params = condition(self._conn, keep)
            sql = (f"SELECT f.rowid, bm25(chunks_fts, {columns}) AS s FROM chunks_fts f "
                   f"JOIN chunks c ON c.id = f.rowid WHERE chunks_fts MATCH ? AND {where} "
                   "ORDER BY s LIMIT ?")
            args: list[object] = [match, *params, limit]
        else:
            sql = (f"SELECT rowid, bm25(chunks_fts, {columns}) AS s FROM chunks_fts "
                   "WHERE chunks_fts MATCH ? ORDER BY s LIMIT ?")
            args = [match, limit]
        return [(row[0], row[1]) for row in self._conn.execute(sql, args)]

    def fts_among(self, match: str, ids: Sequence[int]) -> set[int]:
        """The chunks among ``ids`` that the FTS5 expression ``match`` finds."""
        found: set[int] = set()
        for start in range(0, len(ids), 500):  # within SQLite's limit of bound parameters
            part = list(ids[start:start + 500])
            found.update(row[0] for row in self._conn.execute(
                "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN "
                f"({', '.join('?' * len(part))})", [match, *part]))
        return found

    def symbol_rows(self, match: str, limit: int,
                    keep: ChunkFilter | None = None) -> list[tuple[int, str]]:
        """``(chunk id, symbol)`` of the first ``limit`` chunks with a symbol that the FTS5
        expression ``match`` finds (in rowid order), among those ``keep`` keeps."""
        sql = ("SELECT c.id, c.symbol FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
               "WHERE chunks_fts MATCH ? AND c.symbol IS NOT NULL")
        args: list[object] = [match]
        if keep is not None:
            where, params = condition(self._conn, keep)
            sql += f" AND {where}"
            args += params
        sql += f" LIMIT {int(limit)}"
        return self._conn.execute(sql, args).fetchall()

    # -- chunks and their vectors

    def chunk_rows(self, ids: Sequence[int]) -> list[ChunkRow]:
        """The rows of the chunks ``ids`` that this snapshot holds."""
        if not ids:
            return []
        return self._conn.execute(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE id IN "
                                  f"({_marks(ids)})", list(ids)).fetchall()

    def kept_chunks(self, ids: Sequence[int], keep: ChunkFilter) -> set[int]:
        """The chunks among ``ids`` that ``keep`` keeps."""
        if not ids:
            return set()
        where, params = condition(self._conn, keep)
        return {row[0] for row in self._conn.execute(
            f"SELECT c.id FROM chunks c WHERE c.id IN ({_marks(ids)}) AND {where}",
            [*ids, *params])}

    def chunk_row(self, chunk_id: int) -> tuple[ChunkRow, int] | None:
        """The row of chunk ``chunk_id`` and the generation that made it; None if absent."""
        row = self._conn.execute(f"SELECT {_CHUNK_COLUMNS}, generation FROM chunks WHERE id = ?",
                                 (chunk_id,)).fetchone()
        return None if row is None else (row[:10], row[10])

    def file_chunks(self, paths: Sequence[str]) -> dict[str, list[FileChunk]]:
        """Each of ``paths``'s chunks in file order (files without chunks are absent)."""
        found: dict[str, list[FileChunk]] = {}
        if not paths:
            return found
        for row in self._conn.execute(
                "SELECT path, id, start_byte, end_byte, start_line, end_line, kind, symbol, "
                f"signature FROM chunks WHERE path IN ({_marks(paths)}) ORDER BY path, start_byte",
                list(paths)):
            found.setdefault(row[0], []).append(row[1:])
        return found

    def declaration_starts(self, ids: Sequence[int]) -> dict[int, int]:
        """Chunk id -> the first start byte of the chunks of its declaration: those of its
        file with its symbol and signature (the parts of a declaration split over chunks).
        Chunks without a symbol are absent."""
        if not ids:
            return {}
        return dict(self._conn.execute(
            "SELECT c.id, min(p.start_byte) FROM chunks c JOIN chunks p ON p.path = c.path AND "
            f"p.symbol = c.symbol AND p.signature IS c.signature WHERE c.id IN ({_marks(ids)}) "
            "GROUP BY c.id", list(ids)).fetchall())

    def chunks_of_vectors(self, vector_ids: Iterable[int],
                          keep: ChunkFilter | None = None) -> dict[int, list[int]]:
        """Vector id -> the ids of the chunks that share it (and that ``keep`` keeps), sorted."""
        ids = list(vector_ids)
        if not ids:
            return {}
        sql = ("SELECT v.vector_id, c.id FROM vectors v JOIN chunks c "
               f"ON c.content_hash = v.content_hash WHERE v.vector_id IN ({_marks(ids)})")
        args: list[object] = list(ids)
        if keep is not None:
            where, params = condition(self._conn, keep)
            sql += f" AND {where}"
            args += params
        found: dict[int, list[int]] = {}
        for vector_id, chunk_id in self._conn.execute(sql, args):
            found.setdefault(vector_id, []).append(chunk_id)
        for chunk_list in found.values():
            chunk_list.sort()
        return found

    def vectors_of_chunks(self, chunk_ids: Iterable[int]) -> list[tuple[int, int]]:
        """``(chunk id, vector id)`` of the chunks that have a committed vector."""
        ids = list(chunk_ids)
        if not ids or self.vector_rows == 0:
            return []
        return self._conn.execute(
            "SELECT c.id, v.vector_id FROM chunks c JOIN vectors v ON v.content_hash = "
            f"c.content_hash WHERE c.id IN ({_marks(ids)}) AND v.vector_id < ?",
            [*ids, self.vector_rows]).fetchall()

    def allowed_vectors(self, keep: ChunkFilter) -> np.ndarray:
        """One flag per vector row, set for the vectors of the chunks ``keep`` keeps: the
        mask of a filtered scan."""
        key = (self.token, self.vector_epoch, self.generation)
        columns = masks.kept.columns(self.directory, key, self._conn, self.vector_rows)
        if columns is not None:
            return masks.allowed(columns, self._conn, keep, self.vector_rows)
        where, params = condition(self._conn, keep)
        # one text of ids instead of a Python object per row: a third of the time at 35k rows
        sql = ("SELECT group_concat(v.vector_id) FROM chunks c JOIN vectors v "
               f"ON v.content_hash = c.content_hash WHERE v.vector_id < ? AND {where}")
        ids = self._conn.execute(sql, [self.vector_rows, *params]).fetchone()[0]
        mask = np.zeros(self.vector_rows, dtype=bool)
        if ids:
            mask[np.fromstring(ids, dtype=np.int64, sep=",")] = True
        return mask

    def chunks_to_publish(self, paths: Sequence[str]) -> list[tuple[object, ...]]:
        """The chunks of ``paths`` that have a committed vector, in file order: id, generation,
        path, start and end byte, start and end line, language, kind, symbol, signature, content
        hash, vector id, and the lexical table's body, symbol and path words."""
        if not paths:
            return []
        return self._conn.execute(
            "SELECT c.id, c.generation, c.path, c.start_byte, c.end_byte, c.start_line, "
            "c.end_line, c.language, c.kind, c.symbol, c.signature, c.content_hash, v.vector_id, "
            "f.body, f.symbol, f.path FROM chunks c JOIN vectors v ON v.content_hash = "
            "c.content_hash AND v.vector_id < ? JOIN chunks_fts f ON f.rowid = c.id "
            f"WHERE c.path IN ({_marks(paths)}) ORDER BY c.path, c.start_byte",
            [self.vector_rows, *paths]).fetchall()

    # -- files and clusters

    def cluster_digests(self) -> dict[str, bytes]:
        """cluster -> its digest."""
        return {c: bytes(d) for c, d in self._conn.execute("SELECT cluster, digest FROM clusters")}

    def file_digests(self) -> dict[str, tuple[bytes, str]]:
        """path -> (digest, cluster) of every file."""
        return {p: (bytes(d), c) for p, d, c in
                self._conn.execute("SELECT path, digest, cluster FROM files")}

    def file_stats(self, *, stored: bool = True) -> bytes:
        """The stat data of every file as ``db.read_file_stats`` gives it: the stored blob, or
        (when it is missing, or not ``stored``) the one computed from the files table."""
        blob = db.read_file_stats(self._conn) if stored else None
        return blob if blob is not None else db.computed_file_stats(self._conn)

    def file_states(self, paths: Collection[str] | None = None) -> dict[str, tuple[int, int]]:
        """path -> (size, mtime_ns) as indexed, of ``paths`` (None: of every file)."""
        if paths is None:
            return {row[0]: (row[1], row[2]) for row in self._conn.execute(
                "SELECT path, size, mtime_ns FROM files")}
        if not paths:
            return {}
        return {row[0]: (row[1], row[2]) for row in self._conn.execute(
            f"SELECT path, size, mtime_ns FROM files WHERE path IN ({_marks(paths)})",
            sorted(paths))}
