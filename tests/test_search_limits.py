"""The first results of a search do not depend on how many results it asks for (a real index,
searched with the local model)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kenning import config
from kenning.indexing.indexer import refresh
from kenning.retrieval import ProjectRef
from kenning.services.search import search

TOPICS = ("retry", "backoff", "timeout", "request", "session", "cache", "token", "queue")


def _module(n: int) -> str:
    """A file of a few functions, each saying some of the topics' words, so that files gather
    different amounts of evidence for a question about them."""
    parts = []
    for i in range(2 + n % 5):
        words = [TOPICS[(n + i * j) % len(TOPICS)] for j in range(1 + (n + i) % 4)]
        parts.append(f"def {words[0]}_{n}_{i}(value):\n"
                     f'    """Handle the {" and ".join(words)} of a request."""\n'
                     f"    return value + {n * 10 + i}  # {' '.join(words)}\n")
    return "\n\n".join(parts)


@pytest.fixture(scope="module")
def many_files(tmp_path_factory: pytest.TempPathFactory) -> list[ProjectRef]:
    root = tmp_path_factory.mktemp("limits")
    repo = root / "repo"
    for n in range(70):
        path = repo / f"pkg{n % 7}" / f"mod_{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_module(n))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KENNING_HOME", str(root / "home"))
        mp.setenv("KENNING_CONFIG", str(root / "config.toml"))
        refresh(repo, config.load())
    return [ProjectRef("limits", repo)]


def _ids(refs: list[ProjectRef], query: str, limit: int, monkeypatch: pytest.MonkeyPatch,
         home: Path) -> list[tuple[str, int]]:
    monkeypatch.setenv("KENNING_HOME", str(home / "home"))
    monkeypatch.setenv("KENNING_CONFIG", str(home / "config.toml"))
    found = search(query, refs, settings=config.load(), limit=limit, refresh=False)
    return [(r["path"], r["start_line"]) for r in found["results"]]


@pytest.mark.parametrize("query", ["how are retries with backoff handled for a request",
                                   "session token cache", "queue timeout"])
def test_first_results_do_not_depend_on_the_limit(many_files: list[ProjectRef], query: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    home = many_files[0].root.parent
    ten = _ids(many_files, query, 10, monkeypatch, home)
    assert len(ten) == 10
    for limit in (15, 30, 60, 200):
        more = _ids(many_files, query, limit, monkeypatch, home)
        assert more[:10] == ten, limit
        assert len(more) == len(set(more))  # nothing listed twice
    # past the first results, a larger limit lists deeper candidates too
    assert len(_ids(many_files, query, 60, monkeypatch, home)) > 30
