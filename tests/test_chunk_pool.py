"""Chunking in worker processes: the same chunks as this process cuts, in the order given, on a
real mixed-language tree (this repository); a worker that dies costs only speed, and a killed
indexer leaves no worker behind (real processes, the real tokenizer and tree-sitter)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kenning import config
from kenning.embedding import make_embedder
from kenning.indexing.chunk_pool import (
    Chunked,
    Chunker,
    ChunkStream,
    chunk_one,
    chunker_for,
    workers_for,
)
from kenning.indexing.sources import walk
from kenning.records import SourceFile

CHECKOUT = Path(__file__).resolve().parents[1]
PYTHON = ("python/kenning/chunking/", "python/kenning/indexing/")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout's files of every language but its test data, and two packages of
    Python: the files do not change while the test reads them."""
    root = tmp_path_factory.mktemp("tree")
    for f in walk(CHECKOUT, max_file_size=1 << 20):
        if f.language not in ("python", "json") or f.path.startswith(PYTHON):
            (root / f.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f.abs_path, root / f.path)
    return root


def _tree(root: Path) -> list[SourceFile]:
    files = list(walk(root, max_file_size=1 << 20))
    assert len({f.language for f in files}) >= 6  # python, rust, markdown, bash, toml, yaml...
    return files


@pytest.fixture(scope="module")
def chunker(tree: Path) -> Chunker:
    return chunker_for(make_embedder(config.load()), tree, 1 << 20)


@pytest.fixture(scope="module")
def files(tree: Path) -> list[SourceFile]:
    files = _tree(tree)
    gone = SourceFile("no/such/file.py", tree / "no/such/file.py", 10, 0, "python")
    files.insert(len(files) // 2, gone)  # vanished since the walk: refused in both, in place
    return files


@pytest.fixture(scope="module")
def reference(chunker: Chunker, files: list[SourceFile]) -> list[Chunked]:
    """The chunks this process cuts: the reference of the workers'."""
    return [chunk_one(chunker, f) for f in files]


def test_workers_cut_the_same_chunks_in_the_same_order(
        chunker: Chunker, files: list[SourceFile], reference: list[Chunked]) -> None:
    with ChunkStream(chunker, files, workers=2) as stream:
        assert len(stream.workers) == 2
        pooled = list(stream)
    assert pooled == reference
    assert [c.file.path for c in pooled] == [f.path for f in files]
    assert [c.file.path for c in pooled if c.refused] == ["no/such/file.py"]  # in its place
    assert sum(len(c.chunks) for c in pooled) > len(files)


def test_a_worker_that_dies_costs_only_speed(
        chunker: Chunker, files: list[SourceFile], reference: list[Chunked]) -> None:
    with ChunkStream(chunker, files, workers=2) as stream:
        chunks = iter(stream)
        first = next(chunks)
        stream.workers[0].process.kill()
        rest = list(chunks)
        assert stream.workers == []  # closed: the rest was chunked here
    assert [first, *rest] == reference


def test_a_small_job_stays_in_this_process(chunker: Chunker, files: list[SourceFile]) -> None:
    small = [f for f in files if f.path.startswith("rust/")][:3]
    assert workers_for(small, chunker) == 0


KILLED_MIDWAY = """
import json, os, signal, sys
from pathlib import Path
from kenning import config
from kenning.embedding import make_embedder
from kenning.indexing.chunk_pool import ChunkStream, chunker_for
from kenning.indexing.sources import walk

root = Path(sys.argv[1])
files = list(walk(root, max_file_size=1 << 20))
stream = ChunkStream(chunker_for(make_embedder(config.load()), root, 1 << 20), files, 2)
next(iter(stream))
print(json.dumps([w.process.pid for w in stream.workers]), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_indexer_leaves_no_worker_behind() -> None:
    done = subprocess.run([sys.executable, "-c", KILLED_MIDWAY, str(CHECKOUT / "rust")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL
    pids = json.loads(done.stdout)
    assert len(pids) == 2
    deadline = time.monotonic() + 60
    while any(_running(pid) for pid in pids):  # they see the end of their input and exit
        assert time.monotonic() < deadline, f"workers {pids} outlived their indexer"
        time.sleep(0.1)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # an exited child of the killed process waits for init to reap it: gone all the same
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
