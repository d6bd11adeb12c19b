"""What a new user reads: the command list, config values, piped results, where the config is
and which setting chose the model (real processes where the terminal matters)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from kenning import config
from kenning.cli import COMMANDS, cli
from kenning.indexing.indexer import refresh

KENNING = [sys.executable, "-m", "kenning"]


def test_help_shows_every_summary_whole_in_80_columns() -> None:
    text = CliRunner().invoke(cli, ["-h"], terminal_width=80).output
    listed = text[text.index("Commands:"):].splitlines()[1:]
    assert len(listed) == len(COMMANDS)
    for line in listed:
        name, summary = line.split(maxsplit=1)
        assert summary == COMMANDS[name][1] and len(line) <= 80


def test_config_list_prints_toml_values() -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["config", "set", "search.refresh", "off"]).output.startswith(
        "search.refresh = false written to")
    lines = runner.invoke(cli, ["config", "list"]).output.splitlines()
    assert 'embedder.backend = "local"  # default; ' in "\n".join(lines)
    assert any(line.startswith("search.refresh = false  # file;") for line in lines)
    assert any(line.startswith("# embedder.model (unset)  # default;") for line in lines)
    assert not any(word in line for line in lines for word in ("None", "True", "'local'"))
    assert runner.invoke(cli, ["config", "get", "search.refresh"]).output == "false\n"
    assert runner.invoke(cli, ["config", "unset", "search.refresh"]).output.endswith(
        "(default: true)\n")


def test_kenning_home_moves_the_config_unless_kenning_config_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KENNING_CONFIG")
    monkeypatch.setenv("KENNING_HOME", str(tmp_path / "one"))
    config.set_value("search.limit", "3")
    assert (tmp_path / "one" / "config.toml").exists()
    monkeypatch.setenv("KENNING_HOME", str(tmp_path / "two"))
    assert config.load()["search.limit"] == 10  # another home, another set-up
    monkeypatch.setenv("KENNING_CONFIG", str(tmp_path / "one" / "config.toml"))
    assert config.load()["search.limit"] == 3


def test_no_index_error_and_status_name_the_config_and_the_model_setting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.py").write_text("def alpha():\n    return 1\n")
    done = subprocess.run([*KENNING, "status", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0
    assert ('has no index for all-MiniLM-L6-v2 yet (the model comes from embedder.backend = '
            f'"local" (default); config file {config.config_path()})') in done.stdout
    refresh(tmp_path, config.load())
    monkeypatch.setenv("KENNING_EMBEDDER_BACKEND", "ollama")
    monkeypatch.setenv("KENNING_EMBEDDER_MODEL", "nomic-embed-text")
    done = subprocess.run([*KENNING, "search", "alpha", str(tmp_path), "--no-refresh"],
                          capture_output=True, text=True)
    assert 'embedder.model = "nomic-embed-text" (KENNING_EMBEDDER_MODEL)' in done.stderr
    monkeypatch.delenv("KENNING_EMBEDDER_BACKEND")
    monkeypatch.delenv("KENNING_EMBEDDER_MODEL")
    out = subprocess.run([*KENNING, "status", str(tmp_path)], capture_output=True, text=True,
                         check=True).stdout
    assert 'from embedder.backend = "local" (default)' in out
    assert f"config     {config.config_path()}\n" in out


def test_piped_results_and_warnings_keep_whole_lines(tmp_path: Path) -> None:
    long_line = "    return " + " + ".join(f"value_{i}" for i in range(40))
    (tmp_path / "wide.py").write_text(f"def wide_sum():\n{long_line}\n")
    refresh(tmp_path, config.load(), embed=False)  # chunks only: the search warns about it
    env = {**os.environ, "COLUMNS": "80"}
    env.pop("TERM", None)
    done = subprocess.run([*KENNING, "search", "wide_sum", str(tmp_path), "--no-refresh"],
                          capture_output=True, text=True, env=env, check=True)
    assert long_line in done.stdout  # neither wrapped nor cut at 80 columns
    warnings = [line for line in done.stderr.splitlines() if line.startswith("Warning:")]
    assert warnings and all(line.endswith(".") for line in warnings)
    assert len(done.stderr.splitlines()) == len(warnings)  # one line each
    assert json.loads(subprocess.run(
        [*KENNING, "search", "wide_sum", str(tmp_path), "--no-refresh", "--json-output"],
        capture_output=True, text=True, check=True).stdout)["results"]
