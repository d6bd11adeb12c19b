"""Removal and the full check of indexes, as the library does them for every front end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock
from kenning import config
from kenning.embedding import Embedder
from kenning.errors import IndexBusy, IndexDamaged, IndexMissing
from kenning.indexing.indexer import refresh
from kenning.services import index_admin
from kenning.store import LOCK_NAME, Index
from kenning.store.vectors import INT8

pytest_plugins = ["index_helpers"]  # fixtures: model, settings, repo


@pytest.fixture
def built(repo: Path, settings: config.Settings, model: Embedder) -> Index:
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
    gone = index_admin.project_status(repo, settings)
    assert (gone["state"], gone["healthy"], gone["problems"][0]["error"]) == (
        "not indexed", False, IndexMissing.code)


def test_the_full_check_names_the_damage_and_its_repair(built: Index, repo: Path) -> None:
    settings = config.load()
    assert index_admin.check(repo, settings) == 1
    with (built.dir / INT8).open("r+b") as fh:
        fh.truncate(100)
    with pytest.raises(IndexDamaged, match="is damaged") as caught:
        index_admin.check(repo, settings)
    assert caught.value.hint is not None and "kenning index --full" in caught.value.hint
    report = index_admin.unreadable_status(repo, settings, caught.value)
    assert (report["state"], report["index_dir"], report["healthy"]) == (
        "unreadable", str(built.dir), False)


def _cli_status(capsys: pytest.CaptureFixture[str], root: Path) -> tuple[int, dict[str, Any]]:
    import json

    from index_helpers import kenning_cli

    code, out, _ = kenning_cli(capsys, "status", str(root), "--json-output")
    return code, json.loads(out)


def test_one_status_record_in_every_state_from_the_cli_and_the_library(
        repo: Path, settings: config.Settings, model: Embedder,
        capsys: pytest.CaptureFixture[str]) -> None:
    import kenning

    code, never = _cli_status(capsys, repo)
    assert code == 0 and never["state"] == "not indexed" and not never["healthy"]
    assert never == kenning.status(repo).to_dict()
    [problem] = never["problems"]
    assert problem["error"] == IndexMissing.code
    assert str(problem["hint"]).startswith(f"Run `kenning index {repo}`")
    refresh(repo, settings, embedder=model)
    code, ready = _cli_status(capsys, repo)
    assert code == 0 and (ready["state"], ready["healthy"]) == ("ready", True)
    assert ready == kenning.status(repo).to_dict()
    index = Index.open(repo, settings)
    db_file = index.dir / "index.db"
    for extra in ("index.db-wal", "index.db-shm"):
        (index.dir / extra).unlink(missing_ok=True)
    db_file.write_bytes(b"\x13" * 4096)
    from kenning.store import _readers

    _readers.drop(index.dir)
    code, damaged = _cli_status(capsys, repo)
    assert code == 4 and damaged["state"] == "unreadable" and not damaged["healthy"]
    assert damaged["index_dir"] == str(index.dir)
    assert damaged["problems"][0]["error"] == IndexDamaged.code
    assert damaged == kenning.status(repo).to_dict()


def test_status_counts_changes_as_the_refresh_does_by_stat_data(
        built: Index, repo: Path, settings: config.Settings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from kenning.indexing import sources

    (repo / "app" / "new.py").write_text("def fresh():\n    return 1\n")
    kept = next(p for p in sorted(repo.rglob("*.py")) if p.name != "new.py")
    stat = kept.stat()
    kept.write_bytes(kept.read_bytes().upper())  # same size and mtime: a refresh skips it
    os.utime(kept, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    touched = next(p for p in sorted(repo.rglob("*.md")))
    touched.write_text(touched.read_text() + "\nmore\n")

    def no_content_walk(*args: object, **kwargs: object) -> None:
        raise AssertionError("status walked the files' contents")

    monkeypatch.setattr(sources, "walk", no_content_walk)
    report = index_admin.project_status(repo, settings)
    assert report["changed_since"] == {"added": 1, "changed": 1, "removed": 0}


def test_an_index_of_an_earlier_model_file_is_rebuilt_never_searched(
        repo: Path, settings: config.Settings, model: Embedder,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import kenning
    from kenning.embedding import local

    shipped = local.weights_id()
    monkeypatch.setattr(local, "weights_id", lambda: "0" * 16)  # a release before this one
    refresh(repo, settings, embedder=model)
    earlier = Index.open(repo, settings)
    monkeypatch.setattr(local, "weights_id", lambda: shipped)
    report = index_admin.project_status(repo, settings)
    assert report["state"] == "not indexed" and report["index_dir"] is None
    [problem] = report["problems"]
    assert f"the one in {earlier.dir} was built by another release" in str(problem["message"])
    assert "answering from words and symbols at once" in str(problem["hint"])
    found = kenning.search("parse the request headers", repo)  # builds this release's index
    assert found.results
    rebuilt = Index.open(repo, settings)
    assert rebuilt.dir != earlier.dir and rebuilt.descriptor["weights"] == shipped
    assert earlier.exists()  # left for the user to remove, never read
