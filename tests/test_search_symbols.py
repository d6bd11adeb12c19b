"""The symbol branch's lookup: whole components first, a prefix match only where it adds.

A real index of a generated repository (files, chunks and the FTS table; no vectors needed).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from index_helpers import make_repo
from kenning import config
from kenning.indexing.indexer import refresh
from kenning.retrieval import symbols
from kenning.retrieval.query import analyze
from kenning.store import Index, Snapshot

# Chunks are stored in the order a first index takes files, newest first (indexing.priority):
# the files are dated so that this is path order. Four functions whose names only start with
# "request" come first, then the one named `request`, then four that have "request" as a part
# of their name (matched by the whole word, graded nothing: `send_request` is not `request`).
FILES = {
    **{f"a{i}.py": f"def requests_{i}():\n    return {i}\n" for i in range(4)},
    "b.py": "def request():\n    return 'sent'\n",
    **{f"c{i}.py": f"def send_request_{i}():\n    return {i}\n" for i in range(4)},
}


@pytest.fixture
def snap(tmp_path: Path) -> Iterator[Snapshot]:
    root = make_repo(tmp_path / "repo", FILES)
    newest = root.joinpath("a0.py").stat().st_mtime_ns
    for age, name in enumerate(sorted(FILES)):
        os.utime(root / name, ns=(newest - age * 10**9, newest - age * 10**9))
    settings = config.load()
    refresh(root, settings, embed=False)
    with Index.open(root, settings).snapshot() as snapshot:
        yield snapshot


def _found(snap: Snapshot, query: str) -> list[tuple[str, float]]:
    found = symbols.search(snap, analyze(query), limit=10)
    # a match by symbol has one: a chunk without shows as ""
    names = {row.id: row.symbol or "" for row in snap.chunk_rows([cid for cid, _ in found])}
    return [(names[cid], grade) for cid, grade in found]


def test_prefix_matches_fill_the_room_the_whole_name_leaves(snap: Snapshot) -> None:
    found = _found(snap, "request")
    assert found[0] == ("request", symbols.EXACT)
    assert sorted(name for name, _ in found[1:]) == [f"requests_{i}" for i in range(4)]
    assert {grade for _, grade in found[1:]} == {symbols.PREFIX}


def test_enough_strong_matches_need_no_prefix_match(snap: Snapshot,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[list[str], bool]] = []
    matches = snap.symbol_matches

    def recording(tokens: list[str], *rest: Any, prefix: bool = False) -> Any:
        asked.append((list(tokens), prefix))
        return matches(tokens, *rest, prefix=prefix)

    monkeypatch.setattr(snap, "symbol_matches", recording)
    found = symbols.search(snap, analyze("request"), limit=1)
    assert [grade for _, grade in found] == [symbols.EXACT]
    assert asked == [(["request"], False)]  # no prefix match asked for


def test_a_window_full_of_whole_name_rows_is_not_crowded_out_by_prefix_rows(
        snap: Snapshot, monkeypatch: pytest.MonkeyPatch) -> None:
    # the first four rows of the prefix match are requests_0..3: the exact match would be past
    # them; the whole word's first four rows hold it
    monkeypatch.setattr(symbols, "WINDOW", 4)
    assert _found(snap, "request") == [("request", symbols.EXACT)]
