"""Snippets read from the work tree by byte range, flagged ``stale`` when the file changed.

A result that spans a whole declaration shows its best-matching window, headed by the
declaration's signature line, with a marker line for the lines of the declaration it leaves out
above and below (``… 15 more lines (143-157) …``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kenning import safe_read, usage_log
from kenning.tokens import QUALIFIER


class SnippetReader:
    """Reads each file once; ``read`` gives (content, stale) for one byte range. A file that is
    no longer a regular file inside the project (a symlink at any folder on its path, a FIFO, a
    device) or that grew past ``limit`` is not read: its results are stale and empty. A file
    whose size and mtime are the indexed ones is stale when its bytes are not (an edit that
    kept both: ``cp -p``, ``rsync -t``, tar); ``rewritten`` names those files, which the
    refresh's stat comparison cannot see."""

    def __init__(self, root: Path, indexed: dict[str, tuple[int, int, bytes]],
                 limit: int) -> None:
        self.root = root
        self.indexed = indexed
        self.limit = limit
        self.rewritten: set[str] = set()
        self._cache: dict[str, tuple[bytes | None, bool]] = {}

    def _load(self, path: str) -> tuple[bytes | None, bool]:
        if path not in self._cache:
            try:
                # the stat of the descriptor read, even if the path was replaced meanwhile
                data, stamp = safe_read.read(self.root, path, self.limit)
            except safe_read.Refused:
                self._cache[path] = (None, True)  # gone, unreadable or unsafe since indexed
            else:
                known = self.indexed.get(path)
                if known is None or known[:2] != stamp:
                    changed = True
                elif changed := file_digest(data) != known[2]:
                    self.rewritten.add(path)
                self._cache[path] = (data, changed)
        return self._cache[path]

    def read(self, path: str, start_byte: int, end_byte: int) -> tuple[str, bool]:
        data, stale = self._load(path)
        if data is None:
            return "", True
        return data[start_byte:end_byte].decode("utf-8", "replace"), stale

    def changed(self, path: str) -> bool:
        """Whether the file's size or mtime differs from the indexed ones, as a refresh compares
        them (a file gone or refused since counts as changed)."""
        return self._load(path)[1]

    def digest(self, path: str, start_byte: int, end_byte: int) -> str | None:
        """``content_hash`` of the bytes ``start_byte``-``end_byte`` of the file now (None when
        it cannot be read)."""
        data, _ = self._load(path)
        return None if data is None else content_hash(data[start_byte:end_byte])

    def read_cost(self, path: str) -> int:
        """The bytes one read of the file by an agent's read tool returns (``usage_log``)."""
        data, _ = self._load(path)
        return usage_log.read_cost(data) if data is not None else 0

    def widen(self, span: Any, lines: int) -> None:
        """Grow ``span`` (start/end byte and line attributes) by ``lines`` whole lines of its
        file on each side, within the file."""
        data, _ = self._load(span.path)
        if data is None:
            return
        starts = [0, *(m.end() for m in re.finditer(b"\n", data))]
        total = len(starts) - (1 if data.endswith(b"\n") else 0)
        span.start_line = max(1, span.start_line - lines)
        span.end_line = min(total, span.end_line + lines)
        span.start_byte = starts[span.start_line - 1]
        span.end_byte = starts[span.end_line] - 1 if span.end_line < len(starts) else len(data)

    def read_window(self, path: str, span: tuple[int, int, int, int],
                    window: tuple[int, int, int, int],
                    symbol: str | None = None) -> tuple[str, bool]:
        """The window ``(start byte, end byte, start line, end line)`` of the declaration
        ``span`` (the same four), headed by its signature line, with markers for the lines it
        leaves out."""
        text, stale = self.read(path, window[0], window[1])
        data, _ = self._load(path)
        head = signature_line(data, span, window, symbol) if data is not None else None
        return windowed(text, span[2], span[3], window, head), stale


HASH_HEX = 12  # hex digits of a result's content hash: 48 bits, for lines of one file
CONTENT_HASH = re.compile(f"[0-9a-f]{{{HASH_HEX}}}", re.IGNORECASE)


def file_digest(data: bytes) -> bytes:
    """The digest of a file's bytes as the index stores it (``files.digest``)."""
    from kenning import kernels

    return kernels.hash_many([data])[0]


def content_hash(data: bytes) -> str:
    """The short BLAKE3 hash of a result's lines, by which ``get_chunk`` tells that they
    changed since."""
    from kenning import kernels

    return kernels.hash_many([data])[0].hex()[:HASH_HEX]


# Lines above a declaration's name that are not its signature: decorators, attributes,
# comments, the end of a doc comment.
NOT_SIGNATURE = ("@", "#", "//", "/*", "*", '"""', "\'\'\'", "--")
SIGNATURE_LINES = 20  # how far into a declaration its signature line is looked for


def signature_line(data: bytes, span: tuple[int, int, int, int],
                   window: tuple[int, int, int, int], symbol: str | None) -> tuple[int, str] | None:
    """The number and text of the line of a declaration that names it (``def f(``, after its
    decorators), when its window starts below that line; None otherwise."""
    if symbol is None or window[2] <= span[2]:
        return None
    name = QUALIFIER.split(symbol)[-1]
    above = data[span[0]:window[0]].decode("utf-8", "replace").splitlines()
    for offset, line in enumerate(above[:SIGNATURE_LINES]):
        if name in line and not line.strip().startswith(NOT_SIGNATURE):
            return span[2] + offset, line
    return None


def windowed(text: str, start_line: int, end_line: int, window: tuple[int, int, int, int],
             head: tuple[int, str] | None = None) -> str:
    """``text``, the window of the declaration on lines ``start_line``-``end_line``, with
    markers for the lines it leaves out above and below; ``head`` (a line's number and text,
    its signature) shown above the window."""
    above = left_out(start_line, window[2] - 1)
    if head is not None:
        number, line = head
        above = "\n".join(part for part in (left_out(start_line, number - 1), line,
                                             left_out(number + 1, window[2] - 1)) if part)
    below = left_out(window[3] + 1, end_line)
    return "\n".join(part for part in (above, text, below) if part)


# The marker line of ``left_out``: count, first and last line.
MARKER = re.compile(r"… (\d+) more lines? \((\d+)-(\d+)\) …")


def left_out(first: int, last: int) -> str:
    """The marker for lines ``first``-``last`` left out of a snippet ("" when there are none)."""
    if last < first:
        return ""
    count = last - first + 1
    return f"… {count} more line{'' if count == 1 else 's'} ({first}-{last}) …"
