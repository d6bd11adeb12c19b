"""Repository text reaches the terminal as plain text: never rich markup, no acting escapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from index_helpers import kenning_cli as kenning
from index_helpers import make_repo

FILES = {
    "[bold red]x.py": "def walrus_alarm():\n    return 'walrus'\n",
    "docs/guide.md": "# Walrus [/] setup [bold]now\n\nHow the walrus is configured.\n",
    "esc\x1b[31mred.py": "def walrus_title():\n    return '\x1b]0;pwned\x07 walrus'\n",
    "a[/]b/deep.py": "def walrus_depth():\n    return 3\n",
}


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", FILES)


def test_search_prints_names_symbols_and_snippets_as_plain_text(
        hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = kenning(capsys, "index", str(hostile))
    assert code == 0 and "\x1b" not in out + err
    code, out, err = kenning(capsys, "search", "walrus", str(hostile), "--limit", "10")
    assert code == 0, err
    assert "[bold red]x.py" in out  # the name as it is, not styled away
    assert "Walrus [/] setup [bold]now" in out  # a heading as symbol, not a MarkupError
    assert "esc\\x1b[31mred.py" in out and "\\x1b]0;pwned\\x07" in out  # spelled out
    assert "\x1b" not in out + err and "\x07" not in out + err
    found = json.loads(kenning(capsys, "search", "walrus", str(hostile), "--json-output",
                               "--limit", "10")[1])
    assert {h["path"] for h in found["results"]} >= {"[bold red]x.py", "esc\x1b[31mred.py"}


def test_dry_run_tables_show_paths_as_plain_text(
        hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = kenning(capsys, "index", str(hostile), "--dry-run")
    assert code == 0, err
    assert "[bold red]x.py" in out and "a[/]b/" in out and "esc\\x1b[31mred.py" in out
    assert "\x1b" not in out + err


def test_errors_quoting_a_path_spell_out_its_escapes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = kenning(capsys, "search", "walrus", str(tmp_path / "gone\x1b[2J"))
    assert code == 2 and "gone\\x1b[2J" in err and "\x1b" not in out + err
