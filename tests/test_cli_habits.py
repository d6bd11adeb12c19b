"""ripgrep habits the search command meets: a closed pipe, a subfolder, highlighted words."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from index_helpers import kenning_cli, make_repo
from search_fixtures import REPO

if TYPE_CHECKING:
    from search_fixtures import Indexed

pytest_plugins = ["search_fixtures"]

KENNING = [sys.executable, "-m", "kenning"]


def test_a_closed_pipe_ends_quietly_with_exit_0(indexed: Indexed) -> None:
    env = {**os.environ, "KENNING_HOME": str(indexed.home), "KENNING_CONFIG": str(indexed.config)}
    for extra in ([], ["--json-output"]):
        reader_gone = subprocess.Popen(
            [*KENNING, "search", "retry backoff", str(indexed.root), "--no-refresh", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert reader_gone.stdout is not None and reader_gone.stderr is not None
        reader_gone.stdout.close()  # as `| head -2` does once it has its lines
        err = reader_gone.stderr.read().decode()
        reader_gone.stderr.close()
        assert reader_gone.wait(timeout=120) == 0, err
        assert "Traceback" not in err and "Error" not in err


def _json(capsys: pytest.CaptureFixture[str], query: str) -> list[str]:
    code, out, _ = kenning_cli(capsys, "search", query, "--no-refresh", "--json-output")
    assert code == 0
    return [hit["path"] for hit in json.loads(out)["results"]]


@pytest.fixture
def git_checkout(tmp_path: Path) -> Path:
    """The fixture repository as a git work tree (whose root a subfolder's search finds),
    indexed."""
    from kenning import config
    from kenning.indexing.indexer import refresh

    root = make_repo(tmp_path / "repo", REPO).resolve()
    refresh(root, config.load())
    return root


def test_from_a_subfolder_its_results_come_first_with_paths_from_there(
        git_checkout: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    query = "retry"
    monkeypatch.chdir(git_checkout)
    from_root = _json(capsys, query)
    assert from_root[0] == "src/http/retry.py" and "src/storage/cache.py" in from_root
    monkeypatch.chdir(git_checkout / "src" / "storage")
    from_folder = _json(capsys, query)  # machines keep paths from the project's root
    assert from_folder[0] == "src/storage/cache.py"
    assert sorted(from_folder) == sorted(from_root)
    code, out, _ = kenning_cli(capsys, "search", query, "--no-refresh")
    assert code == 0
    shown = [line.split(":")[0] for line in out.splitlines() if re.match(r"\S+:\d+-\d+", line)]
    assert shown[0] == "cache.py" and "../http/retry.py" in shown


def test_a_quoted_phrase_matches_as_a_phrase(indexed: Indexed,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = kenning_cli(capsys, "search", '"tried again"', str(indexed.root),
                               "--no-refresh", "--json-output")
    assert code == 0
    found = json.loads(out)["results"]
    # the words apart are in other chunks too; the phrase is in one docstring only
    assert found and all("tried again" in hit["content"] for hit in found)
    assert not found[0]["weak"]
    code, out, _ = kenning_cli(capsys, "search", '"again tried"', str(indexed.root),
                               "--no-refresh", "--json-output")
    assert all(hit["weak"] for hit in json.loads(out)["results"])  # said nowhere


def test_a_quoted_word_is_emphasis_not_a_phrase() -> None:
    from kenning.retrieval.query import analyze
    from kenning.store.fts import phrases

    assert phrases(analyze('Get the encoding of the console file, e.g. "utf-8".').phrases) is None
    assert phrases(analyze('find "retry the request" in the client').phrases) == \
        '"retry the request"'


def _search_output(indexed: Indexed, query: str, *extra: str, **env_vars: str) -> str:
    env = {key: value for key, value in os.environ.items()
           if key not in {"NO_COLOR", "FORCE_COLOR", "TERM", "COLORTERM"}}
    env.update(KENNING_HOME=str(indexed.home), KENNING_CONFIG=str(indexed.config), **env_vars)
    done = subprocess.run([*KENNING, "search", query, str(indexed.root), "--no-refresh", *extra],
                          capture_output=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def _styles_of(output: str, word: str) -> list[set[str]]:
    """The SGR codes in force where each occurrence of ``word`` starts."""
    styles: list[set[str]] = []
    current: set[str] = set()
    for piece in re.split(r"(\x1b\[[0-9;]*m)", output):
        code = re.fullmatch(r"\x1b\[([0-9;]*)m", piece)
        if code is not None:
            current = set() if code.group(1) in {"", "0"} else current | set(
                code.group(1).split(";"))
        else:
            styles += [set(current) for _ in re.finditer(re.escape(word), piece, re.I)]
    return styles


def test_query_words_are_highlighted_only_with_colour_on(indexed: Indexed) -> None:
    coloured = _search_output(indexed, "how does retry work", FORCE_COLOR="1",
                              TERM="xterm-256color")
    found = _styles_of(coloured, "retry")
    paths = [style for style in found if "36" in style]  # in bold cyan, as paths are
    assert paths and all(style == {"1", "36"} for style in paths)
    retry = [style for style in found if "36" not in style]  # in symbols and snippets
    assert retry and all({"1", "31"} <= style for style in retry)  # every one stands out
    assert not any({"1", "31"} <= style for style in _styles_of(coloured, "work"))
    assert not any({"1", "31"} <= style for style in _styles_of(coloured, "does"))
    for plain in (_search_output(indexed, "how does retry work"),  # a pipe
                  _search_output(indexed, "how does retry work", FORCE_COLOR="1",
                                 TERM="xterm-256color", NO_COLOR="1"),
                  _search_output(indexed, "how does retry work", "--json-output",
                                 FORCE_COLOR="1", TERM="xterm-256color")):
        assert "retry" in plain.lower() and "\x1b[1;31m" not in plain and "31m" not in plain
