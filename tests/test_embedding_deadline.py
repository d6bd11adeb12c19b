"""A server that answers a byte at a time resets httpx's per-read timeouts forever: a request and
a search must still end by their deadline, and a search past it answers from words and symbols.
The loopback server's reply takes minutes at its drip rate; each test needs a second or two."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from embed_server import EmbedServer
from index_helpers import kenning_cli, make_repo
from kenning import config
from kenning.embedding import deadline, make_embedder
from kenning.errors import EmbedderUnavailable

DRIP = 0.005  # seconds per byte: a 384-dim reply (~8 KB) takes about 40 s, its headers ~1 s
TEXTS = [f"def handler_{i}(request):\n    return {i}\n" for i in range(8)]


@pytest.fixture(params=["ollama", "openai"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _embedder(server: EmbedServer, backend: str, **settings: Any) -> Any:
    return make_embedder(config.load({**server.settings(backend), **settings}))


def test_a_request_ends_at_embedder_timeout(embed_server: EmbedServer, backend: str) -> None:
    embed_server.drip = DRIP
    embedder = _embedder(embed_server, backend, **{"embedder.timeout": "0.5"})
    started = time.monotonic()
    try:
        with pytest.raises(EmbedderUnavailable, match="did not answer within 0.5 seconds"):
            embedder.embed_query("x")
    finally:
        embedder.close()
    assert time.monotonic() - started < 10  # long before the reply could have been complete
    assert embed_server.count() == 1  # a timeout is not retried


def test_the_callers_deadline_binds_every_thread(embed_server: EmbedServer, backend: str) -> None:
    embed_server.drip = DRIP
    embedder = _embedder(embed_server, backend, **{"embedder.batch_size": "2",
                                                   "embedder.concurrency": "2"})
    started = time.monotonic()
    try:
        with deadline.within(0.5), pytest.raises(EmbedderUnavailable,
                                                 match=r"did not answer within 0\.\d+ seconds"):
            embedder.embed_documents(TEXTS)  # four batches on two worker threads
    finally:
        embedder.close()
    assert time.monotonic() - started < 10


def test_a_fast_server_is_unaffected(embed_server: EmbedServer, backend: str) -> None:
    embedder = _embedder(embed_server, backend, **{"embedder.batch_size": "2"})
    try:
        with deadline.within(30):
            assert embedder.embed_documents(TEXTS).shape == (8, 384)
    finally:
        embedder.close()


def test_index_and_search_against_a_hung_embedder(
        embed_server: EmbedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = make_repo(tmp_path / "repo")
    for key, value in embed_server.settings("ollama").items():
        monkeypatch.setenv(config.env_name(key), value)
    assert kenning_cli(capsys, "index", str(root), "--quiet")[0] == 0
    embed_server.drip = DRIP
    (root / "app/late.py").write_text("def quokka_checksum(data):\n    return sum(data) % 255\n")
    monkeypatch.setenv("KENNING_EMBEDDER_TIMEOUT", "1")
    code, _, err = kenning_cli(capsys, "index", str(root), "--quiet")
    assert code == 3 and "did not answer within 1 seconds" in err
    monkeypatch.setenv("KENNING_EMBEDDER_TIMEOUT", "60")  # the search's deadline binds first
    monkeypatch.setenv("KENNING_SEARCH_TIMEOUT", "1")
    started = time.monotonic()
    code, out, err = kenning_cli(capsys, "search", "quokka_checksum", str(root), "--json-output")
    assert time.monotonic() - started < 20
    assert code == 0, err
    import json

    result = json.loads(out)
    assert result["results"][0]["path"] == "app/late.py"  # by its words, and fresh
    assert any("Semantic search is off" in w and "did not answer" in w
               for w in result["warnings"]), result["warnings"]
