"""`kenning hook`: the hooks that agents run, each reading its event's JSON on stdin."""

from __future__ import annotations

import sys

import click


@click.group("hook")
def hook() -> None:
    """Run an agent hook (it reads the event's JSON on stdin).

    `kenning setup-agent --search-first` registers these; nothing here is meant to be typed.
    """


@hook.command("search-first")
def search_first() -> None:
    """Ask for one kenning search before grep, find and glob on a discovery request.

    Reads a Claude Code, Codex or Gemini CLI hook event on stdin and prints the hook's answer
    (a refusal of the tool call, or nothing). It never fails: what it cannot read lets the
    call through. See docs/agents.md.
    """
    from kenning.agents.search_first import run

    answer = run(sys.stdin.read())
    if answer:
        click.echo(answer)
