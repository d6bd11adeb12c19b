"""`kenning analyze`: what coding agents spent their tokens on, from their local transcripts."""

from __future__ import annotations

import json
import re
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import click

_RELATIVE = re.compile(r"(\d+)([hdw])")
_UNITS = {"h": "hours", "d": "days", "w": "weeks"}


def _since(_ctx: click.Context, _param: click.Parameter, value: str | None) -> datetime | None:
    if value is None:
        return None
    relative = _RELATIVE.fullmatch(value.strip())
    if relative:
        amount, unit = int(relative.group(1)), _UNITS[relative.group(2)]
        return datetime.now(timezone.utc) - timedelta(**{unit: amount})
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{value!r} is neither a date (2026-11-30, 2026-11-30T08:00) "
                                 "nor an age (12h, 7d, 2w).") from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


class _Progress:
    """A line on stderr: redrawn in place on a terminal, every few seconds elsewhere (as
    `kenning index` does), so a large folder of transcripts does not look hung."""

    EVERY = 5.0

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.started = self.last = time.monotonic()
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < (0.1 if self.tty else self.EVERY):
            return
        if not self.tty and done == total and not self.drawn:
            return  # quick enough that no line was due
        self.last, self.drawn = now, True
        line = f"kenning analyze: {done}/{total} transcripts read ({now - self.started:.0f} s)"
        click.echo(f"\r{line}" if self.tty else line, err=True, nl=not self.tty)
        if self.tty and done == total:
            click.echo("", err=True)


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def _print(report: dict[str, Any], sessions: bool) -> None:
    clients = ", ".join(f"{name} {count}" for name, count in report["sessions_by_client"].items())
    where = f" of {report['project']}" if report["project"] else ""
    since = f" since {report['since'][:16]}" if report["since"] else ""
    click.echo(f"{report['sessions_count']} sessions{where}{since} ({clients or 'none found'}), "
               f"{report['files_read']} transcripts read, {report['malformed_lines_skipped']} "
               "malformed lines skipped.")
    if not report["sessions_count"]:
        return
    tokens, calls, kinds = report["tokens"], report["calls"], report["calls_by_kind"]
    whole = sum(tokens.values())
    click.echo(f"\n{'phase':<10} {'tokens':>12} {'share':>6} {'calls':>7}")
    for phase, count in tokens.items():
        detail = ""
        if phase == "exploring":
            parts = [f"{k} {kinds[k]}" for k in ("kenning", "grep", "glob", "read") if k in kinds]
            detail = f"  ({', '.join(parts)})" if parts else ""
        shown = "-" if phase == "thinking" else str(calls[phase])
        click.echo(f"{phase:<10} {count:>12,} {_share(count, whole):>6} {shown:>7}{detail}")
    usage = report["reported_usage"]
    if usage:
        click.echo("reported by the clients: " + ", ".join(f"{k} {v:,}" for k, v in usage.items()))
    kenning = report["kenning"]
    looked = kenning["lookups"]
    click.echo(f"\nkenning: {looked} searches in {kenning['sessions_with']} of "
               f"{report['sessions_count']} sessions; followed by a read of a hit "
               f"{kenning['followed_by_read_of_hit']} times "
               f"({_share(kenning['followed_by_read_of_hit'], looked)}), by grep or glob "
               f"{kenning['followed_by_grep_or_glob']} "
               f"({_share(kenning['followed_by_grep_or_glob'], looked)}).")
    savings = report["savings"]
    if savings["tokens_saved"] is None:
        click.echo(f"savings: no estimate ({savings['requests_with_kenning']} requests with "
                   f"kenning, {savings['requests_without']} without; each side needs 5).")
    else:
        click.echo(f"savings: about {savings['tokens_saved']:,} tokens of exploring "
                   f"(mean {savings['mean_exploring_tokens_with']:,} per request with kenning, "
                   f"{savings['mean_exploring_tokens_without']:,} without).")
    click.echo(f"  method: {savings['method']}")
    click.echo(f"\n{'project':<48} {'sessions':>8} {'tokens':>12} {'exploring':>9} {'kenning':>8}")
    for project in report["projects"]:
        total = sum(project["tokens"].values())
        click.echo(f"{project['project'][-48:]:<48} {project['sessions']:>8} {total:>12,} "
                   f"{_share(project['tokens']['exploring'], total):>9} "
                   f"{project['kenning']['lookups']:>8}")
    if sessions:
        click.echo(f"\n{'started':<17} {'client':<7} {'session':<38} {'tokens':>10} "
                   f"{'exploring':>9} {'kenning':>8}")
        for entry in sorted(report["sessions"], key=lambda s: s["started"] or ""):
            total = sum(entry["tokens"].values())
            click.echo(f"{(entry['started'] or '-')[:16]:<17} {entry['client']:<7} "
                       f"{entry['id'][:38]:<38} {total:>10,} "
                       f"{_share(entry['tokens']['exploring'], total):>9} "
                       f"{entry['kenning']['lookups']:>8}")
    click.echo(f"\nTokens: {report['method']['tokens']}")


@click.command("analyze")
@click.option("--since", callback=_since,
              help="Only sessions active since a date (2026-11-30) or an age (12h, 7d, 2w).")
@click.option("--project", "project_path", type=click.Path(file_okay=False),
              help="Only sessions run in this folder or below it.")
@click.option("--client", "clients", multiple=True, type=click.Choice(["claude", "codex",
                                                                      "gemini"]),
              help="Only this client's transcripts (repeatable) [default: all three].")
@click.option("--sessions", "list_sessions", is_flag=True, help="List every session too.")
@click.option("--json-output", is_flag=True, help="Print JSON for machines.")
def analyze(since: datetime | None, project_path: str | None, clients: tuple[str, ...],
            list_sessions: bool, json_output: bool) -> None:
    """What agents spent tokens on, by phase, from their transcripts.

    Reads Claude Code (~/.claude/projects), Codex (~/.codex/sessions) and Gemini CLI
    (~/.gemini/tmp) transcripts where they are, and adds up, per project and per session,
    tokens and tool calls by phase (exploring: kenning search, grep, glob, read; editing;
    running; thinking; other), how often kenning was searched and what followed (a read of a
    hit, or grep), and a savings estimate whose method is printed with it. It only reads:
    nothing is written and nothing is sent. Malformed lines are skipped and counted.
    """
    from kenning.services.transcripts import report

    found = [s for s in report.sources() if not clients or s.client in clients]
    project = Path(project_path).resolve() if project_path else None
    result = report.analyze(found, since=since, project=project,
                            progress=_Progress()).to_dict()
    if json_output:
        click.echo(json.dumps(result))
    else:
        _print(result, list_sessions)
