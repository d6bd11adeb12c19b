"""The public API as docs/api.md uses it, for ``mypy --strict`` (CI runs it; nothing imports it).

A program typed this strictly must see every name of ``kenning.__all__`` with its types: a
signature, record field or error attribute that loses its annotation fails here.
"""

from __future__ import annotations

import json

import kenning
from kenning import (
    Chunk,
    Hit,
    IndexDamaged,
    IndexRun,
    KenningError,
    SearchResult,
    Settings,
    StaleChunkId,
    StaleContent,
    Status,
)


def report(path: str) -> list[str]:
    settings: Settings = kenning.load_settings({"search.limit": 5})
    limit: object = settings["search.limit"]
    origin: str = settings.origin("search.limit")
    run: IndexRun = kenning.index(path, settings=settings)
    counts: tuple[int, int, int] = (run.files, run.chunks, run.vectors_embedded)
    found: SearchResult = kenning.search("how are failed requests retried", path, limit=5,
                                         language="python", kind="code", settings=settings)
    lines = [f"{limit} from {origin}, {counts}"]
    for hit in found.results:
        checked: Hit = hit
        lines.append(f"{checked.path}:{checked.start_line}-{checked.end_line}  "
                     f"{checked.symbol}  {checked.score:.3f}  stale={checked.stale}")
    lines.extend(f"warning: {warning}" for warning in found.warnings)
    lines.append(json.dumps(found.to_dict())[:60])
    again: SearchResult = SearchResult.from_dict(found.to_dict())
    lines.append(str(again.revision))
    packed: SearchResult = kenning.search("retries", path, budget_tokens=500)
    budget: dict[str, int] | None = packed.budget
    ranges: list[list[int]] | None = packed.results[0].lines if packed.results else None
    lines.append(f"{budget} {ranges}")
    if found.results:
        first: Hit = found.results[0]
        state_of: tuple[str | None, bool, str | None] = (first.revision,
                                                          first.changed_since_index,
                                                          first.content_hash)
        lines.append(str(state_of))
        try:
            kenning.get_chunk(first.id, path, expect_hash=first.content_hash)
        except StaleContent as error:
            lines.append(f"{error} ({error.hint})")
    try:
        best: Chunk = kenning.get_chunk(found.results[0].id, path, scope="chunk",
                                        context_lines=2)
        lines.append(f"{best.language} {best.scope} {best.note}\n{best.content}")
    except StaleChunkId as error:
        lines.append(f"{error} ({error.hint})")
    state: Status = kenning.status(path)
    lines.append(f"{state.chunks} chunks, {state.chunks_embedded} with vectors, "
                 f"healthy: {state.healthy}, problems: {len(state.problems)}")
    return lines


def main() -> int:
    try:
        print("\n".join(report(".")))
    except IndexDamaged:
        kenning.index(".", full=True)
        return 1
    except KenningError as error:
        code: str = error.code
        print(json.dumps(error.to_dict()), code)
        return 1
    return 0
