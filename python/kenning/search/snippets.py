"""Snippets read from the work tree by byte range, flagged ``stale`` when the file changed."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path


def file_states(conn: sqlite3.Connection, paths: set[str]) -> dict[str, tuple[int, int]]:
    """path -> (size, mtime_ns) as indexed."""
    if not paths:
        return {}
    marks = ",".join("?" * len(paths))
    return {row[0]: (row[1], row[2]) for row in conn.execute(
        f"SELECT path, size, mtime_ns FROM files WHERE path IN ({marks})", sorted(paths))}


class SnippetReader:
    """Reads each file once; ``read`` gives (content, stale) for one byte range."""

    def __init__(self, root: Path, indexed: dict[str, tuple[int, int]]) -> None:
        self.root = root
        self.indexed = indexed
        self._cache: dict[str, tuple[bytes | None, bool]] = {}

    def _load(self, path: str) -> tuple[bytes | None, bool]:
        if path not in self._cache:
            try:
                with open(os.path.join(self.root, path), "rb") as fh:
                    stat = os.fstat(fh.fileno())  # the file read, even if replaced meanwhile
                    data: bytes | None = fh.read()
            except OSError:
                self._cache[path] = (None, True)  # deleted or unreadable since it was indexed
            else:
                changed = self.indexed.get(path) != (stat.st_size, stat.st_mtime_ns)
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
