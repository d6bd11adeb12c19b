"""Filters applied inside retrieval: a path filter (glob or prefix), a language, a kind.

Each filter becomes one condition of a ``ChunkFilter`` that the store applies to every read, so
every branch (the FTS5 query, the symbol match and the allowed-row mask of the vector scan)
honours it and a filtered search still returns a full page. A language or kind is one of a
closed set: the usual aliases (``py``, ``rs``, ``golang``, ``c++``, ``functions`` ...) name
their value, and anything else is refused with the valid values, never answered with an empty
page.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from kenning.chunking.languages import ALIASES, GRAMMARS, KIND_KEYWORDS
from kenning.display import visible
from kenning.errors import UsageError
from kenning.indexing.classes import CLASSES, chunk_class
from kenning.indexing.sources import LANGUAGES, detect_language, storable
from kenning.store.chunk_filter import ChunkFilter

__all__ = ["KINDS", "LANGUAGES", "Filters", "check_path_filter", "normalize_path_filter"]

# Kinds a chunk can have: the declarations of each grammar, a method (a function in a type),
# the filler around declarations (block, module), Markdown sections and line windows.
CHUNK_KINDS = frozenset({*(kind for spec in GRAMMARS.values()
                           for kind in (*spec.decls.values(), *spec.calls.values())),
                         *KIND_KEYWORDS.values(), "method", "block", "module", "section",
                         "window"})
# code, docs, test ...: classes of files and regions (classes.py), see ``bind``
KINDS = CHUNK_KINDS | {"code", *CLASSES}
_KIND_ALIASES = {"fn": "function", "func": "function", "def": "function", "cls": "class",
                 "doc": "docs", "documentation": "docs", "heading": "section"}
_GLOB_CHARS = re.compile(r"[*?\[]")


def canonical_language(value: str) -> str:
    """``value`` as a chunk's language (``py`` -> ``python``); UsageError with the valid ones."""
    name = value.strip().lower()
    found = name if name in LANGUAGES else ALIASES.get(name) or (
        detect_language(f"file.{name.lstrip('.')}") if name else None)
    if found is None:
        raise UsageError(f"Unknown language {value!r}.",
                         hint=f"Use one of: {', '.join(sorted(LANGUAGES))} (or an extension "
                              "such as py, rs, ts).")
    return found


def canonical_kind(value: str) -> str:
    """``value`` as a kind (``functions`` -> ``function``); UsageError with the valid ones."""
    name = value.strip().lower()
    name = _KIND_ALIASES.get(name, name)
    for plural in ("es", "s"):
        if name not in KINDS and name.endswith(plural) and name[: -len(plural)] in KINDS:
            name = name[: -len(plural)]
    if name not in KINDS:
        raise UsageError(f"Unknown kind {value!r}.",
                         hint=f"Use code, {', '.join(CLASSES)} or a declaration kind: "
                              f"{', '.join(sorted(CHUNK_KINDS))}.")
    return name


def check_path_filter(path_filter: str) -> str:
    """The filter in POSIX form; UsageError when no project could hold it (empty, NUL, not
    UTF-8)."""
    raw = path_filter.strip().replace("\\", "/")
    if not raw:
        raise UsageError("The path filter is empty.")
    if "\0" in raw:
        raise UsageError("The path filter contains a NUL character, which no path does.",
                         hint="Give a path or glob relative to the project root.")
    if not storable(raw):
        raise UsageError(f"The path filter {visible(path_filter)} is not UTF-8, which every "
                         "indexed path is.",
                         hint="Give a path or glob relative to the project root.")
    return raw


def normalize_path_filter(path_filter: str, root: Path) -> str:
    """The filter relative to ``root`` in POSIX form; UsageError if it escapes the root."""
    raw = check_path_filter(path_filter)
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
    if _unclosed_class(normalized):  # a glob that can match nothing
        raise UsageError(f"The path filter {path_filter!r} opens a character class with [ "
                         "that it never closes.",
                         hint="Close it with ], or write [[] for a literal [.")
    return "" if normalized == "." else normalized


def _class_bounds(pattern: str) -> Iterator[tuple[int, int]]:
    """``(open, close)`` of each ``[`` class of the glob ``pattern``, ``close`` -1 when it
    never closes (a ``]`` right after ``[``, ``[!`` or ``[^`` is a member, as in SQLite's GLOB)."""
    start = pattern.find("[")
    while start >= 0:
        member = start + 1
        if pattern[member:member + 1] in ("!", "^") and member < len(pattern):
            member += 1
        if pattern[member:member + 1] == "]":
            member += 1
        close = pattern.find("]", member)
        yield start, close
        if close < 0:
            return
        start = pattern.find("[", close + 1)


def _unclosed_class(pattern: str) -> bool:
    """Whether a ``[`` of the glob ``pattern`` has no ``]`` to close it."""
    return any(close < 0 for _, close in _class_bounds(pattern))


def _sqlite_glob(pattern: str) -> str:
    """``pattern`` for SQLite's GLOB, whose classes negate with ``[^`` only: a shell's and
    git's ``[!x]`` (not x) would otherwise be the class of ``!`` and ``x``."""
    chars = list(pattern)
    for start, _ in _class_bounds(pattern):
        if chars[start + 1:start + 2] == ["!"]:
            chars[start + 1] = "^"
    return "".join(chars)


@dataclass
class Filters:
    path_filter: str | None = None
    language: str | None = None
    kind: str | None = None

    def __post_init__(self) -> None:
        self.language = canonical_language(self.language) if self.language else None
        self.kind = canonical_kind(self.kind) if self.kind else None

    def bind(self, root: Path) -> ChunkFilter | None:
        """What the store keeps for this filter in one project (None when nothing filters)."""
        globs: tuple[str, ...] = ()
        under = None
        if self.path_filter is not None:
            pattern = normalize_path_filter(self.path_filter, root)
            if pattern and _GLOB_CHARS.search(pattern):
                # `src/*.py` matches files directly in src; `**/` also matches zero directories
                glob = _sqlite_glob(pattern)
                globs = (glob.replace("**/", "*"), glob + "/*")
            elif pattern:
                under = pattern
        keep = ChunkFilter(path_globs=globs, path_under=under, language=self.language)
        if self.kind in CLASSES or self.kind == "code":
            keep = replace(keep, class_of=chunk_class, class_is=self.kind)
        elif self.kind:
            keep = replace(keep, kind=self.kind)
        return None if keep == ChunkFilter() else keep
