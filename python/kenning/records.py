"""Plain records passed between the parts: files found by the walk, chunks cut by the chunker."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# What a file can be to its project (``indexing.kinds`` decides; ``--kind`` selects).
FILE_KINDS = ("code", "test", "docs", "example", "completion", "generated", "vendored",
              "fixture", "data")
# Embedded by default: what questions are answered from (README.md, "What gets embedded").
# The rest are found by words and symbols.
EMBEDDED_KINDS = ("code", "test", "docs", "example", "completion")


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file the walk decided to index."""

    path: str  # relative to the project root, POSIX separators
    abs_path: Path
    size: int
    mtime_ns: int
    language: str | None  # tree-sitter language name, or None for plain text
    kind: str | None = None  # what evidence says it is (indexing.kinds); None: its path decides


@dataclass(frozen=True, slots=True)
class Member:
    """A declaration inside a chunk other than the chunk's own: a method of a class small
    enough to be one chunk, a function nested in another."""

    name: str  # as calls name it: ``evict``
    symbol: str  # qualified: ``LruCache.evict``
    kind: str
    start_line: int  # 1-based, inclusive
    end_line: int
    start_byte: int  # half-open
    end_byte: int


@dataclass(frozen=True, slots=True)
class Chunk:
    """A syntax-aware piece of one file; lines are 1-based and inclusive, bytes half-open."""

    path: str
    start_byte: int
    end_byte: int
    start_line: int
    end_line: int
    language: str | None
    kind: str  # "function", "method", "class", ..., "section" (docs), "window" (plain text)
    symbol: str | None  # qualified name, e.g. "HttpClient.send"
    signature: str | None  # the declaration's first line(s), e.g. "def send(self, request):"
    text: str
    generated: bool = False  # the file's first lines say a tool wrote it (chunking.generated)
    # (name, line) of each call it makes, sorted (chunking.calls); a name once per line
    calls: tuple[tuple[str, int], ...] = ()
    members: tuple[Member, ...] = ()  # the declarations inside it, in file order
