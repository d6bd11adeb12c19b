"""Syntax-aware chunks: one per declaration where the grammar is known, Markdown sections,
line windows for the rest; none over the embedder's token budget, no non-blank line left out.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import cache
from typing import Any

from kenning.chunking.calls import calls_in, declarations_in
from kenning.chunking.cutter import Cutter
from kenning.chunking.generated import says_generated
from kenning.chunking.languages import GRAMMARS, named
from kenning.chunking.syntax import SyntaxChunker, error_fraction
from kenning.chunking.text import markdown, windows
from kenning.records import Chunk

__all__ = ["CHUNKER_VERSION", "DOCS_LANGUAGES", "chunk_file"]

# Part of the index descriptor: bump whenever the chunks cut from the same bytes change.
CHUNKER_VERSION = 3

# The prose languages: search tells their chunks (kind "docs") from code.
DOCS_LANGUAGES = named("prose")

# A file whose parse is this much ERROR is cut in line windows instead.
MAX_ERROR_FRACTION = 0.2


@cache
def _parser(language: str) -> Any:
    from tree_sitter_language_pack import get_parser

    return get_parser(language)  # type: ignore[arg-type]


def _parse(grammar: str, data: bytes) -> Any:
    try:
        return _parser(grammar).parse(data).root_node
    except Exception:  # a grammar failing on odd bytes must not lose the file
        return None


def chunk_file(
    path: str,
    data: bytes,
    language: str | None,
    *,
    max_tokens: int,
    count_tokens: Callable[[str], int],
) -> list[Chunk]:
    """Chunks of one file, in file order; byte offsets index ``data``.

    ``max_tokens`` must leave room for one character: ranges are split down to characters.
    """
    cutter = Cutter(data, max_tokens, count_tokens)
    calls: list[tuple[int, str]] = []
    declared: list[tuple[int, int, str, str]] = []
    methods = True
    if language == "markdown":
        pieces = markdown(cutter)
    elif language in GRAMMARS and data.strip():
        grammar = language
        root = _parse(grammar, data)
        if language == "c" and (root is None or error_fraction(root) > 0):
            # `.h` is C++ as often as C: keep the C++ reading when it parses cleaner.
            other = _parse("cpp", data)
            if other is not None and (root is None or error_fraction(other) < error_fraction(root)):
                grammar, root = "cpp", other
        pieces = []
        chunker = SyntaxChunker(cutter, GRAMMARS[grammar])
        if root is not None and error_fraction(root) <= MAX_ERROR_FRACTION:
            # A pathologically deep tree (a 30,000-term expression) gets line windows too.
            with contextlib.suppress(RecursionError):
                pieces = chunker.run(root)
        if not pieces:
            pieces = windows(cutter)
        if root is not None:
            calls = calls_in(grammar, root, data)
            with contextlib.suppress(RecursionError):
                declared = declarations_in(grammar, root, chunker)
            methods = GRAMMARS[grammar].methods
    else:
        pieces = windows(cutter)
    return cutter.chunks(pieces, path, language, says_generated(data), calls, declared, methods)
