"""`kenning publish [PATH]`: push the project's committed snapshot to the shared index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from kenning import config as cfg
from kenning import project

_STAGES = {"publishing": "sending files", "deleting": "deleting stale rows"}


@click.command()
@click.argument("path", required=False, default=".", type=click.Path(path_type=Path))
@click.option("--json-output", is_flag=True, help="Print JSON-lines progress and a final result.")
@click.option("--dry-run", is_flag=True, help="Send nothing: report what would be sent.")
def publish(path: Path, json_output: bool, dry_run: bool) -> None:
    """Send a project's index to the shared index.

    PATH (default: here) is refreshed first, then only what changed since the last publish goes
    to the engine at shared.uri; the vectors are the local ones (nothing is embedded
    again). Safe to interrupt: the next publish converges.
    """
    from kenning.cli.index_cmd import _Reporter
    from kenning.shared import publish as publish_snapshot

    root = project.find_root(path)
    settings = cfg.load()
    with _Reporter(json_output, quiet=False) as reporter:
        def progress(event: dict[str, Any]) -> None:
            if event["type"] in _STAGES and reporter.bar is not None:
                reporter._update(_STAGES[event["type"]], event["done"], event["total"], "files"
                                 if event["type"] == "publishing" else "rows")
            elif event["type"] != "publish_diff" or json_output:
                reporter(event)

        result = publish_snapshot(root, settings, dry_run=dry_run, progress=progress)
    if json_output:
        click.echo(json.dumps(result.to_dict()))
        return
    click.echo(summary(result.to_dict()))


def summary(r: dict[str, Any]) -> str:
    verb = "Would send" if r["dry_run"] else "Sent"
    head = (f"Nothing changed since generation {r['generation']} of {r['project']} in "
            f"{r['uri']}." if r["nothing_changed"] else
            f"{'Dry run: ' if r['dry_run'] else ''}{r['project']} -> {r['uri']}"
            + ("" if r["dry_run"] else f", generation {r['generation']}")
            + f" ({r['seconds']:.1f}s):")
    repaired = (f" ({r['vectors_repaired']} of unchanged files, whose rows were absent or did "
                "not open)" if r["vectors_repaired"] else "")
    stored = (f"  vectors {verb.lower()} {r['vectors_stored']} by content{repaired}, collections "
              f"{r['collection']}{{,_manifest,_vectors2}}")
    if r["nothing_changed"]:
        return "\n".join([head, stored] if r["vectors_stored"] else [head])
    lines = [head,
             f"  files   {r['files_added']} added, {r['files_changed']} changed, "
             f"{r['files_removed']} removed",
             f"  chunks  {verb.lower()} {r['chunks_sent']} ({r['bytes_sent'] / 1e6:.1f} MB), "
             f"{'would delete' if r['dry_run'] else 'deleted'} {r['rows_deleted']} stale rows",
             stored]
    if r.get("resend_all"):
        lines.append(f"  all     {r['resend_all']}")
    if r["skipped"]:
        lines.append(f"  {len(r['skipped'])} files changed while publishing were left for the "
                     "next publish: " + ", ".join(r["skipped"][:5]))
    return "\n".join(lines)
