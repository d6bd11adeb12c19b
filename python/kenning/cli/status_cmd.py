"""`kenning status`, `kenning remove-index` and `kenning stats`."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from kenning.services.index_admin import ProjectStatus, Published


def _problem_text(problem: Mapping[str, Any]) -> str:
    return " ".join(filter(None, [problem["message"], problem.get("hint")]))


def _kinds_text(kinds: dict[str, dict[str, int]]) -> str:
    """``code 120 files (950 chunks, all embedded), data 40 files (3,100 chunks, words only)``."""
    parts = []
    for kind, counts in kinds.items():
        embedded = counts["embedded"]
        said = ("all embedded" if embedded == counts["chunks"] else
                "words and symbols only" if not embedded else f"{embedded:,} embedded")
        parts.append(f"{kind} {counts['files']:,} files ({counts['chunks']:,} chunks, {said})")
    return ", ".join(parts) or "-"


def _indexer_line(info: ProjectStatus) -> str:
    from kenning.indexing.state import describe

    if info["indexer"] is not None:
        return f"running ({describe(info['indexer'])})"
    if (info["chunks_embedded"] + info["chunks_words_only"] < info["chunks"]
            or info["generation"] == 0):
        return f"none running; `kenning index {info['root']}` finishes the index"
    return "none running"


_PATH_LABELS = {"config": "config file", "home": "KENNING_HOME", "indexes": "indexes",
                "model_cache": "model cache", "usage_log": "usage log",
                "agent_backups": "backups"}


@click.command()
@click.argument("path", required=False, default=".", type=click.Path(path_type=Path))
@click.option("--paths", "show_paths", is_flag=True,
              help="Show where the config, indexes, model cache, usage log and agent backups "
                   "live.")
@click.option("--json-output", is_flag=True, help="Print JSON for machines.")
def status(path: Path, show_paths: bool, json_output: bool) -> None:
    """What a project's index holds, and whether it is healthy.

    PATH defaults to here. Also whether an indexer is running on it (pid, rate, time left),
    the config file, and the setting that chose the model. `--paths` shows where everything
    lives instead.
    """
    from kenning import config
    from kenning.errors import IndexError_
    from kenning.project import find_root
    from kenning.services import index_admin

    if show_paths:
        where = index_admin.paths()
        if json_output:
            click.echo(json.dumps(where))
            return
        for name, label in _PATH_LABELS.items():
            place = where[name]
            size = (f"{place['bytes'] / 1e6:.1f} MB" if place["exists"] else "not created yet")
            click.echo(f"{label:<12} {place['path']}  ({size})")
        return
    info = index_admin.project_status(find_root(path), config.load())
    if json_output:
        click.echo(json.dumps(info))
    else:
        _print_status(info)
    if info["state"] == "unreadable":  # the record is printed; the exit says it is not usable
        problem = info["problems"][-1]
        click.echo(f"Error: {_problem_text(problem)}", err=True)
        raise SystemExit(IndexError_.exit_code)


def _print_status(info: ProjectStatus) -> None:
    from kenning.display import visible

    changed = info["changed_since"] or {"added": 0, "changed": 0, "removed": 0}
    lines = [
        f"project    {info['project']}  ({info['root']})",
        f"model      {info['model']}, {info['dims']} dims, from {info['model_origin']}",
        *([f"runtime    {runtime['name']} {runtime['version']}, by {runtime['reason']}"]
          if (runtime := info["runtime"]) is not None else []),
        f"config     {info['config']}",
        f"state      {info['state']}",
        f"index      {info['files']} files, {info['chunks']} chunks, {info['chunks_embedded']} "
        f"with vectors ({info['status'] or 'none'}), {info['size_bytes'] / 1e6:.1f} MB in "
        f"{info['index_dir'] or 'no folder yet'}",
        f"kinds      {_kinds_text(info['kinds'])}",
        f"snapshot   #{info['generation']} at {_local_time(info['indexed_at'])}, revision "
        f"{info['revision'] or '-'}",
        f"changed    {changed['added']} added, {changed['changed']} changed, "
        f"{changed['removed']} removed since then",
        "health     " + ("healthy" if info["healthy"] else
                         "; ".join(_problem_text(p) for p in info["problems"])),
        f"indexer    {_indexer_line(info)}",
    ]
    if info["published"] is not None:
        lines.append(f"shared     {_published_line(info['published'])}")
    click.echo(visible("\n".join(lines), multiline=True))  # folder names may hold escapes


def _local_time(iso: str | None) -> str:
    """An ISO 8601 UTC time of the status record in this machine's time zone."""
    if iso is None:
        return "never"
    import calendar

    at = calendar.timegm(time.strptime(iso, "%Y-%m-%dT%H:%M:%SZ"))
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def _published_line(published: Published) -> str:
    if published.get("problem"):
        return _problem_text(published["problem"])
    if not published.get("generation"):
        return "; ".join(filter(None, ["not published", published.get("hint")]))
    from kenning.services.index_admin import ahead_text

    return (f"generation {published['generation']} ({published.get('state')}) published "
            f"{_local_time(published.get('published_at'))}; local snapshot "
            + ahead_text(published))


@click.command("remove-index")
@click.argument("path", required=False, default=".", type=click.Path(path_type=Path))
@click.option("--all", "all_", is_flag=True, help="Remove the indexes of every project.")
@click.option("--cache", is_flag=True,
              help="Also remove the model cache (rebuilt at the next search, about 90 MB).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask before removing every index.")
@click.option("--shared", "shared_project", metavar="PROJECT",
              help="Remove the project with this id from the shared index instead (the "
              "configured model's); the local index stays.")
@click.option("--json-output", is_flag=True, help="Print JSON for machines.")
def remove_index(path: Path, all_: bool, cache: bool, yes: bool, shared_project: str | None,
                 json_output: bool) -> None:
    """Delete a project's index, or every index.

    Removes the indexes of the project at PATH (default: here) for every model, or with
    `--all` those of every project.
    `--all` asks first on a terminal; elsewhere it needs `--yes`. `kenning status --paths`
    shows where indexes and the model cache live.
    """
    import sys

    from kenning import config
    from kenning.errors import UsageError
    from kenning.project import find_root, kenning_home
    from kenning.services import index_admin

    settings = config.load()
    if shared_project is not None:
        shared = index_admin.remove_shared(settings, shared_project)
        if json_output:
            click.echo(json.dumps(shared))
        else:
            click.echo(f"Removed {shared['shared']} ({shared['chunks']} chunks) from "
                       f"{shared['uri']}.")
        return
    root = None if all_ else find_root(path)
    if all_ and not yes and (found := index_admin.footprint(None, settings))[0]:
        count, total = found
        if not sys.stdin.isatty():
            raise UsageError(f"Refusing to remove every index ({count}) without a "
                             "confirmation; pass --yes.")
        if not click.confirm(f"Remove every index ({count}, {total / 1e6:.1f} MB) in "
                             f"{kenning_home() / 'indices'}?", err=True):
            click.echo("Nothing was removed.", err=True)
            return
    report = index_admin.remove(root, settings, cache=cache)
    if json_output:
        click.echo(json.dumps(report))
    elif report["removed"]:
        click.echo("\n".join(f"Removed {d}" for d in report["removed"]))
        click.echo(f"{report['bytes_freed'] / 1e6:.1f} MB freed.")
    else:
        click.echo("Nothing to remove.")


@click.command()
@click.option("--json-output", is_flag=True, help="Print JSON for machines.")
def stats(json_output: bool) -> None:
    """Searches, latency, errors and tokens saved (local log).

    Tokens saved is an estimate per search, not a bound: one read of each of the top 3
    results' files (each once, at most 2,000 lines, as an agent's read tool returns), which an
    agent would otherwise have made, less what the search returned; 4 bytes a token. The log
    ($KENNING_HOME/usage.jsonl) never leaves this machine and keeps only its newest ~2 MB.
    """
    from kenning import usage_log

    info = usage_log.summary()
    if json_output:
        click.echo(json.dumps(info))
        return
    p50 = "-" if info["latency_ms_p50"] is None else f"{info['latency_ms_p50']:.0f} ms"
    p90 = "-" if info["latency_ms_p90"] is None else f"{info['latency_ms_p90']:.0f} ms"
    click.echo("\n".join([
        f"searches        {info['searches']} ({info['degraded_searches']} without the embedder, "
        f"{info['empty_searches']} with no result)",
        f"latency         p50 {p50}, p90 {p90}",
        f"index runs      {info['index_runs']}",
        f"errors          {info['errors']}",
        f"tokens saved    ~{info['tokens_saved_estimate']} (estimate: one read of at most "
        "2,000 lines of each top-3 result file, less what kenning returned; see -h)",
        f"log             {info['log']}",
    ]))
    if info["last_errors"]:
        click.echo("last errors:")
    for error in info["last_errors"]:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(error["t"] or 0))
        click.echo(f"  {when}  {error['command']}: {error['message'] or error['error']}")
