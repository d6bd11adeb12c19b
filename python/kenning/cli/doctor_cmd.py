"""`kenning doctor`: renders the library's self-test (``kenning.doctor``)."""

from __future__ import annotations

import json

import click


@click.command()
@click.option("--json-output", is_flag=True, help="Print JSON for machines.")
def doctor(json_output: bool) -> None:
    """Check the model, the embedder, the index and a search.

    Checks that the model loads, the embedder answers, indexes can be written and a search
    finds what was indexed; each failure comes with its fix. The indexes of the project in
    the current directory are checked in full too: the database, the full-text table, the
    vector files and their checksums.
    """
    from kenning.services.library import doctor as run

    report = run(".")
    if json_output:
        click.echo(json.dumps(report.to_dict()))
    else:
        for c in report.checks:
            mark = click.style("ok  ", fg="green") if c.ok else click.style("FAIL", fg="red")
            click.echo(f"{mark} {c.check}: {c.detail}")
            if c.fix:
                click.echo(f"     fix: {c.fix}")
    if not report.ok:
        raise SystemExit(1)
