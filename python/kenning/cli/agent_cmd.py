"""`kenning setup-agent` and `kenning remove-agent`: wire kenning into coding agents and out."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from kenning.agents import AGENTS, COMPONENTS, RECOMMENDED, Plan, apply, make_plan
from kenning.agents.locations import SIGNS
from kenning.errors import AgentSetupError

COMPONENT_HELP = {
    "setup": {
        "mcp": "Register the kenning MCP server.",
        "instructions": "Add the short kenning block to the agents' instructions (CLAUDE.md, "
                        "AGENTS.md, GEMINI.md, a Cursor rule).",
        "skill": "Add the kenning-search skill (Claude Code).",
        "review": "Add the kenning-review skill: a diff's callers, callees and tests "
                  "(Claude Code).",
        "subagent": "Add the read-only code-explorer subagent (Claude Code).",
        "hooks": "Add a session-start hook that refreshes the index in the background.",
        "search-first": "Opt-in: a hook that asks for one kenning search before grep, find "
                        "and glob on a request that needs code discovery (Claude Code, Codex, "
                        "Gemini CLI).",
    },
    "remove": {
        "mcp": "Unregister the kenning MCP server.",
        "instructions": "Take the kenning block out of the agents' instructions (and delete "
                        "the Cursor rule).",
        "skill": "Delete the kenning-search skill (Claude Code).",
        "review": "Delete the kenning-review skill (Claude Code).",
        "subagent": "Delete the code-explorer subagent (Claude Code).",
        "hooks": "Take out the session-start hook.",
        "search-first": "Take out the search-first hook.",
    },
}


def _detected_agents() -> tuple[str, ...]:
    """The agents that look installed: their config folder exists or their command is on PATH."""
    home = Path.home()
    found = tuple(name for name, (folder, commands) in SIGNS.items()
                  if (home / folder).exists() or any(map(shutil.which, commands)))
    if not found:
        raise AgentSetupError(
            "No coding agent seems to be installed here (none of "
            f"{', '.join('~/' + folder for folder, _ in SIGNS.values())}, and none of their "
            "commands on PATH).",
            hint=f"Choose one with --agent ({'|'.join(AGENTS)}) or --agent all.",
        )
    return found


def _options(action: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    verb = "Set up for" if action == "setup" else "Remove from"

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed(COMPONENTS):
            func = click.option(f"--{name}", is_flag=True,
                                help=COMPONENT_HELP[action][name])(func)
        default_agent = "installed agents" if action == "setup" else "all"
        options = [
            click.option("--agent", type=click.Choice([*AGENTS, "all"]),
                         help=f"{verb} this agent [default: {default_agent}]."),
            click.option("--scope", type=click.Choice(["user", "project"]), default="user",
                         show_default=True,
                         help="user: your own config, every project; project: files in the "
                         "project (to commit and share)."),
            click.option("--project", "project_path", type=click.Path(file_okay=False),
                         default=".", show_default=True,
                         help="The project for --scope project."),
            click.option("--dry-run", is_flag=True,
                         help="Print every file and its exact new content; write nothing."),
            click.option("--json-output", is_flag=True, help="Print JSON for machines."),
        ]
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def _run(action: str, agent: str | None, scope: str, project_path: str, dry_run: bool,
         json_output: bool, **flags: bool) -> None:
    from kenning.project import find_root

    selected = [name for name in COMPONENTS if flags[name.replace("-", "_")]]
    if agent == "all":
        agents: tuple[str, ...] = AGENTS
    elif agent:
        agents = (agent,)
    else:
        agents = _detected_agents() if action == "setup" else AGENTS
    default_set = RECOMMENDED if action == "setup" else COMPONENTS
    components = tuple(selected) or default_set
    project = find_root(project_path) if scope == "project" else Path(project_path).resolve()
    plan = make_plan(action, agents, components, scope, project, explicit=bool(selected))
    plan.notes.extend(_advice(plan))
    if action == "setup" and "hooks" in components:
        plan.notes.append(_hook_note(find_root(project_path)))
    backups = None if dry_run else apply(plan)
    if json_output:
        click.echo(json.dumps(_as_json(plan, dry_run, backups)))
    else:
        _print(plan, dry_run, backups)


def _advice(plan: Plan) -> list[str]:
    """What the user should know about the changes just planned."""
    if not plan.changed or plan.action != "setup":
        return []
    done = {(c.agent, component) for c in plan.changed for component in c.components}
    notes = []
    starts_kenning = any(component in ("mcp", "hooks", "search-first") for _, component in done)
    if plan.scope == "project" and starts_kenning and shutil.which("kenning") is None:
        notes.append("`kenning` is not on PATH here; a project's files start `kenning` from "
                     "PATH (user scope names this install by its path), so put it on the "
                     "agents' PATH.")
    if ("claude", "mcp") in done and plan.scope == "project":
        notes.append("Claude Code asks once before it starts servers from a project's .mcp.json.")
    if ("codex", "hooks") in done or ("codex", "search-first") in done:
        notes.append("Codex runs a new hook only after you review and trust it (/hooks in Codex).")
    if ("codex", "search-first") in done:
        notes.append("Codex shows its hooks only shell commands, so there the search-first hook "
                     "steers grep, rg and find run through the shell.")
    if plan.scope == "project" and any(agent == "codex" for agent, _ in done):
        notes.append("Codex reads a project's .codex/ folder only when the project is trusted.")
    notes.append("Restart running agent sessions to pick up the changes.")
    return notes


def _hook_note(root: Path) -> str:
    """What the session-start hook will do when a session opens in ``root``."""
    from kenning import config as cfg
    from kenning.errors import KenningError
    from kenning.indexing.cost import duration
    from kenning.services.embed_budget import estimate

    settings = cfg.load()
    budget = duration(float(settings["index.hook_budget"]))
    does = ("The session-start hook starts `kenning index` in the background when a session "
            f"opens in a git repository, unless its embedding would take more than "
            f"index.hook_budget ({budget}): then it indexes words and symbols only and says, "
            "in its output, how to embed the rest.")
    try:
        found = estimate(root, settings)
    except KenningError:
        return does
    then = ("words and symbols only" if found.over else "a full index")
    return f"{does} Here: {found.describe()}, so {then}."


def _as_json(plan: Plan, dry_run: bool, backups: Path | None) -> dict[str, Any]:
    return {
        "type": "agent_setup" if plan.action == "setup" else "agent_removal",
        "dry_run": dry_run,
        "scope": plan.scope,
        "agents": list(plan.agents),
        "components": list(plan.components),
        "changed": bool(plan.changed),
        "files": [{"path": str(c.path), "agent": c.agent, "components": c.components,
                   "action": c.action, "content": c.new}
                  for c in plan.changes if c.old is not None or c.new is not None],
        "backup_dir": str(backups) if backups else None,
        "notes": plan.notes,
    }


def _print(plan: Plan, dry_run: bool, backups: Path | None) -> None:
    names = list(plan.agents)
    agents = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
    if not plan.changed:
        what = "already set up" if plan.action == "setup" else "not set up"
        click.echo(f"Nothing to change: kenning is {what} for {agents} ({plan.scope} scope).")
    else:
        if plan.action == "setup":
            what = f"{'Would set' if dry_run else 'Set'} up kenning for {agents}"
        else:
            what = f"{'Would remove' if dry_run else 'Removed'} kenning from {agents}"
        click.echo(f"{what} ({plan.scope} scope):")
        for change in plan.changes:
            if change.old is None and change.new is None:
                continue  # absent before and after: nothing to report
            action = change.action
            if not dry_run and action != "unchanged":
                action += "d"
            click.echo(f"  {action:<9} {change.shown}  ({', '.join(change.components)})")
        if dry_run:
            for change in plan.changed:
                click.echo("")
                if change.action == "create":
                    click.echo(f"--- {change.shown} (new file)")
                    click.echo(change.new, nl=False)
                elif change.action == "delete":
                    click.echo(f"--- {change.shown} (deleted)")
                else:
                    click.echo(change.diff(), nl=False)
            click.echo("\nDry run: nothing was written.")
        elif backups:
            click.echo(f"Backups of the edited files: {backups}")
    for note in plan.notes:
        click.echo(f"Note: {note}")


@click.command("setup-agent")
@_options("setup")
def setup_agent(**options: Any) -> None:
    """Wire kenning into your coding agents.

    Claude Code gets the MCP server, a short instruction block, a search skill, a review
    skill, a read-only explorer subagent and a session-start hook that refreshes the index in
    the background; Codex the server, the block and the hook; Gemini CLI, Cursor and Junie the
    server and the block.

    With no component flags it sets up all of these; `--search-first` adds the opt-in hook
    that asks for one kenning search before grep, find and glob (Claude Code, Codex, Gemini
    CLI). Running it again changes nothing; every edited file is backed up first;
    `kenning remove-agent` undoes it.
    """
    _run("setup", **options)


@click.command("remove-agent")
@_options("remove")
def remove_agent(**options: Any) -> None:
    """Take out what `kenning setup-agent` added.

    Everything else is left byte for byte. With no component flags it removes every component;
    files that held nothing but kenning's additions are deleted.
    """
    _run("remove", **options)
