"""The ``kenning`` command line: a click group whose commands are imported only when run.

Exit codes: 0 success; 1 an error; 2 bad usage or input (including config); 3 the embedder
failed (unreachable, model missing); 4 the index is missing or busy; 130 interrupted.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

# command name -> "module:attribute"; modules load lazily so `kenning --help` stays fast.
COMMANDS = {
    "index": "kenning.cli.index_cmd:index",
    "search": "kenning.cli.search_cmd:search",
    "status": "kenning.cli.status_cmd:status",
    "remove-index": "kenning.cli.status_cmd:remove_index",
    "stats": "kenning.cli.status_cmd:stats",
    "doctor": "kenning.cli.doctor_cmd:doctor",
    "config": "kenning.cli.config_cmd:config",
    "mcp": "kenning.cli.mcp_cmd:mcp",
    "setup-agent": "kenning.cli.agent_cmd:setup_agent",
    "remove-agent": "kenning.cli.agent_cmd:remove_agent",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attr = target.split(":")
        try:
            command: click.Command = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            return None  # a command whose module is not part of this build
        return command


CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _version() -> str:
    from kenning import __version__

    return __version__


@click.group(cls=LazyGroup, context_settings=CONTEXT)
@click.version_option(_version(), "-V", "--version", prog_name="kenning")
def cli() -> None:
    """Local semantic code search for coding agents and the people who drive them.

    Index a repository once (`kenning index`), then ask where things are
    (`kenning search "how are retries handled"`). Nothing leaves this machine unless you
    point the embedder at a server elsewhere.
    """


def main(argv: list[str] | None = None) -> Any:
    """Entry point: runs the group, turning kenning's errors into one line and an exit code."""
    from kenning.errors import KenningError

    try:
        return cli.main(args=argv, prog_name="kenning", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KenningError as exc:
        click.echo(f"Error: {exc.message}", err=True)
        if exc.hint:
            click.echo(f"Hint: {exc.hint}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
