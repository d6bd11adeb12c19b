"""The relevance floor applies only to the model it was measured on (all-MiniLM-L6-v2): another
model's cosines sit elsewhere, so the same number would cut its true hits or nothing at all."""

from __future__ import annotations

from pathlib import Path

import pytest
from embed_server import EmbedServer
from kenning import config
from kenning.retrieval import resolve_projects
from kenning.retrieval.dense import MINILM_FLOOR, relevance_floor
from kenning.services.search import search

pytest_plugins = ["search_fixtures"]

IRRELEVANT = "chocolate cake recipe with fresh strawberries and cream"


@pytest.mark.parametrize(("model", "floor"), [
    ("all-MiniLM-L6-v2", MINILM_FLOOR), ("sentence-transformers/all-MiniLM-L6-v2", MINILM_FLOOR),
    ("all-minilm", MINILM_FLOOR), ("all-minilm:latest", MINILM_FLOOR),
    ("all-minilm:33m", None),  # L12: another model
    ("nomic-embed-text", None), ("text-embedding-3-small", None), ("intfloat/e5-base-v2", None),
    ("Qwen/Qwen3-Embedding-4B", None)])
def test_a_floor_only_where_it_was_measured(model: str, floor: float | None) -> None:
    assert relevance_floor(model) == floor


def test_an_unmeasured_model_ranks_without_cutting(embed_server: EmbedServer,
                                                   tmp_path: Path) -> None:
    """The server's vectors are all-MiniLM-L6-v2's under another name: the floor that empties the
    page for the embedded model must not apply to a model it was never measured on."""
    from search_fixtures import REPO, write_repo

    root = write_repo(tmp_path / "repo", REPO)
    local = config.load()
    assert len(search(IRRELEVANT, resolve_projects(local, [root]), settings=local)[
        "results"]) <= 2
    embed_server.models = ("house-embedder",)
    other = config.load(embed_server.settings("ollama", "house-embedder"))
    hits = search(IRRELEVANT, resolve_projects(other, [root]), settings=other)["results"]
    assert len(hits) == 10  # a full page, ranked
