"""Callers and callees of a declaration, by name within one project's snapshot.

The chunker records the calls each chunk makes (name and line) and the declarations inside
it besides its own (``chunking.calls``): the methods of a class small enough to be one chunk
are declarations too. The callees of a declaration are the declarations of the names it
calls; its callers the innermost declarations around the calls of its name. No types are
resolved, so a name is only a hint of which declaration a call reaches; the candidates are
ranked by how likely they are the one meant:

- the same language (or one that calls it: C and C++, JavaScript and TypeScript, Java and
  Kotlin), else none;
- nearness: the same file, then the same folder, then the same top folder;
- for callees, fewer declarations of the name (the IDF idea the ranking uses for shared
  names): ``send`` declared once is surely the one called; ``new`` declared by forty types is
  any of them; and fewer callers of the name: a name called all over the project (``get``,
  ``items``) is most often another type's method of that name (a dict's), one called from a
  few places names the project's own;
- tests and examples after the code they exercise, and the other way round.
"""

from __future__ import annotations

import heapq
import math
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from kenning.chunking.languages import family
from kenning.indexing.classes import categories
from kenning.store.writer import declared_name

if TYPE_CHECKING:
    from kenning.store import ChunkFilter, Snapshot
    from kenning.store.reads import DeclarationRow, MemberRow

LINKS = 3  # callers and callees listed with each search result
# Declarations or calls read per look-up: a name that more chunks call or declare than this
# (``get``, ``new``) links little anyway.
MAX_ROWS = 2000
SAME_FILE, SAME_FOLDER, SAME_TOP, ELSEWHERE = 4.0, 2.0, 1.5, 1.0
OTHER_CLASS = 0.5  # a test or example linked to code, or code to one
OTHER_FAMILY = 0.5  # a declaration of the same name in another language


@dataclass(slots=True)
class Link:
    """A declaration linked to another: the chunk that holds it, its lines, and how likely
    the link is the one meant."""

    id: int  # the chunk of the declaration (its first, for one split over several)
    path: str
    start_line: int
    end_line: int
    language: str | None
    kind: str
    symbol: str | None
    score: float
    member: bool  # a declaration inside the chunk, not the chunk's own


@dataclass(frozen=True, slots=True)
class Subject:
    """The declaration whose links are sought: its chunks and where it is; ``lines`` when it
    is a member of its one chunk (a method of a class that is one chunk)."""

    parts: tuple[int, ...]
    path: str
    language: str | None
    symbol: str | None
    lines: tuple[int, int] | None = None


@lru_cache(maxsize=65536)
def nearness(path: str, other: str) -> float:
    if path == other:
        return SAME_FILE
    folder, other_folder = posixpath.dirname(path), posixpath.dirname(other)
    if folder == other_folder:
        return SAME_FOLDER
    if folder.split("/", 1)[0] == other_folder.split("/", 1)[0]:
        return SAME_TOP
    return ELSEWHERE


def subjects(snap: Snapshot, ids: Sequence[int]) -> dict[int, Subject]:
    """The declaration of each chunk of ``ids`` (the chunk alone when it has no symbol)."""
    parts = snap.declaration_parts(list(ids))
    return {row.id: Subject(tuple(p.id for p in parts.get(row.id, [])) or (row.id,), row.path,
                            row.language, row.symbol) for row in snap.chunk_rows(list(ids))}


def member_at(members: Sequence[MemberRow], line: int) -> MemberRow | None:
    """The innermost of a chunk's ``members`` (in file order) whose lines hold ``line``."""
    found = None
    for member in members:
        if member.start_line <= line <= member.end_line:
            found = member  # a later one that holds it is nested in the earlier
    return found


def _is_subject(row: DeclarationRow, subject: Subject) -> bool:
    """Whether ``row`` is the subject, or (for a whole-chunk subject) inside it."""
    if row.id not in subject.parts:
        return False
    return subject.lines is None or (
        bool(row.member) and (row.start_line, row.end_line) == subject.lines)


def _other_class(subject: Subject, row: DeclarationRow) -> bool:
    own = bool(categories(subject.path, subject.language, subject.symbol))
    return own != bool(categories(row.path, row.language, row.symbol))


def callees(snap: Snapshot, subject: Subject, limit: int,
            keep: ChunkFilter | None = None) -> list[Link]:
    """The declarations of the names ``subject`` calls, best first, itself left out."""
    names = snap.called_names(subject.parts, subject.lines)
    rows = [(row, name) for row, name in snap.declaring(names, MAX_ROWS, keep)
            if family(row.language) == family(subject.language) and not _is_subject(row, subject)]
    declarers: dict[str, int] = {}
    grouped = _grouped(rows)
    for _, name in grouped.values():
        declarers[name] = declarers.get(name, 0) + 1
    called = snap.callers_counted(declarers)
    return _ranked(grouped, subject, limit, lambda name: 1.0 / declarers[name] / (
        1.0 + math.log1p(called.get(name, 0))))


def callers(snap: Snapshot, subject: Subject, limit: int,
            keep: ChunkFilter | None = None) -> list[Link]:
    """The declarations around the calls of ``subject``'s name, best first, itself left
    out."""
    name = declared_name(subject.symbol)
    if name is None:
        return []
    calls = [(row, line) for row, _, line in snap.calling([name], MAX_ROWS, keep)
             if family(row.language) == family(subject.language)]
    members = snap.members_of(sorted({row.id for row, _ in calls}))
    rows = []
    for row, line in calls:
        around = member_at(members.get(row.id, ()), line)
        if around is not None:  # the method of a one-chunk class that makes the call
            row = row._replace(start_line=around.start_line, end_line=around.end_line,
                               kind=around.kind, symbol=around.symbol, signature=None, member=1)
        elif row.symbol is None:
            continue  # a call between declarations (a script's statements)
        if not _is_subject(row, subject) and not (
                subject.lines is not None and row.id in subject.parts
                and subject.lines[0] <= line <= subject.lines[1]):  # a recursive call
            rows.append((row, name))
    return _ranked(_grouped(rows), subject, limit, lambda _: 1.0)


def namesakes(snap: Snapshot, subject: Subject, limit: int,
              keep: ChunkFilter | None = None) -> list[Link]:
    """The declarations of ``subject``'s name elsewhere (overrides, the implementations of one
    interface, a binding and its target), best first; those of another language family
    count half."""
    name = declared_name(subject.symbol)
    if name is None:
        return []
    rows = [(row, name) for row, _ in snap.declaring([name], MAX_ROWS, keep)
            if not _is_subject(row, subject)]
    return _ranked(_grouped(rows), subject, limit, lambda _: 1.0)


def _grouped(rows: list[tuple[DeclarationRow, str]]
             ) -> dict[tuple[object, ...], tuple[list[DeclarationRow], str]]:
    """Rows grouped by declaration, with the name they were found by: the parts of one
    declaration split over several chunks share its path, symbol and signature."""
    found: dict[tuple[object, ...], tuple[list[DeclarationRow], str]] = {}
    for row, name in rows:
        key = (row.path, row.symbol, row.signature, row.member,
               row.start_line if row.member else None)
        found.setdefault(key, ([], name))[0].append(row)
    return found


def _ranked(grouped: dict[tuple[object, ...], tuple[list[DeclarationRow], str]],
            subject: Subject, limit: int, weight: Callable[[str], float]) -> list[Link]:
    """The best ``limit`` declarations of ``grouped`` as links (each group's rows in chunk id
    order, so its first row is its first part)."""
    scored = []
    keys = list(grouped)
    for i, key in enumerate(keys):
        rows, name = grouped[key]
        first = rows[0]
        score = nearness(subject.path, first.path) * weight(name)
        if _other_class(subject, first):
            score *= OTHER_CLASS
        if family(first.language) != family(subject.language):
            score *= OTHER_FAMILY
        scored.append((-score, first.path, first.start_line, i))
    links = []
    for negated, _, _, i in heapq.nsmallest(limit, scored):
        rows = grouped[keys[i]][0]
        first = rows[0]
        links.append(Link(first.id, first.path, first.start_line,
                          max(r.end_line for r in rows), first.language, first.kind,
                          first.symbol, -negated, bool(first.member)))
    return links


def around(snap: Snapshot, ids: Sequence[int], limit: int,
           keep: ChunkFilter | None = None) -> list[tuple[int, float]]:
    """The callees and callers of the declarations of ``ids`` (``limit`` of each), in the
    order of ``ids``, as a branch's ``(chunk id, score)`` ranking without ``ids`` themselves:
    what a stack trace's frames widen to (the fix is often in what a frame calls, or in the
    caller that handed it a bad value)."""
    named = subjects(snap, ids)
    seen = set(ids)
    found = []
    for chunk_id in ids:
        subject = named[chunk_id]
        for link in callees(snap, subject, limit, keep) + callers(snap, subject, limit, keep):
            if link.id not in seen:
                seen.add(link.id)
                found.append(link.id)
    return [(chunk_id, float(len(found) - rank)) for rank, chunk_id in enumerate(found)]


def whole(snap: Snapshot, links: list[Link]) -> list[Link]:
    """``links`` spanning their whole declarations (a caller is read from the parts that
    call); a member keeps its own lines."""
    spans = snap.declaration_parts([link.id for link in links if not link.member])
    for link in links:
        parts = spans.get(link.id)
        if parts and not link.member:
            link.id, link.start_line = parts[0].id, parts[0].start_line
            link.end_line = parts[-1].end_line
    return links


def linked(snap: Snapshot, project: str, shown: Sequence[tuple[int, str | None]],
           limit: int = LINKS) -> dict[int, dict[str, list[dict[str, object]]]]:
    """Chunk id -> the ``callers`` and ``callees`` of the declaration a result shows, ``limit``
    each, as results carry them (id, path, lines, symbol). ``shown``: each result's chunk id
    and symbol; a symbol of a declaration inside the chunk (a method of a class that is one
    chunk) means that declaration, else the chunk's own is meant."""
    found = {}
    named = subjects(snap, [chunk_id for chunk_id, _ in shown])
    members = snap.members_of([chunk_id for chunk_id, symbol in shown
                               if symbol != named[chunk_id].symbol])
    for chunk_id, symbol in shown:
        subject = named[chunk_id]
        member = next((m for m in members.get(chunk_id, ()) if m.symbol == symbol), None)
        if member is not None:
            subject = replace(subject, symbol=member.symbol,
                              lines=(member.start_line, member.end_line))
        found[chunk_id] = {
            "callers": [record(snap, project, link)
                        for link in whole(snap, callers(snap, subject, limit))],
            "callees": [record(snap, project, link)
                        for link in whole(snap, callees(snap, subject, limit))]}
    return found


def record(snap: Snapshot, project: str, link: Link) -> dict[str, object]:
    return {"id": snap.chunk_id(project, link.id), "path": link.path,
            "start_line": link.start_line, "end_line": link.end_line, "symbol": link.symbol}
