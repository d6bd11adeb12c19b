"""Snippets read from the work tree by byte range, flagged ``stale`` when the file changed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kenning import safe_read


def file_states(conn: sqlite3.Connection, paths: set[str]) -> dict[str, tuple[int, int]]:
    """path -> (size, mtime_ns) as indexed."""
    if not paths:
        return {}
    marks = ",".join("?" * len(paths))
    return {row[0]: (row[1], row[2]) for row in conn.execute(
        f"SELECT path, size, mtime_ns FROM files WHERE path IN ({marks})", sorted(paths))}


class SnippetReader:
    """Reads each file once; ``read`` gives (content, stale) for one byte range. A file that is
    no longer a regular file inside the project (a symlink at any folder on its path, a FIFO, a
    device) or that grew past ``limit`` is not read: its results are stale and empty."""

    def __init__(self, root: Path, indexed: dict[str, tuple[int, int]], limit: int) -> None:
        self.root = root
        self.indexed = indexed
        self.limit = limit
        self._cache: dict[str, tuple[bytes | None, bool]] = {}

    def _load(self, path: str) -> tuple[bytes | None, bool]:
        if path not in self._cache:
            try:
                # the stat of the descriptor read, even if the path was replaced meanwhile
                data, stat = safe_read.read(self.root, path, self.limit)
            except safe_read.Refused:
                self._cache[path] = (None, True)  # gone, unreadable or unsafe since indexed
            else:
                changed = self.indexed.get(path) != (stat.st_size, safe_read.mtime_ns(stat))
                self._cache[path] = (data, changed)
        return self._cache[path]

    def read(self, path: str, start_byte: int, end_byte: int) -> tuple[str, bool]:
        data, stale = self._load(path)
        if data is None:
            return "", True
        return data[start_byte:end_byte].decode("utf-8", "replace"), stale

    def file_size(self, path: str) -> int:
        data, _ = self._load(path)
        return len(data) if data is not None else 0
