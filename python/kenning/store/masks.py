"""The allowed-row mask of a filtered vector scan, from columns kept in memory per snapshot.

Computing the mask in SQL (the vectors of the chunks a filter keeps: a join over every chunk)
costs several times the search it serves on a large index. So once a snapshot has served a
filtered search, the next one reads the columns it filters on (path, language, kind, each
chunk's vector row, and each chunk's class) once into NumPy arrays, coded by distinct value.
A filter is then judged on the distinct values alone, by the very SQL condition a row would be
judged by, and turned into a mask by indexing. The first filtered search of an index keeps to
SQL: a process that searches once (the CLI) pays no more than that query.

Chunks change only with a new generation, so the columns hold for a (token, vector epoch,
generation); vectors that arrive within a generation are added to the vector column, and the
columns of a later generation are carried over: the chunks of the files that changed are
dropped and their new ones read, so an edit costs a scan of the chunk ids, not a new read.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kenning.store.chunk_filter import ChunkFilter, Classifier, condition

_NULL = "\x01"  # stands for NULL in a concatenated column (no path, language or kind holds it)
_KEPT_INDEXES = 8  # indexes whose columns are kept, the most recently searched
_KEPT_JUDGMENTS = 16  # per column


@dataclass
class _Coded:
    values: list[str | None]  # the distinct values
    codes: np.ndarray  # per chunk (in id order): the index of its value
    # the filters judged on the values lately (searches repeat theirs), and what passed
    judged: OrderedDict[ChunkFilter, np.ndarray] = field(default_factory=OrderedDict)


@dataclass
class _Columns:
    key: tuple[str, int, int]  # index token, vector epoch, generation
    ids: np.ndarray  # every chunk id, sorted
    vectors: np.ndarray  # per chunk: its vector row, -1 for none
    rows: int  # vector rows the vector column covers
    coded: dict[str, _Coded] = field(default_factory=dict)
    classes: dict[Classifier, _Coded] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Masks:
    """The columns of the latest snapshot of each recently searched index."""

    def __init__(self) -> None:
        self._kept: OrderedDict[Path, _Columns] = OrderedDict()
        self._seen: dict[Path, tuple[str, int, int]] = {}  # a snapshot filtered once by SQL
        self._lock = threading.Lock()

    def columns(self, directory: Path, key: tuple[str, int, int],
                conn: sqlite3.Connection, rows: int) -> _Columns | None:
        """The columns of the snapshot ``key`` (read through ``conn``, its connection), or None
        when the caller should use SQL: the first time an index is asked, or for a snapshot
        older than the one whose columns are kept."""
        with self._lock:
            kept = self._kept.get(directory)
            seen, self._seen[directory] = self._seen.get(directory), key
        if kept is not None and kept.key == key:
            found = kept
        elif kept is not None and kept.key[:2] == key[:2]:
            if kept.key[2] > key[2]:
                return None
            found = _carried(conn, kept, key, rows)  # a later generation: carry them over
        elif seen == key:  # asked again: worth reading
            found = _read_columns(conn, key, rows)
        else:
            return None
        if found is not kept:
            with self._lock:
                current = self._kept.get(directory)
                if current is None or current.key[:2] != key[:2] or current.key[2] < key[2]:
                    self._kept[directory] = found
                self._kept.move_to_end(directory)
                while len(self._kept) > _KEPT_INDEXES:
                    old, _ = self._kept.popitem(last=False)
                    self._seen.pop(old, None)
        if rows > found.rows:
            _add_vectors(conn, found, rows)
        return found


def allowed(columns: _Columns, conn: sqlite3.Connection, keep: ChunkFilter,
            rows: int) -> np.ndarray:
    """The mask of the vector rows below ``rows`` of the chunks ``keep`` keeps."""
    passing = np.ones(len(columns.ids), dtype=bool)
    parts = {"path": ChunkFilter(path_globs=keep.path_globs, path_under=keep.path_under),
             "language": ChunkFilter(language=keep.language),
             "kind": ChunkFilter(kind=keep.kind)}
    for name, part in parts.items():
        if part != ChunkFilter():
            coded = _column(columns, conn, name)
            with columns.lock:
                judged = _judged(conn, name, coded, part)
            passing &= judged[coded.codes]
    if keep.class_of is not None:
        coded = _classes(columns, conn, keep.class_of)
        wanted = np.asarray([value == keep.class_is for value in coded.values], dtype=bool)
        passing &= wanted[coded.codes]
    vectors = columns.vectors[passing]
    mask = np.zeros(rows, dtype=bool)
    mask[vectors[(vectors >= 0) & (vectors < rows)]] = True
    return mask


def _judged(conn: sqlite3.Connection, name: str, coded: _Coded,
            part: ChunkFilter) -> np.ndarray:
    """Whether each of a column's distinct values passes ``part``, judged by SQLite with the
    condition that judges chunk rows, so both agree on every value (GLOB, NULL, ...)."""
    judged = coded.judged.get(part)
    if judged is None:
        where, params = condition(conn, part)
        found = conn.execute(f"SELECT c.i FROM (SELECT key AS i, value AS {name} FROM "
                             f"json_each(?)) c WHERE {where}",
                             [json.dumps(coded.values), *params]).fetchall()
        judged = np.zeros(len(coded.values), dtype=bool)
        judged[[row[0] for row in found]] = True
        coded.judged[part] = judged
        while len(coded.judged) > _KEPT_JUDGMENTS:
            coded.judged.popitem(last=False)
    return judged


def _read_columns(conn: sqlite3.Connection, key: tuple[str, int, int], rows: int) -> _Columns:
    ids, vectors = conn.execute(
        "SELECT group_concat(c.id), group_concat(coalesce(v.vector_id, -1)) FROM chunks c "
        "LEFT JOIN vectors v ON v.content_hash = c.content_hash AND v.vector_id < ?",
        (rows,)).fetchone()
    ids_array, vectors_array = _numbers(ids), _numbers(vectors)
    order = np.argsort(ids_array, kind="stable")
    return _Columns(key, ids_array[order], vectors_array[order], rows)


def _carried(conn: sqlite3.Connection, old: _Columns, key: tuple[str, int, int],
             rows: int) -> _Columns:
    """The columns of a later generation of the same vector epoch, from ``old``'s: chunks come
    and go only with a generation, a chunk keeps its vector row within an epoch, and a new
    chunk's id is above every earlier one, so the chunks that stay keep their values and only
    the new ones are read."""
    ids = np.sort(_numbers(conn.execute("SELECT group_concat(id) FROM chunks").fetchone()[0]))
    with old.lock:
        last = int(old.ids[-1]) if len(old.ids) else -1
        at = np.minimum(np.searchsorted(ids, old.ids), max(len(ids) - 1, 0))
        stay = ids[at] == old.ids if len(ids) else np.zeros(len(old.ids), dtype=bool)
        added = ids[ids > last]
        if int(stay.sum()) + len(added) != len(ids):  # not what a later generation holds
            return _read_columns(conn, key, rows)
        vectors = old.vectors[stay]
        base = min(old.rows, rows)  # _add_vectors brings the rest
        new = conn.execute(
            "SELECT c.id, coalesce(v.vector_id, -1), c.path, c.language, c.kind, c.symbol, "
            "c.generated, c.file_kind "
            "FROM chunks c LEFT JOIN vectors v ON v.content_hash = c.content_hash AND "
            "v.vector_id < ? WHERE c.id > ? ORDER BY c.id", (rows, last)).fetchall()
        carried = _Columns(key, np.concatenate([old.ids[stay], added]),
                           np.concatenate([vectors, np.asarray([r[1] for r in new],
                                                               dtype=np.int64)]), base)
        column = {"path": 2, "language": 3, "kind": 4}
        for name, coded in old.coded.items():
            carried.coded[name] = _extended(coded, stay, [r[column[name]] for r in new])
        for class_of, coded in old.classes.items():
            carried.classes[class_of] = _extended(
                coded, stay, [class_of(r[2], r[3], r[5], bool(r[6]), r[7]) for r in new])
    return carried


def _extended(coded: _Coded, stay: np.ndarray, added: list[str | None]) -> _Coded:
    """``coded`` for the chunks that ``stay``, then the ``added`` ones."""
    values = list(coded.values)
    index = {value: i for i, value in enumerate(values)}
    codes = [index.setdefault(value, len(index)) for value in added]
    values.extend(list(index)[len(values):])
    return _Coded(values, np.concatenate([coded.codes[stay], np.asarray(codes, dtype=np.int32)]))


def _numbers(text: str | None) -> np.ndarray:
    if not text:
        return np.zeros(0, dtype=np.int64)
    return np.fromstring(text, dtype=np.int64, sep=",")


def _add_vectors(conn: sqlite3.Connection, columns: _Columns, rows: int) -> None:
    """Add the vectors committed since the columns were read (within their generation)."""
    with columns.lock:
        if rows <= columns.rows:
            return
        ids, vectors = conn.execute(
            "SELECT group_concat(c.id), group_concat(v.vector_id) FROM vectors v JOIN chunks c "
            "ON c.content_hash = v.content_hash WHERE v.vector_id >= ? AND v.vector_id < ?",
            (columns.rows, rows)).fetchone()
        added = columns.vectors.copy()  # searches under way keep the array they hold
        added[np.searchsorted(columns.ids, _numbers(ids))] = _numbers(vectors)
        columns.vectors, columns.rows = added, rows


def _strings(conn: sqlite3.Connection, columns: _Columns,
             expressions: list[str]) -> list[list[str | None]]:
    """The values of ``expressions`` (over ``chunks``) for each chunk, in id order."""
    concat = ", ".join(f"group_concat(coalesce({e}, char(1)), char(0))" for e in expressions)
    row = conn.execute(f"SELECT group_concat(id), {concat} FROM chunks").fetchone()
    ids = _numbers(row[0])
    order = None if np.array_equal(ids, columns.ids) else np.argsort(ids, kind="stable")
    found: list[list[str | None]] = []
    for text in row[1:]:
        values: list[str | None] = ([None if v == _NULL else v for v in text.split("\0")]
                                    if text else [])
        found.append(values if order is None else [values[i] for i in order])
    return found


def _coded(values: list[str | None]) -> _Coded:
    index: dict[str | None, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in values), dtype=np.int32,
                        count=len(values))
    return _Coded(list(index), codes)


def _column(columns: _Columns, conn: sqlite3.Connection, name: str) -> _Coded:
    with columns.lock:
        coded = columns.coded.get(name)
        if coded is None:
            coded = columns.coded[name] = _coded(_strings(conn, columns, [name])[0])
        return coded


def _classes(columns: _Columns, conn: sqlite3.Connection, class_of: Classifier) -> _Coded:
    """Each chunk's class, as ``class_of`` says."""
    with columns.lock:
        coded = columns.classes.get(class_of)
        if coded is None:
            paths, languages, symbols, generated, kinds = _strings(
                conn, columns, ["path", "language", "symbol", "generated", "file_kind"])
            coded = columns.classes[class_of] = _coded(
                [class_of(str(p), lang, sym, gen == "1", kind) for p, lang, sym, gen, kind
                 in zip(paths, languages, symbols, generated, kinds, strict=True)])
        return coded


kept = Masks()
