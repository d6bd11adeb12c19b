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

from kenning.chunking.languages import LANGUAGES
from kenning.retrieval.query import Query
from kenning.retrieval.symbols import LAST_PART
from kenning.tokens import QUALIFIER


@lru_cache(maxsize=1024)
def _pattern(shape: str, name: str) -> re.Pattern[str]:
    return re.compile(shape.format(name=re.escape(name)), re.MULTILINE)


def _shape(path: str, language: str | None) -> str | None:
    """What a re-export looks like in a chunk of ``path`` (its language's ``reexport``)."""
    known = LANGUAGES.get(language or "")
    if known is None or (language == "python" and not path.endswith("__init__.py")):
        return None  # a module's imports are what it uses; a package's are what it offers
    return known.reexport


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
    shapes = {cid: shape for cid, path, language in chunks(list(order))
              if (shape := _shape(path, language)) is not None}
    if not shapes:
        return
    text_of = texts(sorted(shapes))
    found = sorted((cid for cid, shape in shapes.items()
                    if any(_pattern(shape, name).search(text_of.get(cid, "")) for name in names)),
                   key=order.__getitem__)
    rankings["symbol"] = [(cid, LAST_PART) for cid in found] + rankings["symbol"]
