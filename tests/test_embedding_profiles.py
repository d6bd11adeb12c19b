"""Model profiles, Matryoshka truncation and the token estimate for remote models."""

from __future__ import annotations

import numpy as np
import pytest
from kenning import config
from kenning.embedding import document_text, local, make_embedder
from kenning.embedding.ollama import default_url
from kenning.embedding.profiles import output_dims, profile_for, truncate
from kenning.embedding.remote import cautious_token_count
from kenning.errors import ConfigError


@pytest.mark.parametrize(("model", "family", "dims", "query", "document", "centering"), [
    ("nomic-embed-text:latest", "nomic-embed-text", 768, "search_query: ", "search_document: ",
     False),
    ("Qwen/Qwen3-Embedding-4B", "qwen3-embedding", 2560, "Instruct: ", "", False),
    ("qwen3-embedding:8b", "qwen3-embedding", 4096, "Instruct: ", "", False),
    ("intfloat/e5-base-v2", "e5", 768, "query: ", "passage: ", True),
    ("intfloat/multilingual-e5-large", "e5", 1024, "query: ", "passage: ", True),
    ("BAAI/bge-small-en-v1.5", "bge", 384, "Represent this sentence", "", False),
    ("bge-m3", "bge-m3", 1024, "", "", False),
    ("snowflake-arctic-embed:33m", "arctic", 384, "Represent this sentence", "", False),
    ("snowflake-arctic-embed2", "arctic", 1024, "query: ", "", False),
    ("all-minilm", "minilm", 384, "", "", False),
    ("text-embedding-3-small", "openai", 1536, "", "", False),
    ("some-house-model", "unknown", None, "", "", False),
])
def test_profiles(model: str, family: str, dims: int | None, query: str, document: str,
                  centering: bool) -> None:
    profile = profile_for(model)
    assert profile.family == family and profile.dims == dims
    assert profile.query_prefix.startswith(query) and (query or not profile.query_prefix)
    assert profile.document_prefix == document
    assert profile.needs_centering is centering


def test_qwen3_instruction_is_on_queries_only() -> None:
    profile = profile_for("qwen3-embedding")
    assert profile.query_prefix.startswith("Instruct: ")
    assert profile.query_prefix.endswith("\nQuery: ")
    assert profile.document_prefix == ""


def test_prefix_overrides() -> None:
    profile = profile_for("nomic-embed-text", query_prefix="", document_prefix="doc: ")
    assert (profile.query_prefix, profile.document_prefix) == ("", "doc: ")


def test_output_dims_validation() -> None:
    nomic = profile_for("nomic-embed-text")
    assert output_dims(nomic, "nomic-embed-text", None) == 768
    assert output_dims(nomic, "nomic-embed-text", 256) == 256
    with pytest.raises(ConfigError, match="asks for more"):
        output_dims(nomic, "nomic-embed-text", 1024)
    with pytest.raises(ConfigError, match="not a Matryoshka model"):
        output_dims(profile_for("bge-small-en-v1.5"), "bge-small-en-v1.5", 128)
    assert output_dims(profile_for("mystery"), "mystery", 100) == 100


def test_truncate_renormalises() -> None:
    rows = np.random.default_rng(0).normal(size=(5, 64)).astype(np.float32)
    cut = truncate(rows, 16)
    assert cut.shape == (5, 16) and cut.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(cut, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(cut * np.linalg.norm(rows[:, :16], axis=1, keepdims=True),
                               rows[:, :16], atol=1e-5)
    with pytest.raises(ConfigError, match="fewer than embedder.dims"):
        truncate(rows, 65)


def test_document_text() -> None:
    assert document_text("src/a.py", "def f(): pass") == "Filepath: src/a.py\n---\ndef f(): pass"


def test_token_estimate_over_counts_word_pieces(local_model: None) -> None:
    samples = [
        "def parse(path: str) -> dict:\n    return json.loads(Path(path).read_text())\n",
        "    0x0064: 0x0071,\n    0x0065: 0x0072,\n" * 5,
        '{"name": "kenning", "version": "0.1.0", "deps": ["numpy", "httpx"]}',
        "The quick brown fox jumps over the lazy dog. " * 10,
        "日本語のテキストとコード",
        "",
    ]
    for text in samples:
        actual = len(local.tokenizer().encode(text, add_special_tokens=False).ids)
        assert cautious_token_count(text) >= actual, text


def test_ollama_default_url_follows_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    assert default_url() == "http://127.0.0.1:11434"
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0")
    assert default_url() == "http://127.0.0.1:11434"
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:9000")
    assert default_url() == "http://gpu-box:9000"
    monkeypatch.setenv("OLLAMA_HOST", "https://ollama.example.com")
    assert default_url() == "https://ollama.example.com"


def test_make_embedder_is_cheap_and_validates_the_backend() -> None:
    with pytest.raises(ConfigError, match="expected local, ollama or openai"):
        make_embedder(config.load({"embedder.backend": "tensorflow"}))
    remote = make_embedder(config.load({"embedder.backend": "ollama",
                                        "embedder.url": "http://127.0.0.1:9"}))
    # No server is contacted until it is needed: the profile knows the dims.
    assert remote.descriptor() == {"backend": "ollama", "model": "nomic-embed-text",
                                   "dims": 768, "document_prefix": "search_document: "}
    assert remote.max_tokens == 2048 - cautious_token_count("search_document: ") - 32
    remote.close()
    with pytest.raises(ConfigError, match="from 1 to 4096"):
        make_embedder(config.load({"embedder.backend": "ollama", "embedder.batch_size": "0"}))
