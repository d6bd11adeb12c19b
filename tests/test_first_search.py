"""The first search in a project never indexed: it answers from words and symbols as soon as the
chunks are committed, says how complete the index is, and leaves the vectors to a background
`kenning index` (real processes, the real model)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from kenning import config
from kenning.cli.search_cmd import _Progress
from kenning.retrieval import ProjectRef
from kenning.services.freshness import Freshness, Policy
from kenning.services.search import search
from kenning.store import Index
from search_fixtures import KENNING, cli_status

pytest_plugins = ["search_fixtures"]  # fixtures: root (the repository, never indexed)


def _wait_for_vectors(root: Path, timeout: float = 300.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = cli_status(root)
        if status["chunks"] and status["chunks_embedded"] == status["chunks"]:
            return status
        assert time.monotonic() < deadline, f"the background index never finished: {status}"
        time.sleep(0.5)


def test_first_search_answers_from_words_then_vectors_arrive_in_the_background(
        root: Path) -> None:
    first = subprocess.run([*KENNING, "search", "parse_header", str(root), "--json-output"],
                           capture_output=True, text=True, check=True)
    result = json.loads(first.stdout)  # stdout is the JSON and nothing else
    assert result["results"][0]["symbol"] == "parse_header"
    assert any("incomplete" in w and "0 of" in w for w in result["warnings"])
    assert "background" in first.stderr and "Traceback" not in first.stderr

    status = _wait_for_vectors(root)
    assert status["healthy"] is True
    again = subprocess.run([*KENNING, "search", "how are failed requests retried", str(root),
                            "--json-output"], capture_output=True, text=True, check=True)
    result = json.loads(again.stdout)
    assert result["warnings"] == [] and "background" not in again.stderr
    assert result["results"][0]["path"] == "src/http/retry.py"


def test_first_search_on_a_terminal_keeps_stdout_pure_json(root: Path) -> None:
    leader, follower = pty.openpty()
    try:
        done = subprocess.run([*KENNING, "search", "evict the least recently used entries",
                               str(root), "--json-output"], stdout=subprocess.PIPE,
                              stderr=follower, text=True, check=True)
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                data = os.read(leader, 4096)
            except OSError:  # the terminal closed: all read
                break
            if not data:
                break
            shown += data
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert json.loads(done.stdout)["results"]  # pure JSON despite the terminal on stderr
    assert b"background" in shown
    _wait_for_vectors(root)  # let the background index finish before the folder goes


def test_library_defers_the_vectors_of_a_first_index_to_the_caller(
        local_model: None, root: Path) -> None:
    settings = config.load()
    result = search("verify_password", [ProjectRef("p", root)], settings=settings)
    assert result["vectors_deferred"] == [str(root.resolve())]
    assert result["results"][0]["symbol"] == "verify_password"
    with Index.open(root, settings).snapshot() as snap:
        assert snap.chunks > 0 and snap.vectors == 0 and snap.status == "partial"

    # a policy with no limit embeds what is missing before answering
    events: list[str] = []
    result = search("verify_password", [ProjectRef("p", root)], settings=settings,
                    progress=lambda e: events.append(e["type"]),
                    freshness=Freshness(Policy(sync_embed_limit=None)))
    assert "embedding" in events and result["vectors_deferred"] == []
    assert not any("incomplete" in w for w in result["warnings"])
    # a complete index is never deferred
    again = search("verify_password", [ProjectRef("p", root)], settings=settings)
    assert again["vectors_deferred"] == []


def test_progress_line_overwrites_itself_and_is_erased(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_Progress, "DELAY", 0.0)
    progress = _Progress()
    for event in ({"type": "scan", "files": 5},
                  {"type": "chunking", "done": 5, "total": 5, "chunks": 12},
                  {"type": "committed", "generation": 1, "files": 5, "removed": 0, "chunks": 12},
                  {"type": "embedding", "done": 4, "total": 12},
                  {"type": "finished"}):
        progress(event)
    progress.clear()
    err = capsys.readouterr().err
    assert err.split("\r\x1b[K")[1:] == ["Indexing: 5 files to check",
                                         "Indexing: 5/5 files read, 12 chunks",
                                         "Indexing: 12 chunks searchable",
                                         "Indexing: 4/12 vectors", ""]


def test_quick_refresh_draws_no_progress(capsys: pytest.CaptureFixture[str]) -> None:
    progress = _Progress()  # an unchanged project finishes well before the line would appear
    progress({"type": "scan", "files": 5})
    progress.clear()
    assert capsys.readouterr().err == ""
