"""A token budget: the line ranges that best cover the query within N tokens, heads of the
top declarations first, then their windows, no line twice, in rank order."""

from __future__ import annotations

import json
from typing import Any

import kenning
import pytest
from index_helpers import kenning_cli
from kenning.retrieval.budget import MAX_BUDGET_TOKENS, Lines, context_tokens, offer, pack
from search_fixtures import Indexed

pytest_plugins = ["search_fixtures"]  # fixtures: indexed (the repository, indexed once)

QUERY = "exponential backoff delay before retrying a failed request"


def _lines(hits: list[Any]) -> dict[str, list[int]]:
    seen: dict[str, list[int]] = {}
    for hit in hits:
        for first, last in hit.lines:
            seen.setdefault(hit.path, []).extend(range(first, last + 1))
    return seen


@pytest.mark.parametrize("tokens", [1, 20, 60, 150, 400, 5000])
def test_the_packed_ranges_never_exceed_the_budget(indexed: Indexed, tokens: int) -> None:
    plain = kenning.search(QUERY, indexed.root)
    found = kenning.search(QUERY, indexed.root, budget_tokens=tokens)
    assert found.budget is not None and found.budget["tokens"] == tokens
    used = sum(context_tokens(hit.content) for hit in found.results)
    assert used == found.budget["used"] <= tokens
    for path, numbers in _lines(list(found.results)).items():
        assert len(numbers) == len(set(numbers)), f"a line of {path} shown twice"
    # in rank order: a subsequence of the search without a budget
    order = [hit.id for hit in plain.results]
    ranks = [order.index(hit.id) for hit in found.results]
    assert ranks == sorted(ranks)
    for hit in found.results:
        assert hit.lines is not None
        assert all(hit.start_line <= a <= b <= hit.end_line for a, b in hit.lines)
    if tokens == 1:
        assert found.results == () and found.budget["used"] == 0


def test_heads_come_before_windows(indexed: Indexed) -> None:
    whole = kenning.search(QUERY, indexed.root, budget_tokens=5000)
    top = whole.results[0]
    assert (top.symbol, top.path) == ("RetryPolicy", "src/http/retry.py")
    # all of it fits: the declaration whole, no marker
    assert top.lines is not None
    assert [tuple(r) for r in top.lines] == [(top.start_line, top.end_line)]
    assert "def delay" in top.content
    heads = kenning.search(QUERY, indexed.root, budget_tokens=80)
    first = heads.results[0]
    # its signature and docstring; its body waits for the heads of the others
    assert first.id == top.id and len(heads.results) > 1
    assert first.content.splitlines() == [
        "class RetryPolicy:",
        '    """How often and how long to wait before a failed request is tried again."""',
        f"… 11 more lines ({top.start_line + 2}-{top.end_line}) …"]
    assert all(hit.lines is not None and len(hit.lines) == 1 for hit in heads.results)


def test_a_search_without_a_budget_has_none(indexed: Indexed) -> None:
    found = kenning.search(QUERY, indexed.root)
    assert found.budget is None and all(hit.lines is None for hit in found.results)
    assert found.to_dict()["budget"] is None


def _result(path: str, first: int, last: int) -> dict[str, Any]:
    return {"project": "p", "path": path, "start_line": first, "end_line": last}


def test_packing_merges_ranges_of_one_file_and_shows_no_line_twice() -> None:
    text = "\n".join(f"line {n} of the file" for n in range(1, 41))
    rows = text.splitlines()
    a = offer("\n".join(rows[0:20]), 1, 20, (5, 12), None)
    b = offer("\n".join(rows[9:30]), 10, 30, (10, 16), None)  # overlaps a's window
    packed, used = pack([_result("x.py", 1, 20), _result("x.py", 10, 30)], [a, b], 10_000)
    # heads first (b's is line 10, inside a's window), then the windows' lines not shown yet
    assert [r["lines"] for r in packed] == [[[1, 1], [5, 9], [11, 12]], [[10, 10], [13, 16]]]
    assert used == sum(context_tokens(r["content"]) for r in packed)
    assert packed[0]["content"].splitlines()[1] == "… 3 more lines (2-4) …"
    # one that cannot be read gets nothing, one that does not fit is passed over
    small = Lines(1, ("x",), (1, 1), (1, 1))
    big = Lines(1, tuple("y" * 90 for _ in range(5)), (1, 5), (1, 5))
    packed, used = pack([_result("a", 1, 5), _result("b", 1, 1), _result("c", 1, 1)],
                        [big, None, small], 5)
    assert [r["path"] for r in packed] == ["c"] and used == 1


@pytest.mark.parametrize("tokens", [0, -5, MAX_BUDGET_TOKENS + 1])
def test_a_budget_out_of_range_is_refused(indexed: Indexed, tokens: int) -> None:
    with pytest.raises(kenning.UsageError, match=f"budget_tokens must be between 1 and "
                                                  f"{MAX_BUDGET_TOKENS:,}"):
        kenning.search(QUERY, indexed.root, budget_tokens=tokens)


def test_a_budget_that_is_no_integer_is_refused(indexed: Indexed) -> None:
    with pytest.raises(kenning.UsageError, match="budget_tokens must be an integer or None"):
        kenning.search(QUERY, indexed.root, budget_tokens="500")  # type: ignore[arg-type]


def test_the_cli_reports_the_budget(indexed: Indexed, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = kenning_cli(capsys, "search", QUERY, str(indexed.root), "--budget-tokens",
                                 "120", "--json-output")
    assert code == 0, err
    result = json.loads(out)
    assert result["budget"]["tokens"] == 120 and 0 < result["budget"]["used"] <= 120
    assert all(isinstance(hit["lines"], list) for hit in result["results"])
    code, out, err = kenning_cli(capsys, "search", QUERY, str(indexed.root), "--budget-tokens",
                                 "120")
    assert code == 0 and "Token budget: " in err and "of 120 tokens used" in err
    code, out, err = kenning_cli(capsys, "search", QUERY, str(indexed.root), "--budget-tokens",
                                 "0")
    assert code == 2 and "budget_tokens must be between 1 and 100,000, got 0." in err
    assert out == ""


@pytest.mark.parametrize("tokens", [150, 400, 1500])
@pytest.mark.parametrize("output", [[], ["--json-output"]])
def test_everything_the_cli_prints_stays_within_the_budget(
        indexed: Indexed, capsys: pytest.CaptureFixture[str], tokens: int,
        output: list[str]) -> None:
    code, out, err = kenning_cli(capsys, "search", QUERY, str(indexed.root), "--budget-tokens",
                                 str(tokens), "--no-refresh", *output)
    assert code == 0, err
    # headers, paths, ids, line numbers and JSON keys count: all an agent reads
    assert context_tokens(out + err) <= tokens, (out, err)
    if output:
        result = json.loads(out)
        assert context_tokens(out) <= result["budget"]["used"] <= tokens
        shown = result["results"]
    else:
        shown = [line for line in out.splitlines() if line.startswith("src/")]
    assert shown or tokens < 400


def test_import_blocks_and_licence_banners_are_never_offered() -> None:
    text = ("# Copyright 2024 Example Corp.\n# SPDX-License-Identifier: MIT\n\n"
            "import os\nfrom pathlib import Path\n\n# helpers\nimport json\n\n"
            "ROOT = Path(os.getcwd())\n")
    item = offer(text, 1, 10, (1, 8), None)
    assert item.head is None and item.window is None  # the banner, then the imports
    wider = offer(text, 1, 10, (4, 10), None)
    assert wider.window == (10, 10)
    results = [{"id": "p:0:1:1", "project": "p", "path": "a.py", "start_line": 1,
                "end_line": 10}]
    assert pack(results, [item], 5000) == ([], 0)
    rust = offer("use std::io;\nuse crate::{a, b};\n\nfn main() {}\n", 3, 6, (3, 6), "main")
    assert rust.window == (6, 6)
    prose = offer("use the flag to keep it;\nnothing else\n", 1, 2, (1, 2), None)
    assert prose.window == (1, 2)  # prose that starts with "use" is no import
