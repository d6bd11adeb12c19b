"""Removal and the full check of indexes, as the library does them for every front end."""

from __future__ import annotations

from pathlib import Path

import pytest
from filelock import FileLock
from kenning import config, index_admin
from kenning.errors import IndexBusy, IndexDamaged, IndexMissing
from kenning.indexer import refresh
from kenning.store import LOCK_NAME, Index
from kenning.store.vectors import INT8

pytest_plugins = ["index_helpers"]  # fixtures: model, settings, repo


@pytest.fixture
def built(repo: Path, settings: config.Settings, model: object) -> Index:
    refresh(repo, settings, embedder=model)
    return Index.open(repo, settings)


def test_an_index_being_written_is_not_removed(built: Index, repo: Path) -> None:
    settings = config.load()
    with FileLock(built.dir / LOCK_NAME, timeout=0), pytest.raises(IndexBusy):
        index_admin.remove(repo, settings)
    assert built.exists()
    size = built.size_bytes()
    removed = index_admin.remove(repo, settings)
    assert removed == {"type": "remove_index", "removed": [str(built.dir)], "bytes_freed": size}
    assert not built.dir.exists() and not built.dir.parent.exists()  # no empty folder left
    with pytest.raises(IndexMissing, match="has no index to remove"):
        index_admin.remove(repo, settings)
    with pytest.raises(IndexMissing):
        index_admin.project_status(repo, settings)


def test_the_full_check_names_the_damage_and_its_repair(built: Index, repo: Path) -> None:
    settings = config.load()
    assert index_admin.check(repo, settings) == 1
    with (built.dir / INT8).open("r+b") as fh:
        fh.truncate(100)
    with pytest.raises(IndexDamaged, match="is damaged") as caught:
        index_admin.check(repo, settings)
    assert caught.value.hint is not None and "kenning index --full" in caught.value.hint
    report = index_admin.unavailable_status(repo, settings, caught.value)
    assert (report["state"], report["index_dir"], report["healthy"]) == (
        "unreadable", str(built.dir), False)
