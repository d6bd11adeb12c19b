"""The reads of one snapshot: every query the search side makes of an index, by name.

``Snapshot`` (``kenning.store``) inherits these methods; they run inside its read transaction.
A ``ChunkFilter`` (``chunk_filter``) says which chunks a filtered read keeps; it is turned into
SQL here, so no caller writes SQL against the schema.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from kenning.store import db, fts, masks
from kenning.store.chunk_filter import ChunkFilter, Classifier, condition


class ChunkRow(NamedTuple):
    """A chunk as the search reads it; lines 1-based inclusive, bytes half-open."""

    id: int
    path: str
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    language: str | None
    kind: str
    symbol: str | None
    generated: int  # 1: its file's first lines say a tool wrote it
    file_kind: str | None  # what evidence says its file is (indexing.kinds)


class FileChunk(NamedTuple):
    """One chunk of a file, as the file's chunks in byte order are read to find units."""

    id: int
    start_byte: int
    end_byte: int
    start_line: int
    end_line: int
    kind: str
    symbol: str | None
    signature: str | None

    @property
    def declaration(self) -> tuple[str, str | None, str | None]:
        """What the parts of one declaration cut into several chunks share."""
        return self.kind, self.symbol, self.signature


_CHUNK_COLUMNS = ", ".join(ChunkRow._fields)


class DeclarationRow(NamedTuple):
    """A declaration a link can name: a chunk's own (``member`` 0), or one inside the chunk
    (``member`` 1: the member's lines, kind and symbol, no signature)."""

    id: int  # the chunk's
    path: str
    start_line: int
    end_line: int
    language: str | None
    kind: str
    symbol: str | None
    signature: str | None
    member: int


_DECLARATION_COLUMNS = ("c.id, c.path, c.start_line, c.end_line, c.language, c.kind, c.symbol, "
                        "c.signature, 0")
_MEMBER_COLUMNS = ("c.id, c.path, m.start_line, m.end_line, c.language, m.kind, m.symbol, "
                   "NULL, 1")


class Part(NamedTuple):
    """One chunk of a declaration cut into several."""

    id: int
    start_line: int
    end_line: int


class MemberRow(NamedTuple):
    """A declaration inside a chunk (a method of a class that is one chunk, a nested
    function)."""

    name: str
    symbol: str
    kind: str
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int


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

    # -- the lexical table (FTS5 over chunks_fts(body, symbol, path), rowid = chunk id); the
    # MATCH expressions come from ``fts``, built from the terms, tokens and phrases given

    def fts_count(self, match: str, cap: int) -> int:
        """How many rows the FTS5 expression ``match`` finds, counting no further than ``cap``
        (what ``fts.lexical`` weighs terms by)."""
        return int(self._conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)",
            (match, cap)).fetchone()[0])

    def lexical_top(self, terms: Sequence[str], weights: Mapping[str, float], limit: int,
                    keep: ChunkFilter | None = None,
                    phrases: Sequence[Sequence[str]] = ()) -> list[tuple[int, float]]:
        """``(chunk id, bm25 score)`` of the best ``limit`` chunks for the query words
        ``terms`` (rare ones first: ``fts.lexical``), with column ``weights`` by name, among
        the chunks ``keep`` keeps and that say every one of ``phrases``; best first, higher is
        better."""
        match = fts.lexical_with_phrases(self.fts_count, terms, phrases)
        return [] if match is None else self._fts_top(match, weights, limit, keep)

    def phrase_top(self, phrases: Sequence[Sequence[str]], weights: Mapping[str, float],
                   limit: int, keep: ChunkFilter | None = None) -> list[tuple[int, float]]:
        """As ``lexical_top``, for the chunks that say one of ``phrases`` or more."""
        match = fts.any_phrase(phrases)
        return [] if match is None else self._fts_top(match, weights, limit, keep)

    def _fts_top(self, match: str, weights: Mapping[str, float], limit: int,
                 keep: ChunkFilter | None) -> list[tuple[int, float]]:
        columns = fts.weights(weights)
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
        # FTS5's bm25() is lower-is-better; negated so every branch ranks higher-is-better
        return [(row[0], -row[1]) for row in self._conn.execute(sql, args)]

    def says(self, phrases: Sequence[Sequence[str]]) -> bool:
        """Whether some chunk says every one of ``phrases`` (each a sequence of tokens; a
        one-token phrase is that token)."""
        match = fts.phrases(phrases)
        return match is None or self.fts_count(match, 1) > 0

    def saying(self, phrases: Sequence[Sequence[str]], ids: Sequence[int]) -> set[int]:
        """The chunks among ``ids`` that say every one of ``phrases``."""
        match = fts.phrases(phrases)
        if match is None:
            return set(ids)
        found: set[int] = set()
        for start in range(0, len(ids), 500):  # within SQLite's limit of bound parameters
            part = list(ids[start:start + 500])
            found.update(row[0] for row in self._conn.execute(
                "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN "
                f"({', '.join('?' * len(part))})", [match, *part]))
        return found

    def symbol_matches(self, tokens: Sequence[str], limit: int,
                       keep: ChunkFilter | None = None, *,
                       prefix: bool = False) -> list[tuple[int, str]]:
        """``(chunk id, symbol)`` of the first ``limit`` chunks (in rowid order) among those
        ``keep`` keeps whose symbol has one of ``tokens`` as a whole token, or with ``prefix``
        one that starts with one of them."""
        if not tokens:
            return []
        sql = ("SELECT c.id, c.symbol FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
               "WHERE chunks_fts MATCH ? AND c.symbol IS NOT NULL")
        args: list[object] = [fts.symbol_tokens(tokens, prefix=prefix)]
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
        return [ChunkRow._make(row) for row in self._conn.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE id IN ({_marks(ids)})", list(ids))]

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
        return None if row is None else (ChunkRow._make(row[:-1]), row[-1])

    def file_chunks(self, paths: Sequence[str]) -> dict[str, list[FileChunk]]:
        """Each of ``paths``'s chunks in file order (files without chunks are absent)."""
        found: dict[str, list[FileChunk]] = {}
        if not paths:
            return found
        for row in self._conn.execute(
                "SELECT path, id, start_byte, end_byte, start_line, end_line, kind, symbol, "
                f"signature FROM chunks WHERE path IN ({_marks(paths)}) ORDER BY path, start_byte",
                list(paths)):
            found.setdefault(row[0], []).append(FileChunk._make(row[1:]))
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

    def declaration_parts(self, ids: Sequence[int]) -> dict[int, list[Part]]:
        """Chunk id -> each chunk of its declaration in file order: the chunks of its file
        with its symbol and signature, itself alone when it has no symbol."""
        if not ids:
            return {}
        found: dict[int, list[Part]] = {}
        for row in self._conn.execute(
                "SELECT c.id, p.id, p.start_line, p.end_line FROM chunks c JOIN chunks p "
                "ON p.path = c.path AND (p.id = c.id OR (p.symbol = c.symbol AND p.signature "
                f"IS c.signature)) WHERE c.id IN ({_marks(ids)}) ORDER BY c.id, p.start_byte",
                list(ids)):
            found.setdefault(row[0], []).append(Part(*row[1:]))
        return found

    def called_names(self, ids: Sequence[int],
                     lines: tuple[int, int] | None = None) -> set[str]:
        """The names the chunks ``ids`` call (``chunking.calls``), on ``lines`` only (first
        and last, inclusive) when given."""
        if not ids:
            return set()
        sql = f"SELECT DISTINCT name FROM calls WHERE chunk IN ({_marks(ids)})"
        args: list[object] = list(ids)
        if lines is not None:
            sql += " AND line BETWEEN ? AND ?"
            args += list(lines)
        return {row[0] for row in self._conn.execute(sql, args)}

    def callers_counted(self, names: Collection[str]) -> dict[str, int]:
        """Name -> how many chunks call it, for each of ``names`` that one calls."""
        wanted = sorted(names)
        if not wanted:
            return {}
        return dict(self._conn.execute(
            f"SELECT name, count(DISTINCT chunk) FROM calls WHERE name IN ({_marks(wanted)}) "
            "GROUP BY name", wanted).fetchall())

    def members_of(self, ids: Sequence[int]) -> dict[int, list[MemberRow]]:
        """Chunk id -> the declarations inside it besides its own, in file order."""
        found: dict[int, list[MemberRow]] = {}
        if not ids:
            return found
        for row in self._conn.execute(
                "SELECT chunk, name, symbol, kind, start_line, end_line, start_byte, end_byte "
                f"FROM members WHERE chunk IN ({_marks(ids)}) ORDER BY chunk, start_byte, "
                "end_byte DESC", list(ids)):
            found.setdefault(row[0], []).append(MemberRow(*row[1:]))
        return found

    def declaring(self, names: Collection[str], limit: int,
                  keep: ChunkFilter | None = None) -> list[tuple[DeclarationRow, str]]:
        """The declarations, at most ``limit`` of each sort (chunks, members), named one of
        ``names`` (the last part of their symbol), with the name; among the chunks ``keep``
        keeps."""
        return (self._linked(_DECLARATION_COLUMNS, "c.name", "chunks c", names, limit, keep)
                + self._linked(_MEMBER_COLUMNS, "m.name",
                               "members m JOIN chunks c ON c.id = m.chunk", names, limit, keep))

    def calling(self, names: Collection[str], limit: int,
                keep: ChunkFilter | None = None) -> list[tuple[DeclarationRow, str, int]]:
        """The chunks, at most ``limit`` calls, that call one of ``names``: each call's chunk,
        the name called and the line; among the chunks ``keep`` keeps."""
        return [(DeclarationRow(*row[:9]), row[9], row[10]) for row in self._linked(
            f"{_DECLARATION_COLUMNS}, k.name", "k.name", "calls k JOIN chunks c ON c.id = "
            "k.chunk", names, limit, keep, extra="k.line")]

    def _linked(self, columns: str, name: str, source: str, names: Collection[str], limit: int,
                keep: ChunkFilter | None, extra: str | None = None) -> list[Any]:
        wanted = sorted(names)
        if not wanted:
            return []
        clauses = [f"{name} IN ({_marks(wanted)})"]
        args: list[object] = list(wanted)
        if keep is not None:
            condition_sql, params = condition(self._conn, keep)
            clauses.append(condition_sql)
            args += params
        rows = self._conn.execute(
            f"SELECT {columns}, {extra or name} FROM {source} WHERE {' AND '.join(clauses)} "
            f"ORDER BY c.id LIMIT {int(limit)}", args)
        if extra is None:
            return [(DeclarationRow(*row[:9]), row[9]) for row in rows]
        return list(rows)

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

    def vectors_of_hashes(self, hashes: Sequence[bytes] | None) -> dict[bytes, int]:
        """Content hash -> committed vector id, for the ``hashes`` that have one (None: of
        every committed vector)."""
        if hashes is None:
            return dict(self._conn.execute(
                "SELECT content_hash, vector_id FROM vectors WHERE vector_id < ?",
                (self.vector_rows,)).fetchall())
        found: dict[bytes, int] = {}
        for start in range(0, len(hashes), 500):  # within SQLite's count of parameters
            part = list(hashes[start:start + 500])
            found.update(self._conn.execute(
                f"SELECT content_hash, vector_id FROM vectors WHERE content_hash IN "
                f"({_marks(part)}) AND vector_id < ?", [*part, self.vector_rows]).fetchall())
        return found

    def sample_vectors(self, count: int) -> list[tuple[int, bytes, str, int, int]]:
        """``(vector id, content hash, path, start byte, end byte)`` of up to ``count``
        committed vectors drawn at random, each with one chunk that uses it."""
        return self._conn.execute(
            "SELECT v.vector_id, v.content_hash, min(c.path), c.start_byte, c.end_byte "
            "FROM vectors v JOIN chunks c ON c.content_hash = v.content_hash "
            "WHERE v.vector_id < ? GROUP BY v.vector_id ORDER BY random() LIMIT ?",
            (self.vector_rows, count)).fetchall()

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
        hash, vector id, the lexical table's body, symbol and path words, and the file kind."""
        if not paths:
            return []
        return self._conn.execute(
            "SELECT c.id, c.generation, c.path, c.start_byte, c.end_byte, c.start_line, "
            "c.end_line, c.language, c.kind, c.symbol, c.signature, c.content_hash, v.vector_id, "
            "f.body, f.symbol, f.path, c.file_kind FROM chunks c JOIN vectors v ON "
            "v.content_hash = "
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

    def kind_counts(self, class_of: Classifier) -> dict[str, dict[str, int]]:
        """class -> {"files", "chunks", "embedded"}: each chunk's class as ``class_of`` says
        (a file counts under the class of its first chunk)."""
        counts: dict[str, dict[str, int]] = {}
        files: set[str] = set()
        for path, language, symbol, generated, kind, chunks, embedded in self._conn.execute(
                "SELECT c.path, c.language, c.symbol, c.generated, c.file_kind, count(*), "
                "count(v.vector_id) FROM chunks c LEFT JOIN vectors v ON v.content_hash = "
                "c.content_hash AND v.vector_id < ? GROUP BY c.path, c.symbol",
                (self.vector_rows,)):
            entry = counts.setdefault(class_of(path, language, symbol, bool(generated), kind),
                                      {"files": 0, "chunks": 0, "embedded": 0})
            entry["files"] += path not in files
            files.add(path)
            entry["chunks"] += chunks
            entry["embedded"] += embedded
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]["chunks"]))

    def file_stats(self, *, stored: bool = True) -> bytes:
        """The stat data of every file as ``db.read_file_stats`` gives it: the stored blob, or
        (when it is missing, or not ``stored``) the one computed from the files table."""
        blob = db.read_file_stats(self._conn) if stored else None
        return blob if blob is not None else db.computed_file_stats(self._conn)

    def file_states(self, paths: Collection[str] | None = None
                    ) -> dict[str, tuple[int, int, bytes]]:
        """path -> (size, mtime_ns, digest) as indexed, of ``paths`` (None: of every file)."""
        if paths is None:
            return {row[0]: (row[1], row[2], row[3]) for row in self._conn.execute(
                "SELECT path, size, mtime_ns, digest FROM files")}
        if not paths:
            return {}
        return {row[0]: (row[1], row[2], row[3]) for row in self._conn.execute(
            f"SELECT path, size, mtime_ns, digest FROM files WHERE path IN ({_marks(paths)})",
            sorted(paths))}
