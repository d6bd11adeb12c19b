"""Chunk ids: one strict format, and an id never names a chunk of another index instance."""

from __future__ import annotations

import pytest
from index_helpers import make_repo
from kenning.errors import StaleChunkId, UsageError
from kenning.indexing.indexer import refresh
from kenning.retrieval import ProjectRef
from kenning.services.chunks import get_chunk
from kenning.services.search import search
from kenning.store import Index
from kenning.store.ids import ChunkId

pytest_plugins = ["index_helpers"]  # fixtures: model, settings, repo


@pytest.mark.parametrize(("text", "parts"), [
    ("p-1:0a1b2c3d:3:17", ("p-1", "0a1b2c3d", 3, 17)),
    ("a:b:0a1b2c3d:1:12", ("a:b", "0a1b2c3d", 1, 12)),  # project ids may hold colons
    (" p:0a1b2c3d:3:17\n", ("p", "0a1b2c3d", 3, 17)),
])
def test_chunk_ids_parse_and_format(text: str, parts: tuple) -> None:
    parsed = ChunkId.parse(text)
    assert (parsed.project, parsed.index, parsed.generation, parsed.ordinal) == parts
    assert ChunkId.parse(str(parsed)) == parsed and str(parsed) == text.strip()


@pytest.mark.parametrize("bad", [
    "", "p-1", "p-1:3:17", "p:0a1b2c3d:3", ":0a1b2c3d:3:4", "p:0a1b2c3d:3:-1",
    "p:0a1b2c3d: 3:1", "p:0a1b2c3d:3: 1", "p:0a1b2c3d:+3:1", "p:0a1b2c3d:3:01",
    "p:0a1b2c3d:0:1", "p:0a1b2c3d:3:0", "p:0A1B2C3D:3:1", "p:0a1b2c3:3:1",
    "p:0a1b2c3d:3:\u0661", "p:0a1b2c3d:3:1_0", "p:0a1b2c3d:3:99999999999999999999",
])
def test_bad_chunk_ids_are_usage_errors(bad: str) -> None:
    with pytest.raises(UsageError, match="not a chunk id") as err:
        ChunkId.parse(bad)
    assert "<project>:<index>:<generation>:<ordinal>" in (err.value.hint or "")


def _top_id(root, settings, model, query: str = "open the database") -> str:
    hits = search(query, [ProjectRef("x", root)], settings=settings, embedder=model,
                  refresh=False)["results"]
    return hits[0]["id"]


def test_an_id_from_a_removed_and_rebuilt_index_is_refused(tmp_path, settings, model):
    import shutil

    root = make_repo(tmp_path / "repo")
    refresh(root, settings, embedder=model)
    old = _top_id(root, settings, model)
    assert get_chunk(old, [ProjectRef("x", root)], settings=settings)["id"] == old
    shutil.rmtree(Index.open(root, settings, embedder=model).dir)  # what remove-index does
    (root / "app" / "aaa.py").write_text("def first():\n    return 1\n")  # ordinals shift
    refresh(root, settings, embedder=model)
    new = _top_id(root, settings, model)
    assert ChunkId.parse(new).index != ChunkId.parse(old).index
    with pytest.raises(StaleChunkId, match="from another index") as err:
        get_chunk(old, [ProjectRef("x", root)], settings=settings)
    assert err.value.hint == "Search again to get current ids."


def test_an_id_from_a_newer_generation_is_not_called_older(repo, settings, model):
    refresh(repo, settings, embedder=model)
    parsed = ChunkId.parse(_top_id(repo, settings, model))
    ahead = str(ChunkId(parsed.project, parsed.index, parsed.generation + 5, parsed.ordinal))
    with pytest.raises(StaleChunkId, match="newer than") as err:
        get_chunk(ahead, [ProjectRef("x", repo)], settings=settings)
    assert "older" not in err.value.message


def test_an_id_whose_chunk_changed_is_refused(repo, settings, model):
    refresh(repo, settings, embedder=model)
    old = _top_id(repo, settings, model)
    path = get_chunk(old, [ProjectRef("x", repo)], settings=settings)["path"]
    (repo / path).write_text((repo / path).read_text() + "\n\ndef more():\n    return 2\n")
    refresh(repo, settings, embedder=model)
    with pytest.raises(StaleChunkId, match="no longer in the index"):
        get_chunk(old, [ProjectRef("x", repo)], settings=settings)
