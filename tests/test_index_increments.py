"""A refresh out of time commits the files chunked so far, in priority order, and the next one
goes on from there to the same index as one run; a search answers from what is committed and
says how much is still to come. Texts past the memory cap are read again, to the same vectors
(real SQLite, tree-sitter and the local model)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from index_helpers import FILES, check_consistent
from kenning.indexing import indexer
from kenning.indexing.indexer import refresh
from kenning.indexing.priority import file_priority
from kenning.retrieval import ProjectRef
from kenning.services.freshness import Freshness, Policy
from kenning.services.search import search
from kenning.store import Index

pytest_plugins = ["index_helpers"]  # fixtures: model, settings, repo


def _chunks(index: Index) -> set[tuple[Any, ...]]:
    with index.snapshot() as snap:
        return set(snap._conn.execute(
            "SELECT path, start_byte, end_byte, kind, symbol, content_hash FROM chunks"))


def _files(index: Index) -> list[str]:
    with index.snapshot() as snap:
        return list(snap.file_states())


def _edit_server(repo: Path) -> None:
    """app/server.py becomes the latest change."""
    server = repo / "app" / "server.py"
    server.write_text(server.read_text() + "\n")


def _by_priority(index: Index) -> list[str]:
    with index.snapshot() as snap:
        rows = snap._conn.execute("SELECT path, language, mtime_ns FROM files").fetchall()
    return [path for path, _, _ in sorted(rows, key=lambda r: file_priority(*r))]


def test_a_refresh_out_of_time_commits_what_it_chunked_and_the_next_goes_on(
        repo: Path, settings: Any, model: Any, tmp_path: Path) -> None:
    _edit_server(repo)
    order: list[str] = []
    for run in range(1, len(FILES)):
        result = refresh(repo, settings, embedder=model, embed=False, chunk_for=0)
        index = Index.open(repo, settings, embedder=model)
        counts = check_consistent(index)  # every increment is a whole snapshot
        assert counts["files"] == run and result.files_pending == len(FILES) - run
        assert result.chunks_pending > 0
        order += [p for p in _files(index) if p not in order]
    last = refresh(repo, settings, embedder=model, chunk_for=0)
    assert last.files_pending == 0 and check_consistent(index)["status"] == "complete"
    order += [p for p in _files(index) if p not in order]
    assert order == _by_priority(index)
    assert order[0] == "app/server.py"  # the project's own code, the latest change first

    copy = shutil.copytree(repo, tmp_path / "copy")
    refresh(copy, settings, embedder=model)  # the same tree in one run
    assert _chunks(index) == _chunks(Index.open(copy, settings, embedder=model))
    assert refresh(repo, settings, embedder=model).nothing_changed


def test_a_first_search_out_of_time_answers_from_the_committed_files(
        local_model: None, repo: Path, settings: Any) -> None:
    _edit_server(repo)
    events: list[dict[str, Any]] = []
    result = search("start_server", [ProjectRef("p", repo)], settings=settings,
                    progress=events.append,
                    freshness=Freshness(Policy(chunk_seconds=0, chunk_floor_seconds=0)))
    assert result["results"][0]["path"] == "app/server.py"  # first in priority order
    assert {r["path"] for r in result["results"]} == {"app/server.py"}
    warning = next(w for w in result["warnings"] if "still to come" in w)
    assert f"{len(FILES) - 1} files (about" in warning
    assert result["vectors_deferred"] == [str(repo.resolve())]  # the rest, in the background
    assert [e["type"] for e in events].count("committed") == 1


def test_a_walk_that_spent_the_time_still_leaves_the_floor_to_chunk(
        local_model: None, repo: Path, settings: Any) -> None:
    # the budget is gone before chunking starts, as a walk of 100,000 files spends it: the
    # floor still chunks (here every file, a small tree), not just the first file
    result = search("start_server", [ProjectRef("p", repo)], settings=settings,
                    freshness=Freshness(Policy(chunk_seconds=0, chunk_floor_seconds=600)))
    assert not [w for w in result["warnings"] if "still to come" in w]
    index = Index.open(repo, settings)
    assert sorted(_files(index)) == sorted(FILES)


def test_texts_past_the_memory_cap_are_read_again_to_the_same_vectors(
        repo: Path, settings: Any, model: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    refresh(repo, settings, embedder=model)
    copy = shutil.copytree(repo, tmp_path / "copy")
    monkeypatch.setattr(indexer, "TEXTS_KEPT_BYTES", 0)
    monkeypatch.setattr(indexer, "EMBED_FILES", 1)
    monkeypatch.setattr(indexer, "EMBED_AT_ONCE", 0)
    result = refresh(copy, settings, embedder=model)
    assert result.vectors_embedded == result.chunks > 2
    kept, reread = (Index.open(r, settings, embedder=model) for r in (repo, copy))
    assert check_consistent(reread)["status"] == "complete"
    with kept.snapshot() as a, reread.snapshot() as b:
        hashes = list(a.vectors_of_hashes(None))
        ours, theirs = a.vectors_of_hashes(hashes), b.vectors_of_hashes(hashes)
        assert all(a.bits[ours[h]].tobytes() == b.bits[theirs[h]].tobytes() for h in hashes)
