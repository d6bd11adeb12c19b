"""Queries longer than the model's window, embedded in parts rather than cut.

A bug report with its stack trace runs past the 256 word pieces the embedded model reads (a
remote model's context is in ``profiles``); the model would see its first lines only. Such a
query is split at line ends (at word ends within a line too long) into parts that each fit
``Embedder.max_tokens``, counted by the embedder's own ``count_tokens`` (the model's tokenizer,
or the cautious estimate for a remote model); each part is embedded as a query, and the search
uses their mean, normalised: one vector, so the rescoring and the relevance floor work as for
any query. A query that fits is embedded whole, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from kenning.embedding import Embedder


def parts(embedder: Embedder, text: str) -> list[str]:
    """``text`` as pieces of whole lines (whole words where a line alone is too long) that
    each fit the model's window; ``[text]`` when it fits whole."""
    window = embedder.max_tokens
    at_most = getattr(embedder, "at_most_tokens", None)  # a bound that loads no tokenizer
    if (at_most is not None and at_most(text) <= window) or embedder.count_tokens(text) <= window:
        return [text]
    pieces: list[tuple[str, int]] = []  # each line, or each word of a line too long
    for line in text.splitlines():
        cost = embedder.count_tokens(line)
        if cost <= window:
            pieces.append((line, cost))
        else:
            pieces += [(word, embedder.count_tokens(word)) for word in line.split()]
    found: list[str] = []
    current: list[str] = []
    used = 0
    for piece, cost in pieces:
        if current and used + cost > window:
            found.append("\n".join(current))
            current, used = [], 0
        if cost:  # a word longer than the window alone is cut by the model, as before
            current.append(piece)
            used += cost
    if current:
        found.append("\n".join(current))
    return found


def embed(embedder: Embedder, text: str) -> np.ndarray:
    """The query vector of ``text``: its own embedding when it fits the model's window, else
    the normalised mean of its parts' embeddings."""
    split = parts(embedder, text)
    if len(split) == 1:
        return np.asarray(embedder.embed_query(split[0]), np.float32)
    vectors = np.stack([np.asarray(embedder.embed_query(part), np.float32) for part in split])
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    mean: np.ndarray = vectors.mean(axis=0)
    return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)
