"""Which chunks a filtered read keeps (``ChunkFilter``), and the SQL that keeps them.

Search builds a ``ChunkFilter`` from the user's filters; only the store turns it into SQL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# A test of a chunk's (path, language, symbol, generated, file kind) that names its class
# ("test", "vendored", ...)
Classifier = Callable[[str, "str | None", "str | None", bool, "str | None"], str]


@dataclass(frozen=True)
class ChunkFilter:
    """Which chunks a filtered read keeps; every condition given must hold."""

    path_globs: tuple[str, ...] = ()  # the path matches one of these SQLite GLOB patterns
    path_under: str | None = None  # the path is this one, or a path inside this folder
    language: str | None = None
    kind: str | None = None
    class_of: Classifier | None = None  # with ``class_is``: the chunk's class is that one
    class_is: str | None = None


_CLASS_FUNCTION = "kenning_class"


def class_condition(conn: sqlite3.Connection, class_of: Classifier, classes: Sequence[str], *,
                    among: bool = True) -> tuple[str, list[object]]:
    """A condition over ``chunks`` (alias ``c``): the chunk's class is (``among``) or is not
    one of ``classes``, as ``class_of`` says; ``conn`` learns the SQL function it calls."""
    conn.create_function(_CLASS_FUNCTION, 5, class_of, deterministic=True)
    marks = ",".join("?" * len(classes)) or "NULL"
    return (f"{_CLASS_FUNCTION}(c.path, c.language, c.symbol, c.generated, c.file_kind) "
            f"{'' if among else 'NOT '}IN ({marks})", list(classes))


def condition(conn: sqlite3.Connection, keep: ChunkFilter) -> tuple[str, list[object]]:
    """``keep`` as a condition over ``chunks`` (alias ``c``) and its parameters, for ``conn``
    (which learns the SQL function a class filter calls)."""
    clauses: list[str] = []
    params: list[object] = []
    if keep.path_globs:
        clauses.append("(" + " OR ".join(["c.path GLOB ?"] * len(keep.path_globs)) + ")")
        params += keep.path_globs
    if keep.path_under is not None:
        prefix = keep.path_under.rstrip("/") + "/"
        clauses.append("(c.path = ? OR substr(c.path, 1, ?) = ?)")
        params += [keep.path_under, len(prefix), prefix]
    if keep.language is not None:
        clauses.append("c.language = ?")
        params.append(keep.language)
    if keep.class_of is not None and keep.class_is is not None:
        clause, args = class_condition(conn, keep.class_of, [keep.class_is])
        clauses.append(clause)
        params += args
    if keep.kind is not None:
        clauses.append("c.kind = ?")
        params.append(keep.kind)
    return " AND ".join(clauses) or "1", params
