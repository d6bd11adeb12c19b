"""A first index that a user can follow: status shows the running indexer (pid, rate, time
left) or that none runs and how to resume; searches never claim a build that is not running;
an index left by a dead indexer is resumed; what searches need is embedded first; a log or a
pipe gets a progress line every few seconds (real processes, the real model)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from embed_server import EmbedServer
from kenning import config, hostos
from kenning.cli import cli
from kenning.cli.index_cmd import _LogLines
from kenning.indexing import state as indexing_state
from kenning.indexing.indexer import embedding_order, refresh
from kenning.retrieval import resolve_projects
from kenning.services.search import search
from kenning.store import Index
from kenning.store.writer import FileRow, MissingVector
from search_fixtures import KENNING, cli_status

pytest_plugins = ["search_fixtures"]  # fixtures: root (the repository, never indexed)


def test_an_indexer_that_died_is_reported_and_the_next_search_resumes_it(root: Path) -> None:
    killed = subprocess.run([*KENNING, "index", str(root), "--quiet"], capture_output=True,
                            env={**os.environ, "KENNING_TEST_KILL_AT": "chunks-committed"})
    assert killed.returncode == hostos.KILLED
    index_dir = Path(cli_status(root)["index_dir"])
    assert (index_dir / indexing_state.STATE_NAME).exists()  # left behind by the dead process
    status = cli_status(root)
    assert status["indexer"] is None and status["chunks_embedded"] == 0
    text = subprocess.run([*KENNING, "status", str(root)], capture_output=True, text=True,
                          check=True).stdout
    assert f"indexer    none running; `kenning index {root}` finishes the index" in text

    found = subprocess.run([*KENNING, "search", "parse_header", str(root), "--json-output"],
                           capture_output=True, text=True, check=True)
    warnings = json.loads(found.stdout)["warnings"]
    assert not any("being built" in w for w in warnings)
    assert "being computed in the background" in found.stderr  # resumed
    deadline = time.monotonic() + 300
    while (status := cli_status(root))["chunks_embedded"] < status["chunks"]:
        assert time.monotonic() < deadline, status
        time.sleep(0.5)


def test_status_and_search_show_a_running_indexer(root: Path) -> None:
    settings = config.load()
    refresh(root, settings, embed=False)
    index = Index.open(root, settings)
    tracker = indexing_state.Tracker(index.dir)  # this process is the indexer
    tracker({"type": "embedding", "done": 0, "total": 40})
    tracker.state["phase_started"] -= 2.0  # the phase began two seconds ago: it has a rate
    tracker.written = 0.0  # write the next event at once
    tracker({"type": "embedding", "done": 10, "total": 40})
    try:
        running = cli_status(root)["indexer"]
        assert running["pid"] == os.getpid() and running["phase"] == "embedding"
        assert running["done"] == 10 and running["rate"] > 0 and running["eta_seconds"] > 0
        text = subprocess.run([*KENNING, "status", str(root)], capture_output=True, text=True,
                              check=True).stdout
        assert f"indexer    running (pid {os.getpid()}, embedding 10/40, " in text
        # its count is of vectors, the problem's of chunks: the line says why they differ
        assert re.search(r"health     \d+ chunks have no vector yet \(chunks of the same text "
                         r"share a vector, so the indexer has fewer to embed\)\.", text), text
        result = search("parse_header", resolve_projects(settings, [root]), settings=settings,
                        refresh=False)
        assert any(f"is still being built (pid {os.getpid()}" in w for w in result["warnings"])
    finally:
        tracker.close()
    assert not (index.dir / indexing_state.STATE_NAME).exists()


def test_a_down_embedder_is_named_instead_of_a_background_build(
        embed_server: EmbedServer, root: Path) -> None:
    settings = config.load(embed_server.settings("ollama"))
    embed_server.stop()
    result = search("parse_header", resolve_projects(settings, [root]), settings=settings)
    assert result["vectors_deferred"] == []  # no indexer started that would fail at once
    assert any(w.startswith("The embedder is down, so no vectors are being computed") and
               f"`kenning index {root}` resumes once it answers" in w
               for w in result["warnings"])
    assert result["results"][0]["symbol"] == "parse_header"


def test_implementation_is_embedded_before_tests_docs_and_generated_text() -> None:
    def row(path: str, mtime: int, language: str | None = "python") -> FileRow:
        return FileRow(path, 1, mtime, b"", "", language)

    files = {r.path: r for r in [row("src/old.py", 1), row("src/new.py", 9),
                                 row("tests/test_new.py", 10), row("README.md", 10, "markdown"),
                                 row("gen/api_pb2.py", 10), row("examples/demo.py", 10)]}
    missing = [MissingVector(bytes([i]), path, 0, 1) for i, path in enumerate(sorted(files))]
    order = [m.path for m in embedding_order(missing, files)]
    assert order[:2] == ["src/new.py", "src/old.py"]  # code first, the recent change first
    assert order.index("tests/test_new.py") > 1 and order.index("README.md") > 1


def test_progress_in_a_log_is_a_line_every_few_seconds(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_LogLines, "EVERY", 0.0)
    done = CliRunner().invoke(cli, ["index", str(root)])  # stderr is no terminal here
    assert done.exit_code == 0, done.output
    lines = [line for line in done.stderr.splitlines() if line.startswith("kenning index: ")]
    assert lines[0] == "kenning index: 7 files to check"
    assert "kenning index: 7/7 files read" in lines
    assert any(line.endswith(" vectors") or "/s, about " in line for line in lines)
    assert lines[-1].startswith("kenning index: ") and lines[-1].endswith(" vectors")
    monkeypatch.setattr(_LogLines, "EVERY", 3600.0)  # a quick run: only the totals
    (root / "src" / "more.py").write_text("def more():\n    return 1\n")
    again = CliRunner().invoke(cli, ["index", str(root)])
    assert [line for line in again.stderr.splitlines() if line.startswith("kenning index")] == [
        "kenning index: 8 files to check", "kenning index: 1/1 files read",
        "kenning index: 1/1 vectors"]


def test_an_indexer_record_names_a_running_indexer_only(root: Path) -> None:
    settings = config.load()
    refresh(root, settings, embed=False)
    index_dir = Index.open(root, settings).dir
    state = index_dir / indexing_state.STATE_NAME
    me: dict[str, Any] = {"pid": os.getpid(), "phase": "embedding", "done": 1, "total": 4,
          "pid_started": hostos.started(os.getpid())}
    state.write_text(json.dumps(me))
    running = indexing_state.read(index_dir)
    assert running is not None and running["pid"] == os.getpid()  # this process: running
    for record in [{**me, "pid": 0}, {**me, "pid": -1}, {**me, "pid": 10**30},
                   {**me, "pid": "12x"}, [1, 2], {**me, "done": "many"}]:
        state.write_text(json.dumps(record))
        assert indexing_state.read(index_dir) is None, record
    if me["pid_started"] is not None:  # a system that tells when a process started
        state.write_text(json.dumps({**me, "pid_started": me["pid_started"] - 1}))
        assert indexing_state.read(index_dir) is None  # the pid was taken by another process
    state.write_text(json.dumps(me))  # left by a live process that stopped indexing
    refresh(root, settings, embed=False)  # the next indexer, under the lock, drops it
    assert not state.exists() and cli_status(root)["indexer"] is None
