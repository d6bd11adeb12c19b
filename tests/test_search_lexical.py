"""The lexical branch's row budget: which rows FTS5 scores when query terms are common.

A real index of a generated repository (files, chunks and the FTS table; no vectors needed), with
the budget lowered so that a handful of rows count as "common".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kenning import config
from kenning.indexing.indexer import refresh
from kenning.retrieval import lexical
from kenning.retrieval.query import analyze
from kenning.store import Index, Snapshot, fts

# 12 functions mention "widget" (common at a budget of 5), 3 of them also "sprocket" (rare);
# "bolt" is in 4 (within the budget, but not with sprocket's 3 on top); "gasket" is in 8 and
# "flange" in 7, both common; one function is named after widgets.
FILES = {
    f"src/part{i}.py": f"def part_{i}():\n    '''Build the widget"
                       f"{' and a sprocket' if i < 3 else ''}{' with a gasket' if i < 8 else ''}"
                       f"{' and flange' if i >= 5 else ''}"
                       f"{' held by a bolt' if 2 <= i <= 5 else ''}.'''\n    return {i}\n"
    for i in range(12)
}
FILES["src/registry.py"] = "def widget_registry():\n    '''All parts by name.'''\n    return {}\n"
# "fasteners" is in 6 clips: common as a whole word, before its stem "fastener" adds a 7th row
FILES.update({f"src/clip{i}.py": f"def clip_{i}():\n    '''Hold the fasteners.'''\n    return {i}\n"
              for i in range(6)})
FILES["src/kinds.py"] = "def fastener_kind():\n    '''One of the kinds.'''\n    return 0\n"


@pytest.fixture
def snap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Snapshot]:
    for rel, text in FILES.items():
        path = tmp_path / "repo" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    root = tmp_path / "repo"
    settings = config.load()
    refresh(root, settings, embed=False)
    monkeypatch.setattr(fts, "SCORED_ROWS", 5)
    with Index.open(root, settings).snapshot() as snapshot:
        yield snapshot


def _symbols(snap: Snapshot, query: str) -> list[str]:
    hits = lexical.search(snap, analyze(query), limit=20)
    # every chunk here declares a symbol: one without shows as ""
    names = {row.id: row.symbol or "" for row in snap.chunk_rows([cid for cid, _ in hits])}
    return [names[cid] for cid, _ in hits]


def _expression(snap: Snapshot, query: str) -> str | None:
    """The MATCH expression the store runs for the words of ``query``."""
    return fts.lexical(snap.fts_count, analyze(query).terms)


def test_within_the_budget_every_term_matches(snap: Snapshot,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fts, "SCORED_ROWS", 1000)
    assert _expression(snap, "sprocket widget") == '"sprocket" OR "widget"'
    assert len(_symbols(snap, "sprocket widget")) == 13


def test_rows_of_the_rare_term_only_are_scored(snap: Snapshot) -> None:
    found = _symbols(snap, "sprocket widget")
    assert sorted(found) == ["part_0", "part_1", "part_2"]  # no row with only the common word


def test_other_terms_within_the_budget_still_score_the_rare_terms_rows(snap: Snapshot) -> None:
    assert _expression(snap, "sprocket bolt") == '("sprocket") AND ("sprocket" OR "bolt")'
    found = _symbols(snap, "sprocket bolt")
    assert found[0] == "part_2" and sorted(found) == ["part_0", "part_1", "part_2"]
    # a common term is left out of the scores altogether
    assert _expression(snap, "sprocket gasket") == '"sprocket"'


def test_common_terms_only_match_rows_that_have_them_all(snap: Snapshot) -> None:
    assert _expression(snap, "gasket flange") == '"gasket" AND "flange"'
    assert sorted(_symbols(snap, "gasket flange")) == ["part_5", "part_6", "part_7"]


def test_common_terms_no_row_has_together_match_nothing(
        snap: Snapshot, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fts, "SCORED_ROWS", 2)  # sprocket (3 rows) is common now too
    assert _expression(snap, "sprocket flange") is None
    assert _symbols(snap, "sprocket flange") == []


def test_a_common_word_narrows_to_the_chunks_it_names(snap: Snapshot) -> None:
    assert _symbols(snap, "widget") == ["widget_registry"]


def test_a_word_naming_more_chunks_than_the_budget_leaves_the_query_to_the_others(
        snap: Snapshot) -> None:
    # `part` is in every part_<i>'s name and path: 12 rows, over the budget of 5 every way
    assert _expression(snap, "part") is None
    assert _symbols(snap, "part") == []


def test_common_words_that_too_many_rows_have_together_match_nothing(snap: Snapshot) -> None:
    # widget (13 rows) and gasket (8) are both common, and 8 rows have both
    assert _expression(snap, "widget gasket") is None


def test_a_word_common_whole_is_not_counted_again_with_its_stem(
        snap: Snapshot, monkeypatch: pytest.MonkeyPatch) -> None:
    counted: list[str] = []
    count = snap.fts_count

    def recording(match: str, cap: int) -> int:
        counted.append(match)
        return count(match, cap)

    monkeypatch.setattr(snap, "fts_count", recording)
    stemmed = '("fasteners" OR "fastener" *)'
    assert _expression(snap, "fasteners") == f"{{symbol path}} : {stemmed}"
    assert stemmed not in counted  # 6 rows have the whole word: over the budget of 5 already
    assert _symbols(snap, "fasteners") == ["fastener_kind"]


def test_the_store_quotes_terms_and_orders_weights_by_column_name() -> None:
    assert fts.quote('say "hi"') == '"say ""hi"""'  # a quote inside ends no string early
    assert fts.weights({"path": 2.0, "symbol": 4.0}) == "1.0, 4.0, 2.0"  # body, symbol, path
    with pytest.raises(ValueError, match="no column 'title'"):
        fts.weights({"title": 3.0})
    assert fts.symbol_tokens(["parse", "url"], prefix=True) == \
        'symbol : "parse"* OR symbol : "url"*'
