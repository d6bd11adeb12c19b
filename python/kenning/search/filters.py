"""Filters applied inside retrieval: a path filter (glob or prefix), a language, a kind.

Each filter becomes one SQL condition over ``chunks`` (alias ``c``), so every branch (the FTS5
query, the symbol match and the allowed-row mask of the vector scan) honours it and a filtered
search still returns a full page.
"""

from __future__ import annotations

import posixpath
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from kenning.errors import UsageError

# Languages whose chunks are prose, not code (`--kind docs`).
DOCS_LANGUAGES = frozenset({"markdown", "rst", "text", "asciidoc", "org"})
_GLOB_CHARS = re.compile(r"[*?\[]")


def normalize_path_filter(path_filter: str, root: Path) -> str:
    """The filter relative to ``root`` in POSIX form; UsageError if it escapes the root."""
    raw = path_filter.strip().replace("\\", "/")
    if not raw:
        raise UsageError("The path filter is empty.")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:/", raw):
        absolute = Path(raw)
        try:
            raw = absolute.relative_to(root).as_posix() if absolute != root else "."
        except ValueError:
            resolved = absolute.resolve()
            try:
                raw = resolved.relative_to(root).as_posix() if resolved != root else "."
            except ValueError:
                raise UsageError(f"The path filter {path_filter!r} is outside the project root "
                                 f"{root}.",
                                 hint="Give a path or glob relative to the project root.") from None
    normalized = posixpath.normpath(raw)
    if normalized == ".." or normalized.startswith("../"):
        raise UsageError(f"The path filter {path_filter!r} escapes the project root {root}.",
                         hint="Give a path or glob relative to the project root.")
    return "" if normalized == "." else normalized


@dataclass
class Filters:
    path_filter: str | None = None
    language: str | None = None
    kind: str | None = None
    _where: str = field(default="", init=False)
    _params: list[object] = field(default_factory=list, init=False)

    def bind(self, root: Path) -> tuple[str, list[object]]:
        """The SQL condition (``""`` when nothing filters) and its parameters, for one project."""
        clauses: list[str] = []
        params: list[object] = []
        if self.path_filter is not None:
            pattern = normalize_path_filter(self.path_filter, root)
            if pattern and _GLOB_CHARS.search(pattern):
                clauses.append("(c.path GLOB ? OR c.path GLOB ?)")
                # `src/*.py` matches files directly in src; `**/` also matches zero directories
                params += [pattern.replace("**/", "*"), pattern + "/*"]
            elif pattern:
                clauses.append("(c.path = ? OR substr(c.path, 1, ?) = ?)")
                prefix = pattern.rstrip("/") + "/"
                params += [pattern, len(prefix), prefix]
        if self.language:
            clauses.append("c.language = ? COLLATE NOCASE")
            params.append(self.language)
        if self.kind:
            kind = self.kind.lower()
            marks = ",".join("?" * len(DOCS_LANGUAGES))
            if kind == "code":
                clauses.append(f"(c.language IS NULL OR c.language NOT IN ({marks}))")
                params += sorted(DOCS_LANGUAGES)
            elif kind == "docs":
                clauses.append(f"c.language IN ({marks})")
                params += sorted(DOCS_LANGUAGES)
            else:
                clauses.append("c.kind = ?")
                params.append(kind)
        return " AND ".join(clauses), params

    @property
    def active(self) -> bool:
        return bool(self.path_filter or self.language or self.kind)


def allowed_chunk_ids(conn: sqlite3.Connection, where: str, params: list[object]) -> set[int]:
    return {row[0] for row in conn.execute(f"SELECT c.id FROM chunks c WHERE {where}", params)}

