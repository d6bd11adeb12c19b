"""The loopback test server itself answers like Ollama and OpenAI do, errors included."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import httpx
import numpy as np
import pytest
from embed_server import EmbedServer
from kenning.embedding import local


@pytest.fixture
def http(embed_server: EmbedServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=embed_server.url, timeout=10) as client:
        yield client


def test_ollama_metadata_endpoints(http: httpx.Client) -> None:
    assert http.get("/api/version").json()["version"]
    (tag,) = http.get("/api/tags").json()["models"]
    assert tag["name"] == "all-minilm:latest" and tag["details"]["family"] == "bert"


def test_ollama_embed_shapes_and_errors(http: httpx.Client) -> None:
    reply = http.post("/api/embed", json={"model": "all-minilm:latest", "input": "hi"}).json()
    assert reply["model"] == "all-minilm" and len(reply["embeddings"]) == 1
    assert len(reply["embeddings"][0]) == 384 and reply["prompt_eval_count"] == 3
    assert http.post("/api/embed", json={"model": "all-minilm", "input": []}).json()[
        "embeddings"] == []
    cases = [
        ({"input": "x"}, 400, "model is required"),
        ({"model": "nope", "input": "x"}, 404, 'model "nope" not found, try pulling it first'),
        ({"model": "all-minilm", "input": [1, 2]}, 400, "invalid input type"),
        ({"model": "all-minilm", "input": "x " * 300, "truncate": False}, 400,
         "the input length exceeds the context length"),
    ]
    for body, status, message in cases:
        response = http.post("/api/embed", json=body)
        assert (response.status_code, response.json()) == (status, {"error": message})
    assert http.post("/api/embed", content=b"{not json").status_code == 400
    assert http.get("/api/embed").status_code == 405


def test_openai_embeddings_shapes_and_errors(http: httpx.Client) -> None:
    reply = http.post("/v1/embeddings", json={"model": "all-minilm", "input": ["a", "b"]}).json()
    assert reply["object"] == "list" and reply["model"] == "all-minilm"
    assert [row["index"] for row in reply["data"]] == [0, 1]
    assert reply["data"][0]["object"] == "embedding" and reply["usage"]["prompt_tokens"] == 6
    packed = http.post("/v1/embeddings", json={"model": "all-minilm", "input": "a",
                                               "encoding_format": "base64"}).json()
    vector = np.frombuffer(base64.b64decode(packed["data"][0]["embedding"]), "<f4")
    np.testing.assert_allclose(vector, reply["data"][0]["embedding"], atol=1e-6)
    missing = http.post("/v1/embeddings", json={"model": "gpt-x", "input": "a"})
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "model_not_found"
    assert set(missing.json()["error"]) == {"message", "type", "param", "code"}
    empty = http.post("/v1/embeddings", json={"model": "all-minilm", "input": []})
    assert empty.status_code == 400 and empty.json()["error"]["param"] == "input"
    too_long = http.post("/v1/embeddings", json={"model": "all-minilm", "input": "x " * 300})
    assert too_long.status_code == 400
    assert "maximum context length is 256 tokens" in too_long.json()["error"]["message"]
    models = http.get("/v1/models").json()
    assert models["data"][0]["id"] == "all-minilm"


def test_api_key_check_and_fault_injection(embed_server: EmbedServer, http: httpx.Client) -> None:
    embed_server.api_key = "sk-1"
    body = {"model": "all-minilm", "input": "a"}
    assert http.post("/v1/embeddings", json=body).status_code == 401
    wrong = http.post("/v1/embeddings", json=body, headers={"Authorization": "Bearer sk-2"})
    assert wrong.json()["error"]["code"] == "invalid_api_key"
    auth = {"Authorization": "Bearer sk-1"}
    embed_server.fail_next(2, 503, retry_after=7)
    first = http.post("/v1/embeddings", json=body, headers=auth)
    assert first.status_code == 503 and first.headers["retry-after"] == "7"
    assert first.json()["error"]["type"] == "server_error"
    assert http.post("/api/embed", json=body).json() == {"error": "injected failure (503)"}
    assert http.post("/v1/embeddings", json=body, headers=auth).status_code == 200
    assert embed_server.count("/v1/embeddings") == 4


def test_vectors_come_from_the_local_model(http: httpx.Client) -> None:
    reply = http.post("/api/embed", json={"model": "all-minilm", "input": ["def f(): pass"]})
    np.testing.assert_allclose(reply.json()["embeddings"][0],
                               local.encode(local.token_ids(["def f(): pass"]))[0], atol=1e-6)


def test_stop_drops_connections_and_restart_keeps_the_url(embed_server: EmbedServer,
                                                          http: httpx.Client) -> None:
    url = embed_server.url
    assert http.get("/api/version").status_code == 200  # a kept-alive connection
    embed_server.stop()
    with pytest.raises(httpx.TransportError):
        http.get("/api/version")
    embed_server.restart()
    assert embed_server.url == url
    assert http.get("/api/version").status_code == 200
