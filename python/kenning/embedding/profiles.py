"""What each embedding model family expects: prefixes, context length, native dims.

A profile is looked up by model name (``nomic-embed-text:latest``, ``Qwen/Qwen3-Embedding-4B``,
``intfloat/e5-base-v2`` ...); an unknown model gets no prefixes and a cautious context.
Config can override the prefixes (``embedder.query_prefix`` / ``embedder.document_prefix``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from kenning.errors import ConfigError

# The task of every query kenning embeds, for families that take an instruction.
CODE_SEARCH_TASK = "Given a code search query, retrieve relevant code snippets or documentation"

# Embedding text adds "Filepath: <path>\n---\n" before a chunk; this many tokens stay free for it
# so that a chunk sized to ``max_tokens`` is never truncated by the model.
HEADER_RESERVE_TOKENS = 32

# Remote servers often run a smaller window than the model's trained context (Ollama's
# default num_ctx is 2048-4096 and it truncates silently beyond), so chunk budgets stop here.
REMOTE_BUDGET_CAP = 2048


@dataclass(frozen=True, slots=True)
class Profile:
    family: str
    query_prefix: str = ""
    document_prefix: str = ""
    context_tokens: int = 512
    dims: int | None = None  # native output dims; None = learned from the first response
    matryoshka: bool = False  # truncating to fewer dims keeps quality
    needs_centering: bool = False  # sign bits need mean-centering (anisotropic vectors)


_BGE_QUERY = "Represent this sentence for searching relevant passages: "

# (pattern over the normalised model name, profile); first match wins, so specific first.
_PROFILES: list[tuple[str, Profile]] = [
    (r"all-minilm-l6", Profile("minilm", context_tokens=256, dims=384)),
    (r"all-minilm-l12", Profile("minilm", context_tokens=256, dims=384)),
    (r"all-minilm", Profile("minilm", context_tokens=256, dims=384)),
    (r"qwen3-embedding.*0\.6b", Profile("qwen3-embedding", f"Instruct: {CODE_SEARCH_TASK}\nQuery: ",
                                        context_tokens=32768, dims=1024, matryoshka=True)),
    (r"qwen3-embedding.*8b", Profile("qwen3-embedding", f"Instruct: {CODE_SEARCH_TASK}\nQuery: ",
                                     context_tokens=32768, dims=4096, matryoshka=True)),
    (r"qwen3-embedding", Profile("qwen3-embedding", f"Instruct: {CODE_SEARCH_TASK}\nQuery: ",
                                 context_tokens=32768, dims=2560, matryoshka=True)),
    (r"nomic-embed-code", Profile("nomic-embed-code",
                                  "Represent this query for searching relevant code: ",
                                  context_tokens=2048, dims=3584)),
    (r"nomic-embed-text.*v2", Profile("nomic-embed-text", "search_query: ", "search_document: ",
                                      context_tokens=512, dims=768, matryoshka=True)),
    (r"nomic-embed-text", Profile("nomic-embed-text", "search_query: ", "search_document: ",
                                  context_tokens=2048, dims=768, matryoshka=True)),
    (r"(^|[/-])e5.*small", Profile("e5", "query: ", "passage: ", dims=384,
                                   needs_centering=True)),
    (r"(^|[/-])e5.*large", Profile("e5", "query: ", "passage: ", dims=1024,
                                   needs_centering=True)),
    (r"(^|[/-])e5", Profile("e5", "query: ", "passage: ", dims=768, needs_centering=True)),
    (r"bge-m3", Profile("bge-m3", context_tokens=8192, dims=1024)),
    (r"bge.*small", Profile("bge", _BGE_QUERY, dims=384)),
    (r"bge.*large", Profile("bge", _BGE_QUERY, dims=1024)),
    (r"bge", Profile("bge", _BGE_QUERY, dims=768)),
    (r"arctic-embed.*m-v2", Profile("arctic", "query: ", context_tokens=8192, dims=768,
                                    matryoshka=True)),
    (r"arctic-embed(2|.*v2)", Profile("arctic", "query: ", context_tokens=8192, dims=1024,
                                      matryoshka=True)),
    (r"arctic-embed.*m-v1\.5", Profile("arctic", _BGE_QUERY, dims=768, matryoshka=True)),
    (r"arctic-embed.*(xs|-s\b|22m|33m)", Profile("arctic", _BGE_QUERY, dims=384)),
    (r"arctic-embed.*(-m\b|-m-|110m|137m)", Profile("arctic", _BGE_QUERY, dims=768)),
    (r"arctic-embed", Profile("arctic", _BGE_QUERY, dims=1024)),
    (r"mxbai-embed-large", Profile("mxbai", _BGE_QUERY, dims=1024, matryoshka=True)),
    (r"embeddinggemma", Profile("embeddinggemma", "task: search result | query: ",
                                "title: none | text: ", context_tokens=2048, dims=768,
                                matryoshka=True)),
    (r"jina-embeddings-v2.*code", Profile("jina", context_tokens=8192, dims=768)),
    (r"text-embedding-3-small", Profile("openai", context_tokens=8191, dims=1536,
                                        matryoshka=True)),
    (r"text-embedding-3-large", Profile("openai", context_tokens=8191, dims=3072,
                                        matryoshka=True)),
    (r"text-embedding-ada-002", Profile("openai", context_tokens=8191, dims=1536)),
]


def normalise_name(model: str) -> str:
    """``Qwen/Qwen3-Embedding-4B:latest`` -> ``qwen/qwen3-embedding-4b``."""
    return re.sub(r":latest$", "", model.strip().lower())


def profile_for(model: str, *, query_prefix: str | None = None,
                document_prefix: str | None = None) -> Profile:
    """The profile of ``model`` with config overrides of its prefixes applied."""
    name = normalise_name(model)
    profile = next((p for pattern, p in _PROFILES if re.search(pattern, name)), Profile("unknown"))
    if query_prefix is not None:
        profile = replace(profile, query_prefix=query_prefix)
    if document_prefix is not None:
        profile = replace(profile, document_prefix=document_prefix)
    return profile


def output_dims(profile: Profile, model: str, requested: int | None) -> int | None:
    """The dims vectors will have: the configured truncation, else the native dims (or None)."""
    if requested is None:
        return profile.dims
    if requested <= 0:
        raise ConfigError(f"embedder.dims must be positive, got {requested}.")
    if profile.dims is not None and requested > profile.dims:
        raise ConfigError(
            f"{model} has {profile.dims} dims; embedder.dims={requested} asks for more.",
            hint="Set embedder.dims to at most the model's dims, or unset it.",
        )
    if profile.dims is not None and requested < profile.dims and not profile.matryoshka:
        raise ConfigError(
            f"{model} is not a Matryoshka model: truncating it to {requested} dims would wreck "
            "its vectors.",
            hint="Unset embedder.dims, or pick a Matryoshka model (nomic-embed-text, "
            "qwen3-embedding, text-embedding-3-*).",
        )
    return requested


def truncate(vectors: np.ndarray, dims: int) -> np.ndarray:
    """Matryoshka truncation to ``dims`` columns, rows L2-renormalised, as float32."""
    if vectors.shape[1] < dims:
        raise ConfigError(
            f"The embedder returned {vectors.shape[1]} dims, fewer than embedder.dims={dims}.",
            hint="Set embedder.dims to at most the model's dims, or unset it.",
        )
    return l2_normalise(vectors[:, :dims])


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.maximum(norms, 1e-12), dtype=np.float32)
