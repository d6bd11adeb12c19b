"""Which files a first index takes first: the one order in which files are chunked and their
chunks embedded, so that a search answering from a partial index finds the answers where they
usually are."""

from __future__ import annotations

from kenning.indexing.classes import PENALTY, categories


def file_priority(path: str, language: str | None, mtime_ns: int,
                  kind: str | None = None) -> tuple[float, int, str]:
    """Sort key of a file, smallest first: implementation code before tests, examples, docs,
    vendored and generated text (in the order ranking demotes them), and within each, recently
    changed files first; ``kind``: the one evidence gave it (``indexing.kinds``)."""
    weight = 1.0
    for category in categories(path, language, file_kind=kind):
        weight *= PENALTY.get(category, 1.0)
    return -weight, -mtime_ns, path
