"""Crash safety: a real `kenning index` process killed with SIGKILL at several stages, or failing
to write its vector files, leaves the last committed snapshot intact and readable, serves no
orphan rows, and the next run reuses every vector already embedded.

Stages are reached with ``KENNING_TEST_KILL_AT=<stage>[:<n>]`` (see ``store.writer.crash_point``)
or by killing the process after it reports embedding progress.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from embed_server import EmbedServer
from index_helpers import (
    FILES,
    CountingEmbedder,
    check_consistent,
    kenning_on_a_full_disk,
    make_repo,
)
from kenning import config, hostos
from kenning.embedding import Embedder, make_embedder
from kenning.indexing.indexer import RefreshResult, refresh
from kenning.store import Index
from kenning.store.vectors import INT8

BATCH = 4


@pytest.fixture(scope="module")
def model():
    return make_embedder(config.load())


@pytest.fixture
def settings():
    return config.load({"embedder.batch_size": str(BATCH), "embedder.concurrency": "1"})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    extra = {f"pkg/mod{i}.py": f"def handler_{i}(event):\n    return event.get('k{i}')\n\n\n"
             f"def helper_{i}(values):\n    return sorted(values)[:{i}]\n" for i in range(6)}
    return make_repo(tmp_path / "repo", {**FILES, **extra})


def run_index(repo: Path, *args: str, kill_at: str | None = None,
              env_extra: dict[str, str] | None = None,
              kenning: list[str] | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "KENNING_EMBEDDER_BATCH_SIZE": str(BATCH),
           "KENNING_EMBEDDER_CONCURRENCY": "1", **(env_extra or {})}
    if kill_at:
        env["KENNING_TEST_KILL_AT"] = kill_at
    return subprocess.Popen([*(kenning or [sys.executable, "-m", "kenning"]), "index", str(repo),
                             *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def killed_at(repo: Path, stage: str) -> None:
    proc = run_index(repo, "--json-output", kill_at=stage)
    proc.communicate(timeout=120)
    assert proc.returncode == hostos.KILLED


def resume(repo: Path, settings: config.Settings, model: Embedder
           ) -> tuple[CountingEmbedder, RefreshResult]:
    emb = CountingEmbedder(model)
    result = refresh(repo, settings, embedder=emb)
    assert not result.busy  # the dead process's lock is gone with it
    return emb, result


def test_killed_inside_the_files_transaction_keeps_the_previous_snapshot(repo, settings,
                                                                         model):
    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    before = check_consistent(index)
    (repo / "app" / "db.py").write_text("def reconnect():\n    return None\n")
    (repo / "README.md").unlink()
    killed_at(repo, "files-written")
    assert check_consistent(index) == before  # nothing of the half-done refresh is visible
    emb, result = resume(repo, settings, model)
    assert result.generation == 2 and (result.files_changed, result.files_removed) == (1, 1)
    assert len(emb.texts) == result.vectors_embedded >= 1


def test_killed_after_chunks_commit(repo, settings, model):
    killed_at(repo, "chunks-committed")
    index = Index.open(repo, settings, embedder=model)
    state = check_consistent(index)
    assert (state["generation"], state["status"], state["rows"]) == (1, "partial", 0)
    assert state["chunks"] > 3 * BATCH  # lexical search already has everything
    emb, result = resume(repo, settings, model)
    assert len(emb.texts) == result.vectors_embedded == state["chunks"]
    assert check_consistent(index)["status"] == "complete"


def test_killed_mid_vectors_keeps_committed_batches(repo, settings, model):
    killed_at(repo, "batch-committed:2")
    index = Index.open(repo, settings, embedder=model)
    state = check_consistent(index)
    assert state["rows"] == 2 * BATCH and state["status"] == "partial"
    emb, _ = resume(repo, settings, model)
    assert len(emb.texts) == state["chunks"] - 2 * BATCH  # nothing embedded twice
    assert check_consistent(index)["rows"] == state["chunks"]


def test_killed_between_vector_write_and_commit(repo, settings, model):
    killed_at(repo, "vectors-written:2")
    index = Index.open(repo, settings, embedder=model)
    state = check_consistent(index)
    assert state["rows"] == BATCH  # the second batch's rows are on disk but not committed
    assert (index.dir / INT8).stat().st_size == 2 * BATCH * 384
    emb, _ = resume(repo, settings, model)
    assert len(emb.texts) == state["chunks"] - BATCH
    final = check_consistent(index)
    assert (index.dir / INT8).stat().st_size == final["rows"] * 384  # the tail was cut


def test_killed_while_embedding_by_progress(repo, settings, model):
    proc = run_index(repo, "--json-output")
    assert proc.stdout is not None
    for line in proc.stdout:
        event = json.loads(line)
        if event["type"] == "embedding" and event["done"] >= BATCH:
            hostos.kill_now(proc.pid)
            break
    proc.communicate(timeout=60)
    index = Index.open(repo, settings, embedder=model)
    state = check_consistent(index)
    assert state["rows"] >= BATCH
    emb, result = resume(repo, settings, model)
    assert len(emb.texts) == state["chunks"] - state["vectors"]
    assert result.status == "complete"


def test_failed_vector_write_leaves_the_snapshot_intact(repo, settings, model):
    first = refresh(repo, settings, embedder=model, embed=False)
    proc = run_index(repo, kenning=kenning_on_a_full_disk(33_000))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 4, err
    assert "Error: Cannot write the" in err and "Traceback" not in err
    index = Index.open(repo, settings, embedder=model)
    state = check_consistent(index)
    assert state["generation"] == first.generation and state["status"] == "partial"
    emb, result = resume(repo, settings, model)
    assert len(emb.texts) == state["chunks"] - state["rows"] and result.status == "complete"
    assert (index.dir / INT8).stat().st_size == state["chunks"] * 384


def test_embedding_server_going_down_mid_run(repo):
    with EmbedServer() as server:
        overrides = {**server.settings("ollama"), "embedder.batch_size": str(BATCH),
                     "embedder.concurrency": "1"}
        env = {config.env_name(k): str(v) for k, v in overrides.items()}
        proc = run_index(repo, "--json-output", env_extra=env)
        assert proc.stdout is not None
        for line in proc.stdout:
            event = json.loads(line)
            if event["type"] == "embedding" and event["done"] >= BATCH:
                server.stop()
                break
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 3 and "Cannot reach Ollama" in err and "resume" in err
        settings = config.load(overrides)
        index = Index.open(repo, settings)
        state = check_consistent(index)
        assert state["status"] == "partial" and state["rows"] >= BATCH
        server.restart()
        server.reset()
        result = refresh(repo, settings)
        sent = sum(len(body["input"]) for body in server.bodies("/api/embed"))
        assert sent == result.vectors_embedded == state["chunks"] - state["vectors"]
        assert check_consistent(index)["status"] == "complete"
