"""Vectors a broken server returns are refused, with the model and the server named, and nothing
of them is stored: a zero or non-finite vector would make every later search miss, and stay in
the index (vectors are reused by content hash) after the server is fixed."""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from embed_server import EmbedServer
from index_helpers import make_repo
from kenning import config
from kenning.cli import main
from kenning.embedding import local, make_embedder
from kenning.errors import EmbedderError
from kenning.retrieval import resolve_projects
from kenning.services.search import search
from kenning.store import Index

Rewrite = Callable[[list[list[float]]], Any]

BROKEN: dict[str, tuple[Rewrite, str]] = {
    "zero": (lambda rows: [[0.0] * len(r) for r in rows], "all-zero vector"),
    "zero in one row": (lambda rows: [rows[0], [0.0] * len(rows[1]), *rows[2:]],
                        r"all-zero vector \(input 2 of"),
    "null": (lambda rows: [[None] * len(r) for r in rows], "NaN or infinite"),
    "NaN": (lambda rows: [[math.nan, *r[1:]] for r in rows], "NaN or infinite"),
    "Infinity": (lambda rows: [[math.inf, *r[1:]] for r in rows], "NaN or infinite"),
    "beyond float32": (lambda rows: [[1e39, *r[1:]] for r in rows], "NaN or infinite"),
    "ragged": (lambda rows: [*rows[:-1], rows[-1][:100]], "unequal length"),
    "too few": (lambda rows: rows[:-1], r"returned \d+ vectors for \d+ inputs"),
    "empty list": (lambda rows: [], r"returned 0 vectors for \d+ inputs"),
    "0-dim": (lambda rows: [[] for _ in rows], r"empty \(0-dim\) vectors"),
    "not numbers": (lambda rows: [["x"] * len(r) for r in rows], "not lists of numbers"),
    "booleans": (lambda rows: [[v > 0 for v in r] for r in rows],
                 r"not lists of numbers \(input 1 of"),
    "one boolean": (lambda rows: [*rows[:-1], [True, *rows[-1][1:]]],
                    r"not lists of numbers \(input 3 of"),
    "nested": (lambda rows: [[[v] for v in r] for r in rows], "not lists of numbers"),
    "nested pairs": (lambda rows: [[r[:2], r[2:4]] for r in rows], "not lists of numbers"),
}

TEXTS = ["def open_socket(port):\n    pass\n", "class RetryPolicy:\n    pass\n",
         "def parse_header(line):\n    return line.split(':')\n"]


@pytest.fixture(params=["ollama", "openai"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _embedder(server: EmbedServer, backend: str) -> Any:
    return make_embedder(config.load(server.settings(backend)))


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_vectors_are_refused_naming_model_and_server(embed_server: EmbedServer,
                                                            backend: str, case: str) -> None:
    rewrite, message = BROKEN[case]
    embed_server.rewrite = rewrite
    embedder = _embedder(embed_server, backend)
    try:
        with pytest.raises(EmbedderError, match=message) as caught:
            embedder.embed_documents(TEXTS)
    finally:
        embedder.close()
    assert "all-minilm" in caught.value.message and embed_server.url in caught.value.message
    assert "Nothing of this reply was stored" in (caught.value.hint or "")


def test_huge_values_keep_their_direction(embed_server: EmbedServer, backend: str) -> None:
    """1e30 squares to infinity in float32: normalised naively, the row became all zeros."""
    embed_server.rewrite = lambda rows: [[v * 1e30 for v in r] for r in rows]
    embedder = _embedder(embed_server, backend)
    try:
        vectors = embedder.embed_documents(TEXTS)
    finally:
        embedder.close()
    np.testing.assert_allclose(vectors, local.encode(local.token_ids(TEXTS)), atol=1e-5)


def test_a_row_zero_in_the_matryoshka_dims_kept_is_refused(embed_server: EmbedServer,
                                                            backend: str) -> None:
    """The server ignores ``dimensions``; the client keeps the first 128 values, all zero."""
    embed_server.models = ("text-embedding-3-small",)
    embed_server.honour_dimensions = False
    embed_server.rewrite = lambda rows: [[0.0] * 128 + [1.0] * 1408 for _ in rows]
    settings = {**embed_server.settings(backend, "text-embedding-3-small"), "embedder.dims": "128"}
    embedder = make_embedder(config.load(settings))
    try:
        with pytest.raises(EmbedderError, match="all zero in the dims kept"):
            embedder.embed_query("x")
    finally:
        embedder.close()


def test_the_nan_token_on_the_wire_is_refused(embed_server: EmbedServer) -> None:
    """Python servers write NaN as a bare token; the client parses it, and must refuse it."""
    embed_server.rewrite = lambda rows: [[math.nan] * len(r) for r in rows]
    embedder = _embedder(embed_server, "ollama")
    try:
        with pytest.raises(EmbedderError, match="NaN or infinite"):
            embedder.embed_query("x")
    finally:
        embedder.close()
    assert "NaN" in json.dumps([math.nan])  # what the server sent


def kenning(*args: str) -> int:
    """``kenning ARGS`` in this process, as the console script runs it; its exit code."""
    try:
        main(list(args))
    except SystemExit as done:
        return int(done.code or 0)
    return 0


def test_a_broken_server_stores_nothing_and_the_fixed_one_is_searchable(
        embed_server: EmbedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = make_repo(tmp_path / "repo")
    for key, value in embed_server.settings("ollama").items():
        monkeypatch.setenv(config.env_name(key), value)
    embed_server.rewrite = BROKEN["zero"][0]
    assert kenning("index", str(root), "--quiet") == 3
    assert "all-zero vector" in capsys.readouterr().err
    settings = config.load()
    with Index.open(root, settings).snapshot() as snap:
        assert snap.vector_rows == 0
    embed_server.rewrite = None  # the server is fixed: every chunk is embedded for real now
    assert kenning("index", str(root), "--quiet") == 0
    result = search("open the database in write ahead log mode", resolve_projects(settings, [root]),
                    settings=settings)
    assert result["results"] and result["results"][0]["path"] == "app/db.py"


def test_dims_changed_under_the_same_model_name_are_reported(
        embed_server: EmbedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model kenning has no profile for: its dims are learned from the server, and a later
    change must give the dims error, not a silent new index that starts from nothing."""
    embed_server.models = ("house-embedder",)
    overrides = embed_server.settings("ollama", "house-embedder")
    for key, value in overrides.items():
        monkeypatch.setenv(config.env_name(key), value)
    root = make_repo(tmp_path / "repo")
    assert kenning("index", str(root), "--quiet") == 0
    embed_server.rewrite = lambda rows: [r + r for r in rows]  # 768 dims from now on
    embedder = _embedder(embed_server, "ollama")
    try:  # a fresh process that embeds before it asks for the dims (search embeds the query)
        with pytest.raises(EmbedderError, match="returned 768-dim vectors; 384 were expected"):
            embedder.embed_query("where is the database opened")
    finally:
        embedder.close()
    settings = config.load()
    result = search("where is the database opened", resolve_projects(settings, [root]),
                    settings=settings)
    assert any("768-dim" in w for w in result["warnings"])
    assert len(list((Path(os.environ["KENNING_HOME"]) / "indices").iterdir())) == 1


def test_dims_changed_after_the_cache_went_are_checked_against_the_index(
        embed_server: EmbedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    embed_server.models = ("house-embedder",)
    overrides = embed_server.settings("ollama", "house-embedder")
    for key, value in overrides.items():
        monkeypatch.setenv(config.env_name(key), value)
    root = make_repo(tmp_path / "repo")
    assert kenning("index", str(root), "--quiet") == 0
    shutil.rmtree(Path(os.environ["KENNING_HOME"]) / "cache", ignore_errors=True)
    embed_server.rewrite = lambda rows: [r + r for r in rows]  # 768 dims from now on
    settings = config.load()
    result = search("where is the database opened", resolve_projects(settings, [root]),
                    settings=settings)
    assert any("768-dim" in w and "384" in w for w in result["warnings"]), result["warnings"]
    assert kenning("index", str(root), "--quiet") == 3
    assert len(list((Path(os.environ["KENNING_HOME"]) / "indices").iterdir())) == 1
