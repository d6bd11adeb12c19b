"""Files dated after 2262 (past a 64-bit nanosecond count) or before 1970: both walks agree on
their stamps, and they are indexed fresh, not stale forever."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from index_helpers import WALK_BACKENDS, rust_walk_built
from kenning import config
from kenning.indexing import indexer, sources
from kenning.indexing.sources import changes, walk
from kenning.retrieval import resolve_projects
from kenning.services.search import search

YEAR_2300 = 10_413_792_000.25  # seconds: 2300-01-01, a quarter second in
BEFORE_1970 = -1_000_000_000.75  # 1938
I64_MAX, I64_MIN = (1 << 63) - 1, -(1 << 63)
MiB = 1 << 20


@pytest.fixture(params=WALK_BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(sources, "BACKEND", request.param)
    return str(request.param)


def dated_tree(root: Path) -> Path:
    for name, when in (("future.py", YEAR_2300), ("past.py", BEFORE_1970), ("now.py", None)):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'def {name[:-3]}_handler():\n    """Handle the {name[:-3]} case."""\n')
        if when is not None:
            os.utime(path, (when, when))
    (root / ".git").mkdir()
    return root


def test_both_walks_give_the_same_stamps_clamped_to_64_bits(tmp_path: Path) -> None:
    root = dated_tree(tmp_path / "repo")
    if os.stat(root / "future.py").st_mtime_ns <= I64_MAX:
        pytest.skip("this file system cannot store a date after 2262")
    if not rust_walk_built():
        pytest.skip("Rust core not built")
    found = {name: [(f.path, f.size, f.mtime_ns) for f in walk(root, max_file_size=MiB,
                                                                backend=name)]
             for name in ("python", "rust")}
    assert found["python"] == found["rust"]
    stamps = {path: mtime for path, _, mtime in found["python"]}
    assert stamps["future.py"] == I64_MAX
    assert stamps["past.py"] == -1_000_000_000_750_000_000
    assert I64_MIN < stamps["now.py"] < I64_MAX


def test_extreme_times_are_indexed_fresh(tmp_path: Path, backend: str) -> None:
    root = dated_tree(tmp_path / "repo")
    settings = config.load()
    first = indexer.refresh(root, settings)
    assert first.status == "complete" and first.files == 3
    again = indexer.refresh(root, settings)
    assert not again.content_changed  # the stored stamps are the walked ones
    known = b"\0".join(f"{f.path}\0{f.size}\0{f.mtime_ns}".encode()
                       for f in walk(root, max_file_size=MiB))
    assert changes(root, max_file_size=MiB, known=known).files == []
    refs = resolve_projects(settings, [root])
    hits = search("handle the future case", refs, settings=settings, refresh=False)["results"]
    by_path = {h["path"]: h for h in hits}
    assert {"future.py", "past.py"} <= set(by_path)
    assert not by_path["future.py"]["stale"] and not by_path["past.py"]["stale"]
