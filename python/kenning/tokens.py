"""Code-aware tokens for the lexical (FTS5 BM25) branch, shared by the index and the query side.

Identifiers are kept whole and also split on snake_case and camelCase, so ``parseHttpHeader``
matches a query for "parse header" and a query for ``parseHttpHeader`` alike.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# What separates the parts of a qualified name: `a.b`, `A::b`, `A#b`, `a->b`, `a/b`.
QUALIFIER = re.compile(r"\.|::|#|->|/")


def split_identifier(word: str) -> list[str]:
    """``HTTPServer_run2`` -> ``["http", "server", "run", "2"]``."""
    parts: list[str] = []
    for piece in word.split("_"):
        parts.extend(p.lower() for p in _CAMEL.findall(piece))
    return parts


def code_tokens(text: str) -> list[str]:
    """Lower-cased tokens of ``text``: each identifier whole, then its parts when it has several."""
    tokens: list[str] = []
    for word in _WORD.findall(text):
        whole = word.strip("_").lower()
        if not whole:
            continue
        tokens.append(whole)
        parts = split_identifier(word)
        if len(parts) > 1:
            tokens.extend(parts)
    return tokens


def path_tokens(path: str) -> list[str]:
    """Tokens of a relative path: each directory and file name, without the extension, split."""
    stem_parts = re.split(r"[/\\.\-]+", path)
    return code_tokens(" ".join(stem_parts))
