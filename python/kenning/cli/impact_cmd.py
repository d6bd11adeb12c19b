"""`kenning impact [REVISION...]`: what a diff changes, and what depends on it."""

from __future__ import annotations

import json
from typing import Any

import click


def _link(record: dict[str, Any]) -> str:
    from kenning.display import visible

    name = f" {visible(record['symbol'])}" if record.get("symbol") else ""
    return f"{visible(record['path'])}:{record['start_line']}-{record['end_line']}{name}"


def _print(result: dict[str, Any]) -> None:
    from kenning.display import visible

    against = " ".join(result["revisions"])
    if len(result["revisions"]) == 1 and ".." not in against:
        against += " to the work tree"
    files = {f["path"] for f in result["files"] if f["declarations"]}
    count = len(result["declarations"])
    click.echo(f"{count} declaration{'' if count == 1 else 's'} changed in {len(files)} "
               f"file{'' if len(files) == 1 else 's'} (diff: {visible(against)}).")
    for declaration in result["declarations"]:
        changed = ", ".join(f"{a}-{b}" if a != b else str(a)
                            for a, b in declaration["changed_lines"])
        click.echo(f"\n{_link(declaration)}  {declaration['kind']}  (changed {changed})")
        for key in ("callers", "callees", "tests", "similar"):
            found = "; ".join(map(_link, declaration[key])) or "none found"
            click.echo(f"  {key + ':':<9}{found}")
    for label, key in (("not indexed", "not_indexed"), ("deleted", "removed")):
        if result[key]:
            click.echo(f"\n{label}: {', '.join(map(visible, result[key]))}")
    for warning in result["warnings"]:
        click.echo(f"Warning: {visible(warning)}", err=True)


@click.command("impact")
@click.argument("revisions", nargs=-1)
@click.option("-n", "--limit", type=click.IntRange(1, 20), default=3, show_default=True,
              help="Callers, callees, tests and similar declarations shown for each.")
@click.option("--project", "project_path", type=click.Path(file_okay=False), default=".",
              show_default=True, help="The project (a folder in its git work tree).")
@click.option("--no-refresh", is_flag=True, help="Use the index as it is, without refreshing.")
@click.option("--json-output", is_flag=True, help="Print JSON for machines.")
def impact(revisions: tuple[str, ...], limit: int, project_path: str, no_refresh: bool,
           json_output: bool) -> None:
    """The declarations a diff changes, with callers, callees, tests.

    With no REVISION, the work tree (staged or not, and untracked files) against HEAD;
    `kenning impact main` what changed since main; `kenning impact A..B` between two commits.
    Each changed function, class or method is listed with the declarations that call it, those
    it calls, the tests and the code most like it, from the index (linked by name, no types
    resolved): what a review should read beside the diff.
    """
    from pathlib import Path

    from kenning import config
    from kenning.retrieval import resolve_projects
    from kenning.services.impact import impact as run_impact

    settings = config.load()
    ref = resolve_projects(settings, [Path(project_path)])[0]
    result = run_impact(ref, settings, list(revisions), limit=limit, refresh=not no_refresh)
    if json_output:
        click.echo(json.dumps(result, ensure_ascii=False))
    else:
        _print(result)
