"""`kenning related PATH:LINE`: the code most like the declaration at a location."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kenning.cli.search_cmd import result_options


@click.command()
@click.argument("location")
@result_options
def related(location: str, path_filter: str | None, language: str | None, kind: str | None,
            limit: int | None, projects: tuple[str, ...], no_refresh: bool,
            max_snippet_lines: int, json_output: bool, calls: bool) -> None:
    """Find the code most like the declaration at PATH:LINE.

    `kenning related src/server.py:42`: its vector neighbours, the declarations of the same
    name elsewhere, its callers and callees, fused and ranked; the declaration itself is left
    out. PATH is relative to the working directory or the project root.
    """
    from rich.text import Text

    from kenning import config
    from kenning.cli.output import console
    from kenning.cli.search_cmd import print_results
    from kenning.display import visible
    from kenning.embedding import borrowed
    from kenning.retrieval import resolve_projects
    from kenning.services.related import related as run_related

    settings = config.load()
    refs = resolve_projects(settings, list(projects) or _project_of(location))
    with borrowed(settings, service=True) as embedder:
        result = run_related(location, refs, settings=settings,
                             limit=limit or settings["search.limit"], path_filter=path_filter,
                             language=language, kind=kind, refresh=not no_refresh,
                             with_calls=calls, embedder=embedder)
    if json_output:
        click.echo(json.dumps(result, ensure_ascii=False))
        return
    subject = result["subject"]
    here = Path.cwd().resolve()
    root = next((ref.root for ref in refs if ref.id == subject["project"]), None)
    inside = root is not None and here.is_relative_to(root)
    console(stderr=True).print(Text.assemble(
        "Related to ", (visible(subject["symbol"] or subject["kind"]), "magenta"), " at ",
        (visible(subject["path"]), "bold cyan"), ":",
        (f"{subject['start_line']}-{subject['end_line']}", "green")))
    print_results(result, max_snippet_lines, several=False,
                  relative_to=(root, here) if root is not None and inside else None)


def _project_of(location: str) -> list[str] | None:
    """The folder of an absolute location, whose project is searched as `search PATH`
    searches the project PATH is in; None (the working directory's) for a relative one."""
    from kenning.retrieval.related import parse

    path = Path(parse(location)[0])
    return [str(path.parent)] if path.is_absolute() and path.parent.is_dir() else None
