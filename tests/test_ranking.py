"""Ranking signals on fused candidates: symbol grades, definition boosts, file names."""

from __future__ import annotations

import pytest
from kenning.retrieval import symbols
from kenning.retrieval.query import analyze
from kenning.retrieval.ranking import Candidate, file_words, rank


def _cand(cid: int, path: str, symbol: str | None = None, score: float = 0.1) -> Candidate:
    """Chunk ``cid`` spans lines 10*cid .. 10*cid+9, so chunks of one file never overlap."""
    return Candidate(cid, path, 10 * cid, 10 * cid + 9, 100 * cid, 100 * cid + 99, "python",
                     "function", symbol, score)


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
    assert list(file_words(path)) == words


def test_a_file_the_query_names_is_preferred() -> None:
    cands = [_cand(1, "core/Table.kt"), _cand(2, "core/statements/UpsertStatement.kt")]
    ranked = rank(cands, analyze("upsert statement for insert-or-update"))
    assert [c.id for c in ranked] == [2, 1]


@pytest.mark.parametrize(("query", "path"), [
    ("where are routes registered", "lib/route.ts"),  # `routes` once lost its `es`, not `s`
    ("how are objects serialized", "src/MessagePackSerializer.cs"),
    ("how are retries scheduled", "lib/retry.js"),
])
def test_the_file_name_vote_compares_stems(query: str, path: str) -> None:
    cands = [_cand(1, "lib/other.py", score=0.105), _cand(2, path)]
    assert rank(cands, analyze(query))[0].path == path


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


def _evidence() -> list[Candidate]:
    return [_cand(1, "lone.py", score=0.12),
            _cand(2, "retry.py", score=0.10), _cand(3, "retry.py", score=0.09),
            _cand(4, "retry.py", score=0.08)]


def test_a_question_prefers_the_file_where_the_evidence_gathers() -> None:
    ranked = rank(_evidence(), analyze("how are failed calls repeated"))
    assert ranked[0].id == 2


def test_a_description_of_one_function_keeps_the_best_chunk_first() -> None:
    ranked = rank(_evidence(), analyze("repeat a failed call"))
    assert ranked[0].id == 1


def test_further_chunks_of_a_file_yield_to_other_files() -> None:
    cands = [_cand(1, "a.py", score=0.10), _cand(2, "a.py", score=0.095),
             _cand(3, "b.py", score=0.06)]
    assert [c.id for c in rank(cands, analyze("parse a header"))] == [1, 3, 2]


def test_a_module_head_never_outranks_a_declaration_of_its_own_file() -> None:
    head = _cand(0, "lib/wrap.py", score=0.30)  # imports and banner: the file's first chunk
    cands = [head, _cand(1, "lib/wrap.py", "wrap_lines", score=0.12),
             _cand(2, "lib/other.py", score=0.20)]
    ranked = rank(cands, analyze("wrap long lines"))
    assert [c.id for c in ranked] == [2, 1]


def test_a_module_head_stays_where_its_file_declares_nothing_better() -> None:
    # every method of the file is a block the parser names no declaration in
    cands = [_cand(0, "lib/app.js", score=0.30), _cand(1, "lib/app.js", score=0.12),
             _cand(2, "lib/app.js", "logerror", score=0.05)]
    assert rank(cands, analyze("application"))[0].id == 0


def test_a_rare_word_in_a_declared_name_outweighs_a_common_one() -> None:
    # "wrap" is declared in one file, "line" in three: the file declaring the rare word lifts
    cands = [_cand(1, "src/a.py", score=0.100), _cand(2, "src/b.py", score=0.105),
             _cand(3, "src/c.py", score=0.05), _cand(4, "src/d.py", score=0.05)]
    declared = {"src/a.py": frozenset({"wrap", "text"}), "src/b.py": frozenset({"line"}),
                "src/c.py": frozenset({"line", "count"}), "src/d.py": frozenset({"line"})}

    def declared_of(paths: list[str]) -> dict[str, frozenset[str]]:
        return {p: declared[p] for p in paths}

    ranked = rank(cands, analyze("how are long lines wrapped"), declared_of=declared_of)
    assert ranked[0].path == "src/a.py"


def test_a_question_over_no_candidates_or_zero_scores_ranks_nothing_wrong() -> None:
    assert rank([], analyze("how does it work")) == []
    zeros = [_cand(1, "a.py", score=0.0), _cand(2, "b.py", score=0.0)]
    assert {c.id for c in rank(zeros, analyze("how does it work"))} == {1, 2}


def test_a_candidate_that_reaches_the_page_after_merges_comes_whole() -> None:
    from kenning.retrieval.units import Unit

    # twenty windows of one long declaration in a.py, then one window of a declaration in b.py
    cands = [_cand(i, "a.py", "parse", score=1.0 - i / 100) for i in range(1, 21)]
    cands.append(_cand(21, "b.py", "render", score=0.5))
    spans = {"a.py": (100, 2099, 10, 209), "b.py": (0, 4000, 1, 400)}

    def units_of(head: list[Candidate]) -> dict[int, Unit]:
        return {c.id: Unit(spans[c.path], (c.start_byte, c.end_byte, c.start_line, c.end_line),
                           "function", c.symbol) for c in head}

    ranked = rank(cands, analyze("parse the input"), units_of=units_of, depth=3)
    assert [(c.path, c.start_line, c.end_line) for c in ranked] == [
        ("a.py", 10, 209), ("b.py", 1, 400)]  # one result per declaration, each whole


def test_a_question_prefers_the_file_whose_declarations_it_names() -> None:
    cands = [_cand(1, "src/util.rs", score=0.12), _cand(2, "src/tree.rs", score=0.10)]
    declared = {"src/util.rs": frozenset({"format", "url"}),
                "src/tree.rs": frozenset({"node", "find", "route", "param", "wildcard"})}

    def declared_of(paths: list[str]) -> dict[str, frozenset[str]]:
        return {p: declared[p] for p in paths}

    question = analyze("how are route params and wildcards matched")
    assert rank(cands, question, declared_of=declared_of)[0].path == "src/tree.rs"
    # a description of one function is left to its best chunk
    cands = [_cand(1, "src/util.rs", score=0.12), _cand(2, "src/tree.rs", score=0.10)]
    described = analyze("match route params and wildcards")
    assert rank(cands, described, declared_of=declared_of)[0].path == "src/util.rs"
