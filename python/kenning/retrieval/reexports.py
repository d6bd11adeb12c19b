"""Where a name declared outside the project enters it: a re-export.

A facade crate declares little of its API itself (axum's ``FromRequest`` is axum_core's), and a
package's ``__init__.py`` or a barrel ``index.ts`` re-exports what its modules declare. When no
chunk of the project declares a name the query asks for, the line that re-exports it is the
project's answer to "where is it": ``pub use axum_core::extract::{FromRequest, ...}``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

# what a re-export of `{name}` (escaped) looks like, by the language family of the chunk
_PATTERNS = {
    "rust": r"\bpub(?:\([^)]*\))?\s+use\s+[^;]*\b{name}\b[^;]*;",
    "script": r"\bexport\s+(?:type\s+)?(?:\{{[^}}]*\b{name}\b[^}}]*\}}|\*\s+as\s+{name}\b)"
              r"\s*from\b",
    "python": r"^\s*from\s+[\w.]+\s+import\s+(?:\([^)]*\b{name}\b[^)]*\)|[^\n]*\b{name}\b)",
}
_FAMILY = {"rust": "rust", "typescript": "script", "tsx": "script", "javascript": "script",
           "python": "python"}


@lru_cache(maxsize=1024)
def _pattern(family: str, name: str) -> re.Pattern[str]:
    return re.compile(_PATTERNS[family].format(name=re.escape(name)), re.MULTILINE)


def _family(path: str, language: str | None) -> str | None:
    family = _FAMILY.get(language or "")
    if family == "python" and not path.endswith("__init__.py"):
        return None  # a module's imports are what it uses; a package's are what it offers
    return family


def reexporting(names: Sequence[str], chunks: Iterable[tuple[int, str, str | None]],
                text_of: Callable[[int], str]) -> list[int]:
    """The ids of the ``chunks`` (id, path, language), in their order, whose text
    (``text_of(id)``) re-exports one of ``names``."""
    found = []
    for chunk, path, language in chunks:
        family = _family(path, language)
        if family is not None:
            text = text_of(chunk)
            if any(_pattern(family, name).search(text) for name in names):
                found.append(chunk)
    return found
