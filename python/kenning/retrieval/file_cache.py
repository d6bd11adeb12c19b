"""Values read for the files of one index snapshot, kept for later searches of the same
snapshot: a long-lived server reads each file's rows once, not once per search. A snapshot is
named by its index token and generation, so a new generation never meets an older value."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

Value = TypeVar("Value")
# (index token, generation) of a snapshot; None for rows that are no snapshot's (the engine's)
SnapshotKey = tuple[str, int] | None


class FileCache(Generic[Value]):
    """The values of the ``size`` files used last, across snapshots."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[tuple[str, int, str], Value] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, snapshot: SnapshotKey, paths: Sequence[str],
            read: Callable[[list[str]], dict[str, Value]]) -> dict[str, Value]:
        """Path -> its value, from the cache or else from ``read`` (called once, with the paths
        missing; a path it leaves out has no value)."""
        out: dict[str, Value] = {}
        if snapshot is not None:
            with self._lock:
                for path in paths:
                    if (key := (snapshot[0], snapshot[1], path)) in self._values:
                        self._values.move_to_end(key)
                        out[path] = self._values[key]
        missing = [path for path in paths if path not in out]
        if not missing:
            return out
        found = read(missing)
        out.update(found)
        if snapshot is not None:
            with self._lock:
                for path, value in found.items():
                    self._values[(snapshot[0], snapshot[1], path)] = value
                while len(self._values) > self._size:
                    self._values.popitem(last=False)
        return out
