"""The `kenning` group itself: its command list comes without importing any command."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from kenning.cli import COMMANDS, cli


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("limit", [45, 200])
def test_listed_summary_is_the_commands_own(name: str, limit: int) -> None:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    listed = click.Command(name, help=COMMANDS[name][1]).get_short_help_str(limit)
    assert listed == command.get_short_help_str(limit)


def test_help_lists_every_command_without_importing_one() -> None:
    script = ("import sys\nfrom kenning.cli import main\n"
              "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
              "print(sorted(m for m in sys.modules if m.startswith('kenning.')))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    *help_lines, loaded = done.stdout.strip().splitlines()
    listed = [line.split()[0] for line in help_lines[help_lines.index("Commands:") + 1:]]
    assert listed == sorted(COMMANDS)
    assert set(ast.literal_eval(loaded)) <= {"kenning.cli", "kenning.errors"}


def test_version() -> None:
    done = subprocess.run([sys.executable, "-m", "kenning", "--version"], capture_output=True,
                          text=True, check=True)
    assert done.stdout.startswith("kenning, version ") and done.stdout.strip()[-1].isdigit()


def _json_options(command: click.Command, path: str) -> list[tuple[str, list[str]]]:
    found = [(path, param.opts) for param in command.params
             if isinstance(param, click.Option) and "--json-output" in param.opts]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            found += _json_options(sub, f"{path} {name}")
    return found


def test_json_is_an_alias_of_json_output_on_every_command() -> None:
    found = []
    for name in sorted(COMMANDS):
        command = cli.get_command(click.Context(cli), name)
        assert command is not None
        found += _json_options(command, name)
    assert {path.split()[0] for path, _ in found} >= {"search", "status", "get", "doctor"}
    for path, opts in found:
        assert "--json" in opts, path


def test_json_prints_what_json_output_prints(tmp_path: Path) -> None:
    env = {**os.environ, "KENNING_HOME": str(tmp_path), "KENNING_CONFIG": str(tmp_path / "c")}
    outputs = [subprocess.run([sys.executable, "-m", "kenning", "config", "list", flag],
                              capture_output=True, text=True, check=True, env=env).stdout
               for flag in ("--json", "--json-output")]
    assert outputs[0] == outputs[1] and json.loads(outputs[0])
    assert "--json" in subprocess.run([sys.executable, "-m", "kenning", "search", "--help"],
                                      capture_output=True, text=True, check=True).stdout
