"""Search when the embedder is down, and during a first index that has no vectors yet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from embed_server import EmbedServer
from kenning import config
from kenning.cli import main
from kenning.embedding import make_embedder
from kenning.indexing.indexer import refresh
from kenning.retrieval import resolve_projects
from kenning.services.search import search

pytest_plugins = ["search_fixtures"]


def test_unreachable_embedder_gives_lexical_results_and_a_warning(
        embed_server: EmbedServer, tmp_path: Path) -> None:
    from search_fixtures import REPO, write_repo

    root = write_repo(tmp_path / "repo", {k: REPO[k] for k in ("src/http/headers.py",
                                                                 "src/storage/cache.py")})
    settings = config.load(embed_server.settings("ollama"))
    embedder = make_embedder(settings)
    try:
        refresh(root, settings, embedder=embedder)
    finally:
        embedder.close()
    embed_server.stop()  # the configured URL is now a closed loopback port
    (root / "src/storage/cache.py").write_text(REPO["src/storage/cache.py"] +
                                               "\n\ndef drain_queue(q):\n    q.clear()\n")
    result = search("parse_header", resolve_projects(settings, [root]), settings=settings)
    assert result["results"][0]["symbol"] == "parse_header"
    assert any("embedder" in w.lower() for w in result["warnings"])
    # the edit made while the embedder is down is still found by its words
    fresh = search("drain_queue", resolve_projects(settings, [root]), settings=settings)
    assert fresh["results"][0]["symbol"] == "drain_queue"


def test_search_during_a_first_index_says_how_complete_it_is(tmp_path: Path) -> None:
    from search_fixtures import REPO, write_repo

    root = write_repo(tmp_path / "repo", {"src/http/headers.py": REPO["src/http/headers.py"]})
    settings = config.load()
    refresh(root, settings, embed=False)  # chunks committed, vectors not yet
    result = search("parse_header", resolve_projects(settings, [root]), settings=settings,
                    refresh=False)
    assert result["results"][0]["symbol"] == "parse_header"
    # nothing is indexing it: the warning says so and how to finish, not "still being built"
    assert any("0 of" in w and "no indexer is running" in w and f"`kenning index {root}`" in w
               for w in result["warnings"])
    assert not any("being built" in w for w in result["warnings"])


def test_never_indexed_with_the_embedder_down_and_dims_unknown(
        embed_server: EmbedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """No index, no dims (a model kenning has no profile for, never reached): the search
    answers from words and symbols instead of failing, then goes semantic once the server is
    back, in an index of its own dims."""
    from search_fixtures import REPO, write_repo

    root = write_repo(tmp_path / "repo", {k: REPO[k] for k in ("src/http/headers.py",
                                                                 "src/storage/cache.py")})
    embed_server.models = ("house-embedder",)
    for key, value in embed_server.settings("ollama", "house-embedder").items():
        monkeypatch.setenv(config.env_name(key), value)
    embed_server.stop()
    capsys.readouterr()
    try:
        main(["search", "parse_header", str(root), "--json-output"])
    except SystemExit as exc:
        pytest.fail(f"exit {exc.code}: {capsys.readouterr().err}")
    result = json.loads(capsys.readouterr().out)
    assert result["results"][0]["symbol"] == "parse_header"
    (warning,) = result["warnings"]
    assert "Semantic search is off" in warning and "house-embedder" in warning
    embed_server.start()
    settings = config.load()
    back = search("keeps the most recently used entries", resolve_projects(settings, [root]),
                  settings=settings)
    assert back["results"][0]["path"] == "src/storage/cache.py" and not back["warnings"]
    assert embed_server.count("/api/embed") > 0


def test_never_indexed_with_a_hung_embedder_answers_by_the_deadline(
        embed_server: EmbedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from search_fixtures import REPO, write_repo

    root = write_repo(tmp_path / "repo", {"src/http/headers.py": REPO["src/http/headers.py"]})
    embed_server.models = ("house-embedder",)
    embed_server.drip = 0.005  # headers alone take a second, the vectors about 40 s
    settings = config.load({**embed_server.settings("ollama", "house-embedder"),
                            "search.timeout": "1"})
    result = search("parse_header", resolve_projects(settings, [root]), settings=settings)
    assert result["results"][0]["symbol"] == "parse_header"
    assert any("did not answer within" in w for w in result["warnings"]), result["warnings"]
