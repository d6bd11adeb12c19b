"""A query longer than the model's window is embedded in parts, each within the window, and
searched by their mean: the words past the window count."""

from __future__ import annotations

import numpy as np
from embed_server import EmbedServer
from kenning import config
from kenning.embedding import borrowed, long_queries, make_embedder
from search_fixtures import Indexed

pytest_plugins = ["search_fixtures"]  # fixtures: indexed (the repository, indexed once)

BOILERPLATE = "\n".join(
    f"Environment line {i}: python 3.11.{i}, linux 6.5.0-{i}-generic, pip 24.{i}, "
    f"setuptools 69.{i}.0, wheel 0.43.{i}, locale en_US.UTF-8, TZ Europe/Berlin"
    for i in range(14))
WANTED = ("The least recently used entries are not evicted when the cache is over its "
          "capacity, so memory grows without bound.")


def test_a_short_query_is_one_part(local_model: None) -> None:
    embedder = make_embedder(config.load())
    assert long_queries.parts(embedder, WANTED) == [WANTED]
    assert np.allclose(long_queries.embed(embedder, WANTED), embedder.embed_query(WANTED))


def test_a_long_query_is_split_at_line_ends_into_parts_that_fit(local_model: None) -> None:
    embedder = make_embedder(config.load())
    text = BOILERPLATE + "\n" + WANTED
    assert embedder.count_tokens(text) > 2 * embedder.max_tokens
    parts = long_queries.parts(embedder, text)
    assert len(parts) >= 3
    assert all(embedder.count_tokens(part) <= embedder.max_tokens for part in parts)
    assert "\n".join(parts) == text  # every line, in order, once
    one_line = " ".join(text.split())  # a line too long alone is split at word ends
    words = long_queries.parts(embedder, one_line)
    assert all(embedder.count_tokens(part) <= embedder.max_tokens for part in words)
    assert " ".join(" ".join(words).split()) == one_line


def test_the_words_past_the_window_find_their_code(indexed: Indexed) -> None:
    from kenning.retrieval import resolve_projects
    from kenning.services.search import search

    settings = config.load()
    refs = resolve_projects(settings, [indexed.root])
    found = search(BOILERPLATE + "\n" + WANTED, refs, settings=settings, branches=("dense",))
    assert found["results"][0]["symbol"] == "LruCache"
    # cut at the window, the model sees the environment lines only
    embedder = make_embedder(settings)
    cut = np.asarray(embedder.embed_query(BOILERPLATE + "\n" + WANTED), np.float32)
    whole = long_queries.embed(embedder, BOILERPLATE + "\n" + WANTED)
    wanted = np.asarray(embedder.embed_query(WANTED), np.float32)
    assert float(whole @ wanted) > float(cut @ wanted) + 0.1


def test_a_remote_model_gets_parts_within_its_own_window(embed_server: EmbedServer) -> None:
    """An Ollama server's model: the parts fit what kenning may send it (its cautious count),
    one request each, and their mean is the query's vector."""
    with borrowed(config.load(embed_server.settings("ollama"))) as embedder:
        text = BOILERPLATE + "\n" + WANTED
        parts = long_queries.parts(embedder, text)
        assert len(parts) >= 2
        assert all(embedder.count_tokens(part) <= embedder.max_tokens for part in parts)
        embed_server.reset()
        vector = long_queries.embed(embedder, text)
        sent = [body["input"] for body in embed_server.bodies("/api/embed")]
        prefix = embedder.profile.query_prefix  # type: ignore[attr-defined]
        assert [item for batch in sent
                for item in (batch if isinstance(batch, list) else [batch])] == [
            prefix + part for part in parts]
        each = np.stack([embedder.embed_query(part) for part in parts])
    mean = each.mean(axis=0)
    assert np.allclose(vector, mean / np.linalg.norm(mean), atol=1e-5)
