"""Callers and callees of a declaration, by name within one project's snapshot.

The chunker records the names each chunk calls (``chunking.calls``). The callees of a
declaration are the declarations of the names it calls; its callers the declarations that call
its name. No types are resolved, so a name is only a hint of which declaration a call reaches;
the candidates are ranked by how likely they are the one meant:

- the same language (or one that calls it: C and C++, JavaScript and TypeScript, Java and
  Kotlin), else none;
- nearness: the same file, then the same folder, then the same top folder;
- for callees, fewer declarations of the name (the IDF idea the ranking uses for shared
  names): ``send`` declared once is surely the one called; ``new`` declared by forty types is
  any of them;
- tests and examples after the code they exercise.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kenning.retrieval.classes import categories
from kenning.store.writer import declared_name

if TYPE_CHECKING:
    from kenning.store import ChunkFilter, Snapshot
    from kenning.store.reads import DeclarationRow

LINKS = 3  # callers and callees listed with each search result
# Chunks read per look-up: a name that more chunks call or declare than this (``get``,
# ``new``) links little anyway.
MAX_ROWS = 2000
# Languages whose code calls each other's declarations by name.
_FAMILIES = {"cpp": "c", "typescript": "javascript", "tsx": "javascript", "kotlin": "java"}
SAME_FILE, SAME_FOLDER, SAME_TOP, ELSEWHERE = 4.0, 2.0, 1.5, 1.0
OTHER_CLASS = 0.5  # a test or example linked to code, or code to one


@dataclass(slots=True)
class Link:
    """A declaration linked to another: its first chunk, its lines, and how likely the link
    is the one meant."""

    id: int  # the first chunk of the declaration
    path: str
    start_line: int
    end_line: int
    language: str | None
    kind: str
    symbol: str | None
    score: float


def family(language: str | None) -> str | None:
    return _FAMILIES.get(language or "", language)


def nearness(path: str, other: str) -> float:
    if path == other:
        return SAME_FILE
    folder, other_folder = posixpath.dirname(path), posixpath.dirname(other)
    if folder == other_folder:
        return SAME_FOLDER
    if folder.split("/", 1)[0] == other_folder.split("/", 1)[0]:
        return SAME_TOP
    return ELSEWHERE


def _declarations(rows: Iterable[tuple[DeclarationRow, str]]
                  ) -> dict[tuple[str, str | None, str | None], list[tuple[DeclarationRow, str]]]:
    """Rows grouped by declaration: the parts of one declaration split over several chunks
    share its path, symbol and signature."""
    found: dict[tuple[str, str | None, str | None], list[tuple[DeclarationRow, str]]] = {}
    for row, name in rows:
        found.setdefault((row[1], row[6], row[7]), []).append((row, name))
    return found


def _is_other_class(path: str, language: str | None, symbol: str | None,
                    other: DeclarationRow) -> bool:
    own = bool(categories(path, language, symbol))
    return own != bool(categories(other[1], other[4], other[6]))


@dataclass(frozen=True, slots=True)
class Subject:
    """The declaration whose links are sought: its chunks and where it is."""

    parts: tuple[int, ...]
    path: str
    language: str | None
    symbol: str | None


def subjects(snap: Snapshot, ids: Sequence[int]) -> dict[int, Subject]:
    """The declaration of each chunk of ``ids`` (the chunk alone when it has no symbol)."""
    parts = snap.declaration_parts(list(ids))
    return {row[0]: Subject(tuple(p[0] for p in parts.get(row[0], [(row[0], 0, 0)])), row[1],
                            row[6], row[8]) for row in snap.chunk_rows(list(ids))}


def callees(snap: Snapshot, subject: Subject, limit: int,
            keep: ChunkFilter | None = None) -> list[Link]:
    """The declarations of the names ``subject`` calls, best first, itself left out."""
    names = snap.called_names(subject.parts)
    rows = [(row, name) for row, name in snap.declaring(names, MAX_ROWS, keep)
            if family(row[4]) == family(subject.language)]
    declarers: dict[str, int] = {}
    grouped = _declarations(rows)
    for parts in grouped.values():
        declarers[parts[0][1]] = declarers.get(parts[0][1], 0) + 1
    return _ranked(grouped, subject, limit, lambda name: 1.0 / declarers[name])


def callers(snap: Snapshot, subject: Subject, limit: int,
            keep: ChunkFilter | None = None) -> list[Link]:
    """The declarations that call ``subject``'s name, best first, itself left out."""
    name = declared_name(subject.symbol)
    if name is None:
        return []
    rows = [(row, called) for row, called in snap.calling([name], MAX_ROWS, keep)
            if family(row[4]) == family(subject.language)]
    return _ranked(_declarations(rows), subject, limit, lambda _: 1.0)


def _ranked(grouped: dict[tuple[str, str | None, str | None], list[tuple[DeclarationRow, str]]],
            subject: Subject, limit: int, weight: Callable[[str], float]) -> list[Link]:
    links = []
    for parts in grouped.values():
        rows = [row for row, _ in parts]
        if any(row[0] in subject.parts for row in rows):
            continue
        first = rows[0]
        score = nearness(subject.path, first[1]) * weight(parts[0][1])
        if _is_other_class(subject.path, subject.language, subject.symbol, first):
            score *= OTHER_CLASS
        links.append(Link(first[0], first[1], min(r[2] for r in rows), max(r[3] for r in rows),
                          first[4], first[5], first[6], score))
    links.sort(key=lambda link: (-link.score, link.path, link.start_line))
    return links[:limit]


def linked(snap: Snapshot, project: str, ids: Sequence[int],
           limit: int = LINKS) -> dict[int, dict[str, list[dict[str, object]]]]:
    """Chunk id -> the ``callers`` and ``callees`` of its declaration, ``limit`` each, as
    search results carry them (id, path, lines, symbol)."""
    found = {}
    for chunk_id, subject in subjects(snap, ids).items():
        found[chunk_id] = {
            "callers": [record(snap, project, link)
                        for link in whole(snap, callers(snap, subject, limit))],
            "callees": [record(snap, project, link)
                        for link in whole(snap, callees(snap, subject, limit))]}
    return found


def record(snap: Snapshot, project: str, link: Link) -> dict[str, object]:
    return {"id": snap.chunk_id(project, link.id), "path": link.path,
            "start_line": link.start_line, "end_line": link.end_line, "symbol": link.symbol}


def whole(snap: Snapshot, links: list[Link]) -> list[Link]:
    """``links`` spanning their whole declarations (a caller is read from the parts that call)."""
    spans = snap.declaration_parts([link.id for link in links])
    for link in links:
        parts = spans.get(link.id)
        if parts:
            link.id, link.start_line, link.end_line = parts[0][0], parts[0][1], parts[-1][2]
    return links
