"""What one search result is: how many a search returns, and what each one spans and shows
(real tree-sitter chunks in a real index, searched with the local model)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kenning import config
from kenning.indexer import refresh
from kenning.search import ProjectRef, search
from kenning.search.api import MAX_LIMIT


def _indexed(root: Path, files: dict[str, str]) -> list[ProjectRef]:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    refresh(root, config.load())
    return [ProjectRef("demo", root)]


def _search(refs: list[ProjectRef], query: str, **kwargs: object) -> dict:
    return search(query, refs, settings=config.load(), refresh=False, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def widgets(tmp_path_factory: pytest.TempPathFactory) -> list[ProjectRef]:
    """130 small functions that all say "widget"."""
    root = tmp_path_factory.mktemp("widgets")
    body = "\n\n".join(f"def widget_{i}(count):\n    return count * {i} + widget_base()\n"
                       for i in range(130))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KENNING_HOME", str(root / "home"))
        mp.setenv("KENNING_CONFIG", str(root / "config.toml"))
        return _indexed(root / "repo", {"widgets.py": body})


@pytest.fixture
def in_widgets(widgets: list[ProjectRef], monkeypatch: pytest.MonkeyPatch) -> list[ProjectRef]:
    home = widgets[0].root.parent
    monkeypatch.setenv("KENNING_HOME", str(home / "home"))
    monkeypatch.setenv("KENNING_CONFIG", str(home / "config.toml"))
    return widgets


def test_a_large_limit_is_honoured(in_widgets: list[ProjectRef]) -> None:
    result = _search(in_widgets, "widget", limit=100)
    assert len(result["results"]) == 100
    assert not result["warnings"]


def test_a_limit_above_the_maximum_says_so(in_widgets: list[ProjectRef]) -> None:
    result = _search(in_widgets, "widget", limit=MAX_LIMIT + 50)
    assert len(result["results"]) == 130  # every match, which is under the maximum
    assert any(f"At most {MAX_LIMIT} results" in w for w in result["warnings"])
