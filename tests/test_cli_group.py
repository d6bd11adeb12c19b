"""The `kenning` group itself: its command list comes without importing any command."""

from __future__ import annotations

import ast
import subprocess
import sys

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
