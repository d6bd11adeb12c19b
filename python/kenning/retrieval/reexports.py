"""Where a name declared outside the project enters it: a re-export.

A facade crate declares little of its API itself (axum's ``FromRequest`` is axum_core's), and a
package's ``__init__.py`` or a barrel ``index.ts`` re-exports what its modules declare. When no
chunk of the project declares a name the query asks for, the line that re-exports it is the
project's answer to "where is it": ``pub use axum_core::extract::{FromRequest, ...}``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from kenning.retrieval.query import QUALIFIER, Query
from kenning.retrieval.symbols import LAST_PART

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


def lead_with_reexports(query: Query, rankings: dict[str, list[tuple[int, float]]],
                        chunks: Callable[[list[int]], list[tuple[int, str, str | None]]],
                        texts: Callable[[list[int]], dict[int, str]]) -> None:
    """When no chunk declares a name the query asks for, put the chunks that re-export it at
    the head of the symbol ranking, as declarations. They are looked for among the lexical
    ranking's chunks that declare nothing: ``chunks(ids)`` gives those of ``ids`` (id, path,
    language), ``texts(ids)`` their texts."""
    if (not query.identifiers or "lexical" not in rankings or "symbol" not in rankings
            or any(grade >= LAST_PART for _, grade in rankings["symbol"])):
        return
    names = [QUALIFIER.split(name)[-1] for name in query.identifiers]
    order = {cid: rank for rank, (cid, _) in enumerate(rankings["lexical"])}
    families = {cid: family for cid, path, language in chunks(list(order))
                if (family := _family(path, language)) is not None}
    if not families:
        return
    text_of = texts(sorted(families))
    found = sorted((cid for cid, family in families.items()
                    if any(_pattern(family, name).search(text_of.get(cid, "")) for name in names)),
                   key=order.__getitem__)
    rankings["symbol"] = [(cid, LAST_PART) for cid in found] + rankings["symbol"]
