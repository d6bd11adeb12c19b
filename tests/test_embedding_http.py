"""The Ollama and OpenAI backends against a real loopback server that speaks their wire formats."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np
import pytest
from embed_server import EmbedServer
from kenning import config
from kenning.embedding import Embedder, local, make_embedder
from kenning.embedding.http import RetryPolicy
from kenning.embedding.ollama import OllamaEmbedder
from kenning.embedding.openai import OpenAIEmbedder
from kenning.embedding.profiles import profile_for
from kenning.errors import ConfigError, EmbedderError, EmbedderUnavailable, ModelNotFound

E = TypeVar("E", bound=Embedder)
FAST = RetryPolicy(attempts=4, connect_attempts=2, backoff=0.01)
TEXTS = [f"def handler_{i}(request):\n    return respond({i})\n" for i in range(10)]


_opened: list[Embedder] = []


@pytest.fixture(autouse=True)
def close_embedders() -> Iterator[None]:
    yield
    while _opened:
        _opened.pop().close()


def track(embedder: E) -> E:
    _opened.append(embedder)
    return embedder


def configured(overrides: dict[str, Any]) -> Embedder:
    return track(make_embedder(config.load(overrides)))


def reference(texts: list[str]) -> np.ndarray:
    return local.encode(local.token_ids(texts))


def ollama(server: EmbedServer, model: str = "all-minilm", **kw: Any) -> OllamaEmbedder:
    args: dict[str, Any] = {"dims": None, "batch_size": 32, "concurrency": 2, "timeout": 10.0,
                            "keep_alive": "30m", "retry": FAST, **kw}
    return track(OllamaEmbedder(model=model, url=server.url, profile=profile_for(model), **args))


def openai(server: EmbedServer, model: str = "all-minilm", **kw: Any) -> OpenAIEmbedder:
    args: dict[str, Any] = {"dims": None, "batch_size": 32, "concurrency": 2, "timeout": 10.0,
                            "api_key_env": "KENNING_TEST_KEY", "retry": FAST, **kw}
    return track(OpenAIEmbedder(model=model, url=server.url, profile=profile_for(model), **args))


BACKENDS: dict[str, tuple[Callable[..., OllamaEmbedder | OpenAIEmbedder], str]] = {
    "ollama": (ollama, "/api/embed"), "openai": (openai, "/v1/embeddings")}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def make(backend: str, server: EmbedServer, **kw: Any) -> OllamaEmbedder | OpenAIEmbedder:
    return BACKENDS[backend][0](server, **kw)


def path_of(backend: str) -> str:
    return BACKENDS[backend][1]


# -- both backends -----------------------------------------------------------------------------


def test_configured_from_settings(embed_server: EmbedServer, backend: str) -> None:
    embedder = configured(embed_server.settings(backend))
    assert embedder.descriptor() == {"backend": backend, "model": "all-minilm", "dims": 384,
                                     "document_prefix": ""}
    embedder.check()
    np.testing.assert_allclose(embedder.embed_documents(TEXTS[:3]), reference(TEXTS[:3]),
                               atol=1e-5)


def test_vectors_match_the_model_and_keep_input_order(embed_server: EmbedServer,
                                                      backend: str) -> None:
    embed_server.shuffle = True  # OpenAI rows come back in reverse index order
    embedder = make(backend, embed_server, batch_size=4)
    vectors = embedder.embed_documents(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (10, 384)
    np.testing.assert_allclose(vectors, reference(TEXTS), atol=1e-5)
    np.testing.assert_allclose(embedder.embed_query(TEXTS[3]), vectors[3], atol=1e-5)


def test_one_request_per_batch(embed_server: EmbedServer, backend: str) -> None:
    make(backend, embed_server, batch_size=4).embed_documents(TEXTS)
    bodies = embed_server.bodies(path_of(backend))
    assert sorted(len(b["input"]) for b in bodies) == [2, 4, 4]
    assert sorted(t for b in bodies for t in b["input"]) == sorted(TEXTS)


@pytest.mark.parametrize("concurrency", [1, 3])
def test_requests_in_flight_are_bounded(embed_server: EmbedServer, backend: str,
                                        concurrency: int) -> None:
    embed_server.delay = 0.15
    make(backend, embed_server, batch_size=1, concurrency=concurrency).embed_documents(TEXTS[:6])
    assert embed_server.count(path_of(backend)) == 6
    assert embed_server.max_in_flight == concurrency


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_are_retried(embed_server: EmbedServer, backend: str, status: int) -> None:
    embed_server.fail_next(2, status)
    vectors = make(backend, embed_server).embed_documents(TEXTS[:2])
    np.testing.assert_allclose(vectors, reference(TEXTS[:2]), atol=1e-5)
    assert embed_server.count(path_of(backend)) == 3


def test_persistent_server_errors_give_up(embed_server: EmbedServer, backend: str) -> None:
    embed_server.fail_next(10, 500)
    with pytest.raises(EmbedderUnavailable, match="500"):
        make(backend, embed_server).embed_query("x")
    assert embed_server.count(path_of(backend)) == FAST.attempts


def test_a_slow_server_times_out(embed_server: EmbedServer, backend: str) -> None:
    embed_server.delay = 1.0
    with pytest.raises(EmbedderUnavailable, match="did not answer within") as caught:
        make(backend, embed_server, timeout=0.2).embed_query("x")
    assert "embedder.timeout" in (caught.value.hint or "")
    assert embed_server.count(path_of(backend)) == 1  # the wait is not multiplied


def test_server_down_and_back(embed_server: EmbedServer, backend: str) -> None:
    embedder = make(backend, embed_server)
    embedder.embed_query("warm a pooled connection")
    embed_server.stop()
    with pytest.raises(EmbedderUnavailable, match="Cannot reach"):
        embedder.embed_query("x")
    with pytest.raises(EmbedderUnavailable):
        embedder.check()
    embed_server.restart()
    np.testing.assert_allclose(embedder.embed_query("x"), reference(["x"])[0], atol=1e-5)


def test_matryoshka_truncation_is_renormalised(embed_server: EmbedServer, backend: str) -> None:
    full = reference(TEXTS[:3])
    expected = full[:, :128] / np.linalg.norm(full[:, :128], axis=1, keepdims=True)
    embed_server.models = ("text-embedding-3-small",)  # a Matryoshka model
    embedder = make(backend, embed_server, model="text-embedding-3-small", dims=128)
    assert embedder.dims == 128 and embedder.descriptor()["dims"] == 128
    vectors = embedder.embed_documents(TEXTS[:3])
    assert embed_server.bodies(path_of(backend))[0]["dimensions"] == 128
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_dims_mismatch_is_reported(embed_server: EmbedServer, backend: str) -> None:
    embed_server.models = ("text-embedding-3-small",)  # the profile says 1536; it serves 384
    with pytest.raises(EmbedderError, match="returned 384-dim vectors; 1536 were expected"):
        make(backend, embed_server, model="text-embedding-3-small").embed_query("x")


def test_unknown_model_dims_are_learned_and_remembered(embed_server: EmbedServer,
                                                       backend: str) -> None:
    embed_server.models = ("house-embedder",)
    assert make(backend, embed_server, model="house-embedder").dims == 384
    assert embed_server.count(path_of(backend)) == 1  # one probe
    embed_server.stop()  # a later process finds its index without the server
    assert make(backend, embed_server, model="house-embedder").dims == 384


def test_remote_token_estimate_is_conservative(local_model: None, embed_server: EmbedServer,
                                               backend: str) -> None:
    embedder = make(backend, embed_server)
    for text in TEXTS + [json.dumps({"a": [1, 2, 3]}), "naïve café ünïcode"]:
        assert embedder.count_tokens(text) >= len(local.token_ids([text])[0]) - 2
    assert embedder.max_tokens == 256 - 32


# -- Ollama specifics --------------------------------------------------------------------------


def test_ollama_request_body(embed_server: EmbedServer) -> None:
    ollama(embed_server, keep_alive="5m").embed_documents(["a", "b"])
    (body,) = embed_server.bodies("/api/embed")
    assert body == {"model": "all-minilm", "input": ["a", "b"], "truncate": True,
                    "keep_alive": "5m"}


def test_ollama_keep_alive_in_seconds_is_a_number(embed_server: EmbedServer) -> None:
    ollama(embed_server, keep_alive="-1").embed_query("a")
    assert embed_server.bodies("/api/embed")[0]["keep_alive"] == -1


def test_ollama_unreachable_says_how_to_start_it(embed_server: EmbedServer) -> None:
    embed_server.stop()
    embedder = configured(embed_server.settings("ollama"))
    with pytest.raises(EmbedderUnavailable, match="Cannot reach Ollama") as caught:
        embedder.check()
    assert "`ollama serve`" in (caught.value.hint or "")


def test_ollama_missing_model_says_how_to_pull_it(embed_server: EmbedServer) -> None:
    embedder = ollama(embed_server, model="nomic-embed-text")
    with pytest.raises(ModelNotFound, match="no model 'nomic-embed-text'") as caught:
        embedder.check()
    assert caught.value.hint == "Run `ollama pull nomic-embed-text`."
    assert embed_server.count("/api/embed") == 1  # a 404 is not retried


def test_ollama_truncates_on_the_client_when_the_server_ignores_dimensions(
        embed_server: EmbedServer) -> None:
    embed_server.models = ("nomic-embed-text",)
    embed_server.honour_dimensions = False
    vectors = ollama(embed_server, model="nomic-embed-text", dims=64).embed_documents(["x"])
    full = reference(["search_document: x"])[:, :64]
    np.testing.assert_allclose(vectors, full / np.linalg.norm(full), atol=1e-5)


@pytest.mark.parametrize(("model", "dims", "query", "document"), [
    ("nomic-embed-text", 256, "search_query: find x", "search_document: def x(): pass"),
    ("qwen3-embedding:0.6b", 256, "Instruct: Given a code search query, retrieve relevant code "
     "snippets or documentation\nQuery: find x", "def x(): pass"),
    ("intfloat/e5-small-v2", None, "query: find x", "passage: def x(): pass"),
    ("bge-small-en-v1.5", None, "Represent this sentence for searching relevant passages: "
     "find x", "def x(): pass"),
])
def test_model_family_prefixes_go_over_the_wire(embed_server: EmbedServer, model: str,
                                                dims: int | None, query: str,
                                                document: str) -> None:
    embed_server.models = (model,)
    embedder = ollama(embed_server, model=model, dims=dims)
    embedder.embed_query("find x")
    embedder.embed_documents(["def x(): pass"])
    assert [b["input"] for b in embed_server.bodies("/api/embed")] == [[query], [document]]


def test_configured_prefixes_override_the_profile(embed_server: EmbedServer) -> None:
    embed_server.models = ("nomic-embed-text",)
    embedder = configured({**embed_server.settings("ollama"),
                                          "embedder.dims": "256",
                                          "embedder.query_prefix": "",
                                          "embedder.document_prefix": "doc: "})
    embedder.embed_query("q")
    embedder.embed_documents(["d"])
    assert [b["input"] for b in embed_server.bodies("/api/embed")] == [["q"], ["doc: d"]]


# -- OpenAI specifics --------------------------------------------------------------------------


def test_openai_request_and_api_key(embed_server: EmbedServer,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    embed_server.api_key = "sk-test-123"
    monkeypatch.setenv("KENNING_TEST_KEY", "sk-test-123")
    openai(embed_server).embed_documents(["a", "b"])
    (record,) = [r for r in embed_server.requests if r.path == "/v1/embeddings"]
    assert record.headers["authorization"] == "Bearer sk-test-123"
    assert record.body == {"model": "all-minilm", "input": ["a", "b"],
                           "encoding_format": "float"}


def test_openai_without_a_key_explains_where_it_comes_from(embed_server: EmbedServer) -> None:
    embed_server.api_key = "sk-test-123"
    with pytest.raises(EmbedderError, match="needs a valid API key") as caught:
        openai(embed_server).check()
    assert "KENNING_TEST_KEY" in (caught.value.hint or "")
    assert embed_server.count("/v1/embeddings") == 1  # a 401 is not retried


def test_openai_wrong_key_is_refused(embed_server: EmbedServer,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    embed_server.api_key = "sk-test-123"
    monkeypatch.setenv("KENNING_TEST_KEY", "sk-wrong")
    with pytest.raises(EmbedderError, match="Incorrect API key") as caught:
        openai(embed_server).embed_query("x")
    assert "was refused" in (caught.value.hint or "")


def test_openai_missing_model(embed_server: EmbedServer) -> None:
    with pytest.raises(ModelNotFound, match="does not exist"):
        openai(embed_server, model="nomic-embed-text", dims=256).embed_query("x")


def test_openai_rate_limit_waits_for_retry_after(embed_server: EmbedServer) -> None:
    embed_server.fail_next(1, 429, retry_after=0.3)
    embedder = openai(embed_server)
    np.testing.assert_allclose(embedder.embed_query("x"), reference(["x"])[0], atol=1e-5)
    first, second = (r for r in embed_server.requests if r.path == "/v1/embeddings")
    assert second.at - first.at >= 0.3


def test_openai_rate_limit_that_persists(embed_server: EmbedServer) -> None:
    embed_server.fail_next(10, 429, retry_after=0)
    with pytest.raises(EmbedderError, match="rate-limiting") as caught:
        openai(embed_server).embed_query("x")
    assert "embedder.concurrency" in (caught.value.hint or "")


def test_openai_client_errors_are_not_retried(embed_server: EmbedServer) -> None:
    with pytest.raises(EmbedderError, match="rejected the request \\(400\\).*input"):
        openai(embed_server).embed_query("")  # OpenAI refuses empty strings
    assert embed_server.count("/v1/embeddings") == 1


def test_openai_server_without_dimensions_support(embed_server: EmbedServer) -> None:
    embed_server.models = ("text-embedding-3-small",)
    embed_server.honour_dimensions = False  # answers 400 to `dimensions`
    embedder = openai(embed_server, model="text-embedding-3-small", dims=64)
    vectors = embedder.embed_documents(["a", "b"])
    full = reference(["a", "b"])[:, :64]
    np.testing.assert_allclose(vectors, full / np.linalg.norm(full, axis=1, keepdims=True),
                               atol=1e-5)
    embedder.embed_query("c")  # remembered: no second refusal
    assert ["dimensions" in b for b in embed_server.bodies("/v1/embeddings")] == [
        True, False, False]


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_openai_base_url_with_or_without_v1(embed_server: EmbedServer, suffix: str) -> None:
    embedder = configured({**embed_server.settings("openai"),
                                          "embedder.url": embed_server.url + suffix})
    assert embedder.embed_query("x").shape == (384,)


def test_openai_wrong_url_path(embed_server: EmbedServer) -> None:
    embedder = track(OpenAIEmbedder(model="all-minilm", url=embed_server.url + "/nothing/here",
                                    profile=profile_for("all-minilm"), dims=None, batch_size=8,
                                    concurrency=1, timeout=5, api_key_env="X", retry=FAST))
    with pytest.raises(EmbedderUnavailable, match="no /embeddings endpoint"):
        embedder.check()


def test_openai_needs_a_url() -> None:
    with pytest.raises(ConfigError, match="needs embedder.url"):
        configured({"embedder.backend": "openai"})
