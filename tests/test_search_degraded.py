"""Search when the embedder is down, and during a first index that has no vectors yet."""

from __future__ import annotations

from pathlib import Path

from embed_server import EmbedServer
from kenning import config
from kenning.embedding import make_embedder
from kenning.indexer import refresh
from kenning.search import resolve_projects, search

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
    assert any("still being built" in w for w in result["warnings"])
