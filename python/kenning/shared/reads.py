"""The reads of the shared index: every filter expression the engine runs is built here, every
value in it quoted here (``quote``), as ``store/reads.py`` does for SQLite; publishing,
retrieval and reading call these by name.

Milvus filter strings have no bound parameters, so a value is a JSON string literal; inside a
LIKE pattern, whose own special characters milvus-lite cannot escape, they are matched as any
one character and the rows are narrowed exactly afterwards (``path_test``).
"""

from __future__ import annotations

import base64
import fnmatch
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kenning.errors import UsageError
from kenning.indexing.classes import CLASSES
from kenning.retrieval import symbols
from kenning.retrieval.filters import Filters, normalize_path_filter
from kenning.retrieval.query import Query
from kenning.store.ids import LEGACY_TOKEN, ChunkId
from kenning.store.shared_engine import CLASS_FIELD, Engine, row_key
from kenning.tokens import QUALIFIER, code_tokens

# the fields of a chunk row that search reads
META = ["project", "path", "content_hash", "ordinal", "start_line", "end_line", "start_byte",
        "end_byte", "language", "kind", "symbol", "signature"]


def quote(value: str) -> str:
    """A string literal of the Milvus filter language."""
    return json.dumps(value, ensure_ascii=False)


def one_of(field: str, values: Sequence[str]) -> str:
    return f"{field} in [{', '.join(quote(v) for v in values)}]"


def at_project(project: str) -> str:
    """The rows of ``project``."""
    return f"project == {quote(project)}"


def read_head(engine: Engine, project: str) -> dict[str, Any] | None:
    """The head row's JSON of ``project`` (None: never published)."""
    rows = engine.query(engine.manifest, f"id == {quote(row_key(project, 'head', ''))}",
                        ["info"], "reading the published head", limit=1)
    return json.loads(rows[0]["info"]) if rows else None


_GLOB = re.compile(r"[*?\[]")


# milvus-lite's LIKE has no escape: a literal `_`, `%` or `\` becomes `_` (any one
# character), so the engine selects a superset that ``path_test`` narrows to the exact rows
_LIKE_SPECIAL = re.compile(r"[\\%_]")


def _like(text: str) -> str:
    """``text`` inside a LIKE pattern, each LIKE special character matched as any one."""
    return _LIKE_SPECIAL.sub("_", text)


def _glob_to_like(pattern: str) -> str:
    if "[" in pattern:
        raise UsageError(f"The path filter {pattern!r} uses a character class, which the shared "
                         "index cannot match.", hint="Use * and ? only, or a path prefix.")
    return "".join("%" if c == "*" else "_" if c == "?" else _like(c) for c in pattern)


def _path_pattern(filters: Filters) -> str:
    if filters.path_filter is None:
        return ""
    if filters.path_filter.strip().startswith("/"):
        raise UsageError(f"The path filter {filters.path_filter!r} is absolute; the shared "
                         "index needs a path relative to the project root.")
    return normalize_path_filter(filters.path_filter, Path("/"))


def path_test(filters: Filters) -> Callable[[str], bool] | None:
    """The exact test of a path against ``filters``' path filter, as the local store applies
    it; None when the engine's expression is exact already."""
    pattern = _path_pattern(filters)
    if not _LIKE_SPECIAL.search(pattern):
        return None
    if _GLOB.search(pattern):
        globs = (pattern.replace("**/", "*"), pattern + "/*")
        return lambda path: any(fnmatch.fnmatchcase(path, g) for g in globs)
    prefix = pattern.rstrip("/") + "/"
    return lambda path: path == pattern or path.startswith(prefix)


def expression(filters: Filters, projects: Sequence[str] | None) -> str:
    """The engine filter of ``filters`` (paths relative to each project's root; a filter that
    names an absolute path cannot be applied without a root) and the projects; rows it selects
    that ``path_test`` refuses are to be dropped."""
    clauses: list[str] = []
    if projects is not None:
        clauses.append(one_of("project", list(projects)))
    pattern = _path_pattern(filters)
    if pattern and _GLOB.search(pattern):
        clauses.append(f"(path like {quote(_glob_to_like(pattern.replace('**/', '*')))} "
                       f"or path like {quote(_glob_to_like(pattern + '/*'))})")
    elif pattern:
        prefix = pattern.rstrip("/") + "/"
        clauses.append(f"(path == {quote(pattern)} or path like {quote(_like(prefix) + '%')})")
    if filters.language:
        clauses.append(f"language == {quote(filters.language.lower())}")
    if filters.kind in (*CLASSES, "code"):  # a class, as Filters.bind selects it locally
        clauses.append(f"{CLASS_FIELD} == {quote(filters.kind)}")
    elif filters.kind:
        clauses.append(f"kind == {quote(filters.kind)}")
    return " and ".join(f"({c})" for c in clauses)


def all_of(*parts: str) -> str:
    """The rows that every non-empty expression of ``parts`` selects."""
    return " and ".join(f"({p})" for p in parts if p)


def hamming(engine: Engine, bits: np.ndarray, k: int, expr: str,
            fields: Sequence[str] = ()) -> list[tuple[dict[str, Any], int]]:
    """The engine's exact Hamming top-``k`` of one packed query: ``(row, distance)`` nearest
    first (the row holds ``id`` and ``fields``)."""
    with engine.calls("searching vectors"):
        hits = engine.client.search(engine.chunks, data=[np.asarray(bits, np.uint8).tobytes()],
                                    anns_field="bits", limit=k, filter=expr,
                                    output_fields=list(fields),
                                    search_params={"metric_type": "HAMMING"})
    return [({"id": h["id"], **h["entity"]}, int(h["distance"])) for h in hits[0]]


def bm25(engine: Engine, query: Query, limit: int, expr: str) -> list[tuple[dict[str, Any], float]]:
    """The engine's BM25 ranking of the query's code tokens, best first."""
    if not query.terms:
        return []
    with engine.calls("searching words"):
        hits = engine.client.search(engine.chunks, data=[" ".join(query.terms)],
                                    anns_field="sparse", limit=limit, filter=expr,
                                    output_fields=META, search_params={"metric_type": "BM25"})
    return [({"id": h["id"], **h["entity"]}, float(h["distance"])) for h in hits[0]]


def symbol_rows(engine: Engine, query: Query, limit: int,
                expr: str) -> list[tuple[dict[str, Any], float]]:
    """Rows whose symbol has a whole queried component, graded as locally, best first."""
    names = query.symbol_names
    tokens = list(dict.fromkeys(whole[0] for name in names
                                for part in QUALIFIER.split(name)
                                if (whole := code_tokens(part))))
    if not tokens:
        return []
    rows = engine.query(engine.chunks, all_of(expr, f"array_contains_any(symbol_words, "
                                                  f"[{', '.join(quote(t) for t in tokens)}])"),
                        ["id", *META], "searching symbols", limit=symbols.WINDOW)
    graded = [(row, symbols.best_grade(row["symbol"], names)) for row in rows]
    graded = [g for g in graded if g[1] > 0]
    graded.sort(key=lambda g: (-g[1], g[0]["id"]))
    return graded[:limit]


@dataclass
class Published:
    """What search needs of one published project: its generation and centring vector."""

    project: str
    snapshot_generation: int
    center: np.ndarray | None
    revision: str | None
    index_token: str  # of the published local index: its chunk ids are the published ones
    resending: bool = False  # its rows are being replaced by another local index's

    def chunk_id(self, ordinal: int) -> str:
        return str(ChunkId(self.project, self.index_token, self.snapshot_generation, ordinal))


def published(engine: Engine, projects: Sequence[str] | None = None) -> dict[str, Published]:
    """The projects in the shared index (the given ones only, when given)."""
    import json

    if not engine.exists():
        return {}
    expr = all_of('kind == "head"', one_of("project", list(projects)) if projects else "")
    out: dict[str, Published] = {}
    for row in engine.query(engine.manifest, expr, ["project", "info"], "listing projects"):
        head = json.loads(row["info"])
        if not head.get("snapshot_generation"):
            continue  # claimed by a first publish that has not finished
        center = (np.frombuffer(base64.b64decode(head["center"]), "<f4").astype(np.float32)
                  if head.get("center") else None)
        out[row["project"]] = Published(row["project"], int(head["snapshot_generation"]), center,
                                        head.get("revision"),
                                        str(head.get("index_token") or LEGACY_TOKEN),
                                        bool(head.get("resending")))
    return out


def chunk_at(engine: Engine, project: str, ordinal: int,
             fields: Sequence[str]) -> dict[str, Any] | None:
    """The published row of chunk ``ordinal`` of ``project`` (None: not published)."""
    found = engine.query(engine.chunks, all_of(at_project(project), f"ordinal == {int(ordinal)}"),
                         list(fields), "reading a chunk", limit=1)
    return found[0] if found else None


def chunks_of_paths(engine: Engine, project: str, paths: Sequence[str], fields: Sequence[str],
                    doing: str, *, limit: int | None = None) -> list[dict[str, Any]]:
    """The published rows of ``project``'s files ``paths``."""
    return engine.query(engine.chunks, all_of(at_project(project), one_of("path", list(paths))),
                        list(fields), doing, limit=limit)


def chunk_ids(engine: Engine, project: str, doing: str) -> list[str]:
    """The primary keys of every published chunk row of ``project``."""
    return [row["id"] for row in engine.query(engine.chunks, at_project(project), ["id"], doing)]


def chunks_by_id(engine: Engine, ids: Sequence[str], fields: Sequence[str],
                 doing: str) -> list[dict[str, Any]]:
    """The chunk rows with the primary keys ``ids``."""
    return engine.query(engine.chunks, one_of("id", list(ids)), list(fields), doing,
                        limit=len(ids))


def declaration_parts(engine: Engine, project: str, paths: Sequence[str],
                      declared: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of ``project``'s files ``paths`` that belong to the declarations ``declared``
    (path, symbol, signature, start byte)."""
    return engine.query(engine.chunks, all_of(at_project(project), one_of("path", list(paths)),
                                              one_of("symbol", list(declared))),
                        ["path", "symbol", "signature", "start_byte"],
                        "reading declarations' parts")


def manifest_rows(engine: Engine, project: str, kind: str, fields: Sequence[str], doing: str,
                  *, clusters: Sequence[str] | None = None,
                  unfinished: bool = False) -> list[dict[str, Any]]:
    """``project``'s manifest rows of ``kind`` ("cluster" or "file"), of ``clusters`` only
    when given, only those a publish began and did not finish with ``unfinished``."""
    parts = [at_project(project), f"kind == {quote(kind)}"]
    if clusters is not None:
        parts.append(one_of("cluster", list(clusters)))
    if unfinished:
        parts.append('digest == ""')
    return engine.query(engine.manifest, all_of(*parts), list(fields), doing)


def manifest_besides_head(project: str) -> str:
    """The filter of ``project``'s manifest rows other than its head (to delete them)."""
    return all_of(at_project(project), 'kind != "head"')


def any_head(engine: Engine, doing: str) -> bool:
    """Whether any project is left in the engine."""
    return bool(engine.query(engine.manifest, 'kind == "head"', ["id"], doing, limit=1))
