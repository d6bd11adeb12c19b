"""`kenning get ID [PATH]`: the code a search result's id names, read from the work tree."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command()
@click.argument("chunk_id")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--scope", type=click.Choice(["declaration", "chunk"]), default="declaration",
              show_default=True, help="The whole declaration the chunk belongs to, or the "
              "chunk alone.")
@click.option("--context-lines", type=click.IntRange(min=0), default=0,
              help="Lines of the file to add above and below.")
@click.option("--expect-hash", help="The result's content_hash: refuse (exit 2) if those lines "
              "changed since that search.")
@click.option("--json-output", is_flag=True, help="Print the chunk JSON for machines.")
def get(chunk_id: str, path: Path | None, scope: str, context_lines: int,
        expect_hash: str | None, json_output: bool) -> None:
    """Print the code of a search result's id.

    `kenning get ID` reads the declaration a result's id names from the work tree, in the
    project here or at PATH. With --expect-hash (the result's content_hash) it refuses lines
    that changed since the search.
    """
    from kenning import config
    from kenning.display import visible
    from kenning.retrieval import resolve_projects
    from kenning.services.chunks import get_chunk

    settings = config.load()
    refs = resolve_projects(settings, [path] if path else None)
    chunk = get_chunk(chunk_id, refs, settings=settings, scope=scope,
                      context_lines=context_lines, expect_hash=expect_hash)
    if json_output:
        click.echo(json.dumps(chunk, ensure_ascii=False))
        return
    where = f"{chunk['path']}:{chunk['start_line']}-{chunk['end_line']}"
    label = " ".join(str(x) for x in (chunk["kind"], chunk["symbol"]) if x)
    click.echo(visible(f"{where}  {label}"))
    if chunk["stale"]:
        click.echo("Warning: the file changed since it was indexed; search again for a "
                   "fresh id.", err=True)
    if chunk["note"]:
        click.echo(visible(chunk["note"]), err=True)
    click.echo(visible(chunk["content"], multiline=True))
