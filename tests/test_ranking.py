"""Ranking signals on fused candidates: symbol grades, definition boosts, file names."""

from __future__ import annotations

import pytest
from kenning.search import symbols
from kenning.search.query import analyze
from kenning.search.ranking import Candidate, file_words, rank


def _cand(cid: int, path: str, symbol: str | None = None, score: float = 0.1) -> Candidate:
    return Candidate(cid, path, 1, 10, 0, 100, "python", "function", symbol, score)


@pytest.mark.parametrize(("symbol", "name", "grade"), [
    ("Sinatra.Helpers", "Sinatra::Helpers", symbols.EXACT),
    ("Rack.Builder", "Rack::Builder", symbols.EXACT),
    ("pkg.Client.send", "Client.send", symbols.LAST_PART),
    ("Sinatra.Helpers", "Helpers", symbols.LAST_PART),
    ("Sinatra.helpers", "Sinatra::Helpers", symbols.CASELESS),
    ("Parallel.monad", "Monad", symbols.CASELESS),
    ("HttpClient", "HttpClient.send", symbols.CONTAINER),
    ("parse_header", "parse", symbols.PREFIX),
    ("Other.thing", "Monad", 0.0),
])
def test_grade_compares_qualified_names_part_by_part(symbol: str, name: str,
                                                     grade: float) -> None:
    assert symbols.grade(symbol, name) == grade


@pytest.mark.parametrize(("path", "words"), [
    ("core/statements/UpsertStatement.kt", ["upsert", "statement"]),
    ("axum/src/extract/mod.rs", ["extract"]),
    ("pkg/__init__.py", ["pkg"]),
    ("bash_completionsV2.go", ["bash", "completions"]),
    ("src/utils/tasks.test.ts", ["tasks"]),
])
def test_file_words_name_the_file_or_its_generic_folder(path: str, words: list[str]) -> None:
    assert file_words(path) == words


def test_a_file_the_query_names_is_preferred() -> None:
    cands = [_cand(1, "core/Table.kt"), _cand(2, "core/statements/UpsertStatement.kt")]
    ranked = rank(cands, analyze("upsert statement for insert-or-update"))
    assert [c.id for c in ranked] == [2, 1]


def test_the_file_name_vote_does_not_override_a_much_better_chunk() -> None:
    cands = [_cand(1, "rich/console.py", score=0.19), _cand(2, "rich/text.py", score=0.12)]
    ranked = rank(cands, analyze("convert a string to a text instance"))
    assert [c.id for c in ranked] == [1, 2]


def test_an_exact_definition_outranks_a_caseless_one() -> None:
    cands = [_cand(1, "cats/Parallel.scala", "Parallel.monad"),
             _cand(2, "cats/Kernel.scala", "Monad")]
    ranked = rank(cands, analyze("Monad"))
    assert [c.id for c in ranked] == [2, 1]
    assert ranked[0].score > ranked[1].score
