"""The ``kenning`` command line: a click group whose commands are imported only when run.

Exit codes: 0 success; 1 an error; 2 bad usage or input (including config); 3 the embedder
failed (unreachable, model missing); 4 the index is missing or busy; 5 the shared index is
unreachable, failed or busy publishing; 6 the shared index refused the credentials; 130
interrupted.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

# command name -> ("module:attribute", summary); modules load only when their command runs, so
# `kenning --help` lists the commands from these summaries (a test keeps each one equal to the
# first paragraph of its command's help). Short enough to show whole beside their names in 80
# columns; the list never cuts them.
COMMANDS: dict[str, tuple[str, str]] = {
    "index": ("kenning.cli.index_cmd:index", "Index the project at PATH (default: here)."),
    "search": ("kenning.cli.search_cmd:search", "Find code by meaning, words or symbol."),
    "related": ("kenning.cli.related_cmd:related",
                "Find the code most like the declaration at PATH:LINE."),
    "impact": ("kenning.cli.impact_cmd:impact",
               "The declarations a diff changes, with callers, callees, tests."),
    "get": ("kenning.cli.get_cmd:get", "Print the code of a search result's id."),
    "status": ("kenning.cli.status_cmd:status",
               "What a project's index holds, and whether it is healthy."),
    "remove-index": ("kenning.cli.status_cmd:remove_index",
                     "Delete a project's index, or every index."),
    "publish": ("kenning.cli.publish_cmd:publish", "Send a project's index to the shared index."),
    "analyze": ("kenning.cli.analyze_cmd:analyze",
                "What agents spent tokens on, by phase, from their transcripts."),
    "stats": ("kenning.cli.status_cmd:stats",
              "Searches, latency, errors and tokens saved (local log)."),
    "doctor": ("kenning.cli.doctor_cmd:doctor",
               "Check the model, the embedder, the index and a search."),
    "config": ("kenning.cli.config_cmd:config",
               "Read and change settings (file < environment < flags)."),
    "mcp": ("kenning.cli.mcp_cmd:mcp", "Run the MCP server over stdio."),
    "setup-agent": ("kenning.cli.agent_cmd:setup_agent", "Wire kenning into your coding agents."),
    "remove-agent": ("kenning.cli.agent_cmd:remove_agent",
                     "Take out what `kenning setup-agent` added."),
    "hook": ("kenning.cli.hook_cmd:hook",
             "Run an agent hook (it reads the event's JSON on stdin)."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attr = target[0].split(":")
        try:
            command: click.Command = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            return None  # a command whose module is not part of this build
        _alias_json(command)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        """A reader that stopped early (`kenning search ... | head -2`) ends the command
        quietly, with exit 0 as it would for ripgrep: the rest of the output is not wanted."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # what is still buffered would fail again when the interpreter flushes at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise click.exceptions.Exit(0) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of `kenning --help`, without importing any command."""
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _alias_json(command: click.Command) -> None:
    """``--json`` (as ripgrep users type it) for ``--json-output``, on ``command`` and every
    subcommand that has it: one place, so a new command gets it too."""
    for param in command.params:
        if isinstance(param, click.Option) and "--json-output" in param.opts \
                and "--json" not in param.opts:
            param.opts.append("--json")
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _alias_json(sub)


CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from kenning import __version__

    click.echo(f"kenning, version {__version__}")
    ctx.exit()


@click.group(cls=LazyGroup, context_settings=CONTEXT)
@click.option("-V", "--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Show the version and exit.")
def cli() -> None:
    """Local semantic code search for coding agents and the people who drive them.

    Index a repository once (`kenning index`), then ask where things are
    (`kenning search "how are retries handled"`). Nothing leaves this machine unless you
    point the embedder at a server elsewhere.
    """
    from kenning import usage_log

    # the searches, index runs and errors of this command go to `kenning stats`' log
    click.get_current_context().with_resource(usage_log.opened())


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
        from kenning.display import visible

        # messages quote paths and names from repositories: nothing in them may act
        click.echo(f"Error: {visible(exc.message, multiline=True)}", err=True)
        if exc.hint:
            click.echo(f"Hint: {visible(exc.hint, multiline=True)}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
