"""``related`` over projects: the one whose root holds the location, refreshed first as a
search refreshes; the ranking is ``retrieval.related``'s."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kenning.config import Settings
from kenning.embedding import Embedder, borrowed, deadline
from kenning.errors import UsageError
from kenning.retrieval.filters import Filters
from kenning.retrieval.pipeline import MAX_LIMIT
from kenning.retrieval.projects import ProjectRef, resolve_projects
from kenning.retrieval.related import locate, related_in
from kenning.services.freshness import Freshness, for_settings


def related(location: str, projects: Sequence[ProjectRef] | None = None, *,
            settings: Settings, line: int | None = None, limit: int = 10,
            path_filter: str | None = None, language: str | None = None,
            kind: str | None = None, refresh: bool = True, embedder: Embedder | None = None,
            freshness: Freshness | None = None, cwd: Path | None = None,
            with_calls: bool = False) -> dict[str, Any]:
    """The code most like the declaration at ``location`` (``PATH:LINE``, or a path and
    ``line``): a ``related_result`` whose ``results`` have the shape of a search's, the
    declaration itself (``subject``) left out. Filters, ``limit`` and ``refresh`` are a
    search's; with ``with_calls`` each result carries its callers and callees."""
    from kenning.store import Index

    if limit < 1:
        raise UsageError(f"The limit must be at least 1, got {limit}.")
    refs = list(projects) if projects else resolve_projects(settings)
    where = locate(location, line, refs, cwd)
    keep = Filters(path_filter, language, kind).bind(where.ref.root)
    warnings: list[str] = []
    deferred: list[str] = []
    if limit > MAX_LIMIT:
        warnings.append(f"At most {MAX_LIMIT} results are returned per search; narrow the "
                        "filters to see others.")
        limit = MAX_LIMIT
    if refresh:
        found, deferred = refreshed(where.ref, settings, embedder, freshness)
        warnings += found
    own, results, revision = related_in(Index.open(where.ref.root, settings), where, keep,
                                        settings, limit, with_calls=with_calls)
    for record in results:
        del record["_read_bytes"]
    return {"type": "related_result", "location": where.given, "subject": own,
            "results": results, "warnings": list(dict.fromkeys(warnings)),
            "revision": revision, "vectors_deferred": deferred}


def refreshed(ref: ProjectRef, settings: Settings, embedder: Embedder | None = None,
              freshness: Freshness | None = None) -> tuple[list[str], list[str]]:
    """Refresh ``ref``'s index as a search would (unless ``search.refresh`` is off): the
    warnings, and the roots whose vectors were left to a later index."""
    if not settings["search.refresh"]:
        return [], []
    with borrowed(settings, embedder) as emb, deadline.within(settings["search.timeout"]):
        done = (freshness or for_settings(settings)).refresh(ref.root, settings, emb)
    return list(done.warnings), [str(ref.root)] if done.deferred else []
