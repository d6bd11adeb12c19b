"""Helpers shared by the store and indexer tests: fixture repositories, an embedder wrapper
that counts (and can fail) calls, an index consistency check, and the fixtures ``model``,
``settings`` and ``repo`` (test modules load them with ``pytest_plugins = ["index_helpers"]``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kenning import config
from kenning.cli import main
from kenning.embedding import make_embedder
from kenning.errors import EmbedderUnavailable
from kenning.store import Index
from kenning.store.vectors import names


def kenning_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``kenning ARGS`` as the console script runs it, in this process: the exit code, stdout
    and stderr, which never holds a traceback nor a parser's message leaked from Python."""
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "invalid literal" not in err
    return code, out, err


def kenning_on_a_full_disk(limit: int) -> list[str]:
    """The command line of a ``kenning`` whose writes past ``limit`` bytes fail with EFBIG, as on
    a full disk (Python ignores SIGXFSZ). The child sets the limit itself: a ``preexec_fn`` runs
    in a fork of this process, which is unsafe once it has threads (gRPC's, after the shared-index
    tests, aborted such a child)."""
    start = (f"import resource, runpy; resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, "
             f"{limit})); runpy.run_module('kenning', run_name='__main__', alter_sys=True)")
    return [sys.executable, "-c", start]


def rust_walk_built() -> bool:
    try:
        from kenning import _core
    except ImportError:
        return False
    return hasattr(_core, "walk")


needs_rust_walk = pytest.mark.skipif(not rust_walk_built(), reason="Rust core not built")
WALK_BACKENDS = ["python", pytest.param("rust", marks=needs_rust_walk)]

FILES = {
    "app/server.py": '''"""HTTP server."""


def start_server(port: int) -> None:
    """Open a socket and serve requests forever."""
    print("serving on", port)


class RetryPolicy:
    """Exponential backoff for failed requests."""

    def delay(self, attempt: int) -> float:
        return 0.1 * 2 ** attempt
''',
    "app/db.py": '''import sqlite3


def connect(path: str) -> sqlite3.Connection:
    """Open the database in WAL mode."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    return conn
''',
    "lib/util.js": '''function parseHeader(line) {
  const [name, value] = line.split(":");
  return { name: name.trim(), value: value.trim() };
}

module.exports = { parseHeader };
''',
    "docs/guide.md": '''# Guide

Install the tool and run it.

## Configuration

Settings live in a TOML file.
''',
    "README.md": "# Demo\n\nA small project used by the tests.\n",
}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), "-c", "user.email=t@example.com",
                           "-c", "user.name=t", "-c", "init.defaultBranch=main", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def make_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for path, text in (files or FILES).items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    return root


class CountingEmbedder:
    """Wraps a real embedder: records every text it embeds; optionally fails after a number."""

    def __init__(self, inner: Any, *, fail_after: int | None = None, **overrides: Any) -> None:
        self.inner, self.fail_after, self.overrides = inner, fail_after, overrides
        self.texts: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name in self.overrides:
            return self.overrides[name]
        return getattr(self.inner, name)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail_after is not None and len(self.texts) + len(texts) > self.fail_after:
            raise EmbedderUnavailable("The embedding server at 127.0.0.1 is unreachable.",
                                      hint="Start it.")
        self.texts.extend(texts)
        return np.asarray(self.inner.embed_documents(texts))


def check_consistent(index: Index) -> dict[str, Any]:
    """Assert what a reader may rely on in the latest snapshot; returns its counts."""
    with index.snapshot() as snap:
        c = snap._conn
        files = {r[0] for r in c.execute("SELECT path FROM files")}
        chunk_ids = {r[0] for r in c.execute("SELECT id FROM chunks")}
        orphans = c.execute("SELECT count(*) FROM chunks WHERE path NOT IN "
                            "(SELECT path FROM files)").fetchone()[0]
        assert orphans == 0, "chunks of files that are not in the index"
        assert {r[0] for r in c.execute("SELECT rowid FROM chunks_fts")} == chunk_ids
        ids = [r[0] for r in c.execute("SELECT vector_id FROM vectors ORDER BY vector_id")]
        assert ids == list(range(snap.vector_rows)), "every committed row, and only those"
        with_vector = c.execute("SELECT count(*) FROM chunks ch JOIN vectors v "
                                "ON v.content_hash = ch.content_hash").fetchone()[0]
        assert (snap.files, snap.chunks, snap.vectors) == (len(files), len(chunk_ids),
                                                           with_vector)
        assert snap.status == ("complete" if with_vector + snap.words_only == len(chunk_ids)
                               else "partial")
        dims = int(snap.descriptor["dims"])
        assert snap.bits.shape == (snap.vector_rows, (dims + 7) // 8)
        assert snap.int8.shape == (snap.vector_rows, dims)
        assert snap.scales.shape == (snap.vector_rows,)
        epoch = int(c.execute("SELECT coalesce(max(value), 0) FROM meta "
                              "WHERE key = 'vector_epoch'").fetchone()[0])
        for name, width in zip(names(epoch), ((dims + 7) // 8, dims, 4), strict=True):
            path = index.dir / name
            assert snap.vector_rows == 0 or path.stat().st_size >= snap.vector_rows * width
        return {"generation": snap.generation, "status": snap.status, "files": snap.files,
                "chunks": snap.chunks, "vectors": snap.vectors, "rows": snap.vector_rows}


@pytest.fixture(scope="session")
def model():
    """One real local model for the whole session."""
    return make_embedder(config.load())


@pytest.fixture
def settings():
    return config.load({"embedder.batch_size": "4", "embedder.concurrency": "1"})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def use_home(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """Point kenning at ``home``'s data folder and config file."""
    monkeypatch.setenv("KENNING_HOME", str(home / "data"))
    monkeypatch.setenv("KENNING_CONFIG", str(home / "config.toml"))


def indexed_in(root: Path, home: Path) -> tuple[Path, Path]:
    """``root`` indexed under ``home`` (``use_home``), for a fixture that several tests share."""
    from kenning.indexing.indexer import refresh

    with pytest.MonkeyPatch.context() as mp:
        use_home(mp, home)
        refresh(root, config.load())
    return root, home
