"""The per-file cache of snapshot reads: a value is reused only for the snapshot it was read
from, and the cache keeps the files used last."""

from __future__ import annotations

from kenning.retrieval.file_cache import FileCache


class Reader:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, paths: list[str]) -> dict[str, str]:
        self.calls.append(paths)
        return {p: f"{p}@{len(self.calls)}" for p in paths if p != "gone.py"}


def test_a_value_is_read_once_per_snapshot() -> None:
    cache: FileCache[str] = FileCache(10)
    read = Reader()
    first = cache.get(("token", 1), ["a.py", "b.py"], read)
    assert cache.get(("token", 1), ["b.py", "a.py"], read) == first
    assert read.calls == [["a.py", "b.py"]]
    # another generation or another index never meets the value
    assert cache.get(("token", 2), ["a.py"], read) == {"a.py": "a.py@2"}
    assert cache.get(("other", 1), ["a.py"], read) == {"a.py": "a.py@3"}


def test_only_missing_paths_are_read_and_a_path_without_a_value_stays_absent() -> None:
    cache: FileCache[str] = FileCache(10)
    read = Reader()
    cache.get(("token", 1), ["a.py"], read)
    assert cache.get(("token", 1), ["a.py", "b.py", "gone.py"], read) == {
        "a.py": "a.py@1", "b.py": "b.py@2"}
    assert read.calls[-1] == ["b.py", "gone.py"]


def test_the_files_used_last_are_kept() -> None:
    cache: FileCache[str] = FileCache(2)
    read = Reader()
    cache.get(("token", 1), ["a.py", "b.py"], read)
    cache.get(("token", 1), ["a.py"], read)  # a.py is now the one used last
    cache.get(("token", 1), ["c.py"], read)  # b.py goes
    assert cache.get(("token", 1), ["a.py", "b.py"], read) == {"a.py": "a.py@1",
                                                               "b.py": "b.py@3"}


def test_rows_of_no_snapshot_are_never_kept() -> None:
    cache: FileCache[str] = FileCache(10)
    read = Reader()
    cache.get(None, ["a.py"], read)
    cache.get(None, ["a.py"], read)
    assert read.calls == [["a.py"], ["a.py"]]
