"""`kenning index [PATH]`: build or refresh the index of a project."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from kenning import config as cfg
from kenning import project
from kenning.display import visible


@click.command()
@click.argument("path", required=False, default=".", type=click.Path(path_type=Path))
@click.option("--json-output", is_flag=True, help="Print JSON-lines progress and a final result.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing (errors still go to stderr).")
@click.option("--dry-run", is_flag=True,
              help="Embed nothing: report files and chunks per language, largest files/folders.")
@click.option("--wait", is_flag=True, help="If another process is indexing, wait for it.")
@click.option("--full", is_flag=True,
              help="Re-read and re-chunk every file (vectors are still reused by content).")
@click.option("--force-root", is_flag=True,
              help="Index even a home folder, / or a large folder without a project marker.")
@click.option("--from-shared", is_flag=True,
              help="Take the vectors the shared index holds for these chunks, however few are "
              "missing (by default only for 32 or more, when shared.uri is set).")
@click.option("--words-only", is_flag=True,
              help="Index words and symbols only: embed nothing, and let no search start "
              "embedding until a plain `kenning index`.")
@click.option("--hook", is_flag=True,
              help="What the agents' session-start hook runs: estimate the embedding, start "
              "the index in the background (words and symbols only above index.hook_budget) "
              "and say so in one line.")
def index(path: Path, json_output: bool, quiet: bool, dry_run: bool, wait: bool,
          full: bool, force_root: bool, from_shared: bool, words_only: bool,
          hook: bool) -> None:
    """Index the project at PATH (default: here).

    PATH is lifted to the root of its git work tree. Only what changed since the last run is
    re-read, and only chunks never seen before are embedded. Safe to interrupt: the next run
    resumes. Off a terminal, a progress line goes to stderr every few seconds.
    """
    from kenning.embedding import borrowed
    from kenning.indexing import indexer

    root = project.find_root(path)
    settings = cfg.load({"index.force_root": "true" if force_root else None})
    if dry_run:
        with _Reporter(json_output, quiet) as reporter:
            report = indexer.dry_run(root, settings, progress=reporter)
        _print_dry_run(report, json_output, quiet)
        return
    if hook:
        _hook(root, settings, json_output)
        return
    with _Reporter(json_output, quiet) as reporter, borrowed(settings, service=True) as embedder:
        result = indexer.refresh(root, settings, embedder=embedder, full=full, wait=wait,
                                 progress=reporter, from_shared=True if from_shared else None,
                                 embed=not words_only, hold=words_only)
    if json_output:
        return
    for warning in result.warnings:
        click.echo(f"Warning: {warning}", err=True)
    if quiet:
        return
    if result.repaired:
        click.echo(f"The index was damaged ({'; '.join(result.repaired)}); it was rebuilt, "
                   f"keeping {result.vectors_kept} intact vectors.")
    if result.busy:
        message = (f"Indexing of {root} is in progress in another process; pass --wait to "
                   "wait for it.")
    elif result.nothing_changed:
        message = (f"Nothing changed in {root}: the index is up to date ({result.files} "
                   f"files, {result.chunks} chunks).")
    else:
        message = _summary(result)
    click.echo(visible(message, multiline=True))  # folder names may hold escapes


def _hook(root: Path, settings: cfg.Settings, json_output: bool) -> None:
    """Start the index of ``root`` in the background within the embedding budget and say what
    it does, in one line for the agent and the user (the hook's output)."""
    from kenning.cli.search_cmd import index_in_background
    from kenning.indexing.cost import duration
    from kenning.services.embed_budget import estimate

    found = estimate(root, settings)
    index_in_background(root, words_only=found.over, silent=True)
    if found.over:
        message = (f"kenning: {root} is being indexed by words and symbols only (search works "
                   f"in a moment): {found.describe()}, over index.hook_budget "
                   f"({duration(found.budget)}). Run `kenning index {root}` to embed them, "
                   "or `kenning index --dry-run` to see which folders cost most.")
    elif found.chunks:
        message = f"kenning: indexing {root} in the background ({found.describe()})."
    else:
        message = f"kenning: {root} is indexed; refreshing it in the background."
    if json_output:
        _echo_json({"type": "hook", "root": str(root), "words_only": found.over,
                    "chunks": found.chunks, "seconds": round(found.seconds, 1),
                    "budget": found.budget, "message": message})
    else:
        click.echo(visible(message))


def _summary(result: Any) -> str:
    seconds = result.timings.get("total", 0.0)
    lines = [f"Indexed {result.root} in {seconds:.1f}s (generation {result.generation}):",
             f"  files   {result.files} ({result.files_added} added, {result.files_changed} "
             f"changed, {result.files_removed} removed)",
             f"  chunks  {result.chunks} ({result.chunks_added} new, {result.chunks_removed} "
             "dropped)",
             f"  vectors {result.vectors_embedded} embedded"
             + (f", {result.vectors_fetched} from the shared index" if result.vectors_fetched
                else "")
             + (f", {result.vectors_reused} kept from the index of an earlier kenning"
                if result.vectors_reused else "")]
    if result.vectors_missing:
        lines.append(f"  {result.vectors_missing} chunks still lack a vector; "
                     "run `kenning index` again to finish.")
    return "\n".join(lines)


def _echo_json(event: dict[str, Any]) -> None:
    click.echo(json.dumps(event, default=str))
    sys.stdout.flush()


def _fetch_line(event: dict[str, Any]) -> str:
    if event["type"] == "fetching":
        return f"asking the shared index for {event['total']} vectors"
    return f"{event['vectors']} of {event['total']} vectors from the shared index"


class _LogLines:
    """Progress for a log or a pipe: a line on stderr every few seconds (counts, rate, time
    left), so that a long first index does not look hung where no progress bar can draw."""

    EVERY = 5.0  # seconds between lines

    def __init__(self) -> None:
        self.phase = ""
        self.phase_started = self.last = 0.0

    def __call__(self, event: dict[str, Any]) -> None:
        from kenning.indexing.state import pace

        kind = event["type"]
        now = time.monotonic()
        if kind == "waiting":
            self._line("another process is indexing this project; waiting for it")
        elif kind == "scan":
            self._line(f"{event['files']} files to check")
        elif kind in ("fetching", "fetched"):
            self._line(_fetch_line(event))
        elif kind in ("chunking", "embedding"):
            if kind != self.phase:
                self.phase, self.phase_started, self.last = kind, now, now
            done, total = event["done"], event["total"]
            if now - self.last < self.EVERY and done < total:
                return
            self.last = now
            unit = "files read" if kind == "chunking" else "vectors"
            self._line(f"{done}/{total} {unit}{pace(done, total, now - self.phase_started)}")

    @staticmethod
    def _line(text: str) -> None:
        click.echo(f"kenning index: {text}", err=True)


class _Reporter:
    """Turns refresh progress events into JSON lines, a rich progress bar on a terminal, or
    a line every few seconds on stderr elsewhere."""

    def __init__(self, json_output: bool, quiet: bool) -> None:
        self.json_output, self.quiet = json_output, quiet
        self.bar: Any = None
        self.lines: _LogLines | None = None
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> _Reporter:
        if not self.json_output and not self.quiet and not sys.stderr.isatty():
            self.lines = _LogLines()
        elif not self.json_output and not self.quiet:
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
        if self.lines is not None:
            self.lines(event)
        if self.bar is None:
            return
        kind = event["type"]
        if kind == "waiting":
            self.bar.console.print("Another process is indexing this project; waiting for it.")
        elif kind == "scan":
            self.bar.console.print(f"{event['files']} files to check.")
        elif kind in ("fetching", "fetched"):
            self.bar.console.print(_fetch_line(event) + ".")
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


SKIPPED_SHOWN = 10  # paths named per reason in the text report (--json-output has them all)


def _print_costs(report: dict[str, Any], out: Any) -> None:
    """Kinds, the folders with the most chunks and their embedding time, what to leave out."""
    from rich.table import Table
    from rich.text import Text

    from kenning.indexing.cost import duration

    embedding = report["embedding"]
    kinds = Table("kind", "files", "chunks", "vectors", title="By kind")
    for name, stats in report["kinds"].items():
        kinds.add_row(name, str(stats["files"]), str(stats["chunks"]),
                      "embedded" if stats["embedded"] else "words and symbols only")
    out.print(kinds)
    folders = Table("folder", "kind", "chunks", "embedding", title="Folders with the most chunks")
    for row in report["costly_folders"]:
        folders.add_row(Text(visible(row["path"])), row["kind"], str(row["chunks"]),
                        duration(row["seconds"]) if row["embedded"] else
                        f"not embedded ({duration(row['seconds'])} if it were)")
    out.print(folders)
    rate = (f"{embedding['vectors_per_second']:.0f} vectors a second, "
            + ("measured here" if embedding["measured"] else "an estimate until measured here"))
    left = report["chunks"] - embedding["chunks"]
    click.echo(f"Embedding would take about {duration(embedding['seconds'])} for "
               f"{embedding['chunks']} chunks ({rate}; index.embed_kinds = "
               f"{', '.join(embedding['kinds'])})"
               + (f"; the other {left} are found by words and symbols only." if left else "."))
    if report["leave_out"]:
        click.echo("Folders of kinds that are not embedded hold much of the index; to leave "
                   "them out altogether, add these lines to .kenningignore:")
        for line in report["leave_out"]:
            click.echo("  " + visible(line))
        click.echo("To embed them after all, add their kind to index.embed_kinds "
                   "(`kenning config set index.embed_kinds ...`).")


def _print_dry_run(report: dict[str, Any], json_output: bool, quiet: bool) -> None:
    if json_output:
        _echo_json(report)
        return
    if quiet:
        return
    from rich.table import Table
    from rich.text import Text

    from kenning.cli.output import console

    out = console()
    if not report["files"]:
        click.echo(visible(f"Nothing to index in {report['root']}: it holds no file kenning "
                           "would read."))
    else:
        click.echo(visible(f"Would index {report['files']} files ({report['bytes'] / 1e6:.1f} "
                           f"MB) in {report['chunks']} chunks from {report['root']}; nothing "
                           "was embedded."))
        langs = Table("language", "files", "chunks", "MB", title="By language")
        for name, stats in report["languages"].items():
            langs.add_row(name, str(stats["files"]), str(stats["chunks"]),
                          f"{stats['bytes'] / 1e6:.2f}")
        out.print(langs)
        _print_costs(report, out)
        for key, title in (("largest_files", "Largest files"),
                           ("largest_folders", "Largest folders")):
            if not report[key]:
                continue
            table = Table("path", "KB", title=title)
            for row in report[key]:
                table.add_row(Text(visible(row["path"])), f"{row['bytes'] / 1024:.0f}")
            out.print(table)
    if report["skipped_paths"]:
        click.echo("Skipped (folders end in /):")
    for reason, paths in report["skipped_paths"].items():
        more = len(paths) - SKIPPED_SHOWN
        click.echo(f"  {reason:<10} " + visible(", ".join(paths[:SKIPPED_SHOWN])) +
                   (f" and {more} more (--json-output lists all)" if more > 0 else ""))
    click.echo("Exclude what should not be searched with a .kenningignore file "
               "(gitignore syntax).")
