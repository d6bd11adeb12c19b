"""A search's request is checked once, when it is made, the same for every front end."""

from __future__ import annotations

import dataclasses

import pytest
from kenning import usage_log
from kenning.errors import UsageError
from kenning.services.search import SearchRequest, request


@pytest.mark.parametrize(("arguments", "message"), [
    ({"query": " \n "}, "The query is empty."),
    ({"query": "x" * 8001}, "The query is longer than 8,000 characters."),
    ({"limit": 0}, "The limit must be at least 1, got 0."),
    ({"budget_tokens": 0}, "budget_tokens must be between 1 and"),
    ({"path_filter": "src\0"}, "The path filter contains a NUL character"),
    ({"path_filter": "  "}, "The path filter is empty."),
    ({"language": "klingon"}, "Unknown language 'klingon'."),
    ({"kind": "spell"}, "Unknown kind 'spell'."),
])
def test_a_bad_request_is_refused_when_it_is_made(arguments: dict[str, object],
                                                  message: str) -> None:
    with pytest.raises(UsageError) as refused:
        SearchRequest(**{"query": "retry", **arguments})  # type: ignore[arg-type]
    assert refused.value.message.startswith(message)


def test_a_request_is_frozen_and_holds_its_filters_canonical() -> None:
    asked = SearchRequest("retry", 500, "src/", "py", "functions")
    assert (asked.depth, asked.filters.language, asked.filters.kind) == (200, "python",
                                                                        "function")
    with pytest.raises(dataclasses.FrozenInstanceError):
        asked.limit = 3  # type: ignore[misc]


def test_a_refused_request_is_a_search_error_in_the_usage_log() -> None:
    with usage_log.opened(), pytest.raises(UsageError):
        request("retry", limit=0)
    assert [(e["event"], e["command"]) for e in usage_log.read()] == [("error", "search")]
