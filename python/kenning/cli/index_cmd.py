"""`kenning index [PATH]`: build or refresh the index of a project."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from kenning import config as cfg
from kenning import project


@click.command()
@click.argument("path", required=False, default=".", type=click.Path(path_type=Path))
@click.option("--json-output", is_flag=True, help="Print JSON-lines progress and a final result.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing (errors still go to stderr).")
@click.option("--dry-run", is_flag=True,
              help="Embed nothing: report files and chunks per language, largest files/folders.")
@click.option("--wait", is_flag=True, help="If another process is indexing, wait for it.")
@click.option("--full", is_flag=True,
              help="Re-read and re-chunk every file (vectors are still reused by content).")
def index(path: Path, json_output: bool, quiet: bool, dry_run: bool, wait: bool,
          full: bool) -> None:
    """Index PATH (default: the current directory; lifted to its git work tree root).

    Only what changed since the last run is re-read, and only chunks never seen before are
    embedded. Safe to interrupt: the next run resumes.
    """
    from kenning import indexer

    root = project.find_root(path)
    settings = cfg.load()
    if dry_run:
        with _Reporter(json_output, quiet) as reporter:
            report = indexer.dry_run(root, settings, progress=reporter)
        _print_dry_run(report, json_output, quiet)
        return
    with _Reporter(json_output, quiet) as reporter:
        result = indexer.refresh(root, settings, full=full, wait=wait, progress=reporter)
    if json_output or quiet:
        return
    if result.repaired:
        click.echo(f"The index was damaged ({'; '.join(result.repaired)}); it was rebuilt, "
                   f"keeping {result.vectors_kept} intact vectors.")
    if result.busy:
        click.echo(f"Indexing of {root} is in progress in another process; "
                   "pass --wait to wait for it.")
    elif result.nothing_changed:
        click.echo(f"Nothing changed in {root}: the index is up to date "
                   f"({result.files} files, {result.chunks} chunks).")
    else:
        click.echo(_summary(result))


def _summary(result: Any) -> str:
    seconds = result.timings.get("total", 0.0)
    lines = [f"Indexed {result.root} in {seconds:.1f}s (generation {result.generation}):",
             f"  files   {result.files} ({result.files_added} added, {result.files_changed} "
             f"changed, {result.files_removed} removed)",
             f"  chunks  {result.chunks} ({result.chunks_added} new, {result.chunks_removed} "
             "dropped)",
             f"  vectors {result.vectors_embedded} embedded"]
    if result.vectors_missing:
        lines.append(f"  {result.vectors_missing} chunks still lack a vector; "
                     "run `kenning index` again to finish.")
    return "\n".join(lines)


def _echo_json(event: dict[str, Any]) -> None:
    click.echo(json.dumps(event, default=str))
    sys.stdout.flush()


class _Reporter:
    """Turns refresh progress events into JSON lines or a rich progress bar."""

    def __init__(self, json_output: bool, quiet: bool) -> None:
        self.json_output, self.quiet = json_output, quiet
        self.bar: Any = None
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> _Reporter:
        if not self.json_output and not self.quiet:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(TextColumn("{task.description:<20}"), BarColumn(),
                                MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                console=Console(stderr=True), transient=True)
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, event: dict[str, Any]) -> None:
        if self.json_output:
            _echo_json(event)
        if self.bar is None:
            return
        kind = event["type"]
        if kind == "waiting":
            self.bar.console.print("Another process is indexing this project; waiting for it.")
        elif kind == "scan":
            self.bar.console.print(f"{event['files']} files to check.")
        elif kind == "chunking":
            self._update("files", event["done"], event["total"], "files")
            self.bar.update(self.tasks["files"], description=f"files ({event['chunks']} chunks)")
        elif kind == "embedding":
            self._update("vectors", event["done"], event["total"], "vectors")

    def _task(self, name: str, total: int) -> Any:
        if name not in self.tasks:
            self.tasks[name] = self.bar.add_task(name, total=total, rate="")
        return self.bar.tasks[self.tasks[name]]

    def _update(self, name: str, done: int, total: int, unit: str) -> None:
        task = self._task(name, total)
        self.bar.update(self.tasks[name], completed=done, total=total)
        speed = task.speed
        self.bar.update(self.tasks[name], rate=f"{speed:.1f} {unit}/s" if speed else "")


def _print_dry_run(report: dict[str, Any], json_output: bool, quiet: bool) -> None:
    if json_output:
        _echo_json(report)
        return
    if quiet:
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    click.echo(f"Would index {report['files']} files ({report['bytes'] / 1e6:.1f} MB) in "
               f"{report['chunks']} chunks from {report['root']}; nothing was embedded.")
    langs = Table("language", "files", "chunks", "MB", title="By language")
    for name, stats in report["languages"].items():
        langs.add_row(name, str(stats["files"]), str(stats["chunks"]),
                      f"{stats['bytes'] / 1e6:.2f}")
    console.print(langs)
    for key, title in (("largest_files", "Largest files"), ("largest_folders", "Largest folders")):
        table = Table("path", "KB", title=title)
        for row in report[key]:
            table.add_row(row["path"], f"{row['bytes'] / 1024:.0f}")
        console.print(table)
    for key, what in (("skipped_files", "files"), ("skipped_folders", "folders")):
        if report[key]:
            reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(report[key].items()))
            click.echo(f"Skipped {what}: {reasons}.")
    click.echo("Exclude what should not be searched with a .kenningignore file "
               "(gitignore syntax).")
