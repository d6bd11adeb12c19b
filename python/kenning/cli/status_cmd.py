"""`kenning status`, `kenning remove-index` and `kenning stats`."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import click


def _dir_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def _changed_since(root: Path, conn: sqlite3.Connection, max_file_size: int) -> dict[str, int]:
    """Files added, changed (size or mtime) and removed since the last snapshot: one stat pass."""
    from kenning.sources import walk

    indexed = {row[0]: (row[1], row[2]) for row in
               conn.execute("SELECT path, size, mtime_ns FROM files")}
    added = changed = 0
    seen = set()
    for file in walk(root, max_file_size=max_file_size):
        seen.add(file.path)
        state = indexed.get(file.path)
        if state is None:
            added += 1
        elif state != (file.size, file.mtime_ns):
            changed += 1
    return {"added": added, "changed": changed, "removed": len(set(indexed) - seen)}


def project_status(root: Path) -> dict[str, Any]:
    from kenning import config
    from kenning.store import Index

    settings = config.load()
    index = Index.open(root, settings)
    with index.snapshot() as snap:
        since = _changed_since(index.root, snap.conn, int(settings["index.max_file_size"]))
        problems = []
        if snap.generation == 0:
            problems.append(f"nothing has been indexed yet: run `kenning index {index.root}`")
        if snap.vectors < snap.chunks:
            problems.append(f"{snap.chunks - snap.vectors} chunks have no vector yet")
        failure = index.last_failure()
        if failure is not None:
            problems.append(_failure_text(failure))
        return {
            "type": "status", "project": index.project_id, "root": str(index.root),
            "index_dir": str(index.dir), "model": snap.descriptor["model"],
            "dims": snap.descriptor["dims"], "files": snap.files, "chunks": snap.chunks,
            "vectors": snap.vectors, "generation": snap.generation, "status": snap.status,
            "size_bytes": _dir_bytes(index.dir), "last_snapshot": snap.created_at,
            "revision": snap.revision, "branch": snap.branch, "changed_since": since,
            "healthy": not problems, "problems": problems,
        }


def _failure_text(failure: dict[str, Any]) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(failure.get("at") or 0)))
    return " ".join(filter(None, [f"the index run of {when} failed: {failure['message']}",
                                  failure.get("hint")]))


@click.command()
@click.argument("path", required=False, default=".", type=click.Path(path_type=Path))
@click.option("--json-output", is_flag=True, help="Print JSON for machines.")
def status(path: Path, json_output: bool) -> None:
    """What the index of the project at PATH holds and whether it is healthy."""
    from kenning.project import find_root

    info = project_status(find_root(path))
    if json_output:
        click.echo(json.dumps(info))
        return
    when = (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["last_snapshot"]))
            if info["last_snapshot"] else "never")
    changed = info["changed_since"]
    lines = [
        f"project    {info['project']}  ({info['root']})",
        f"model      {info['model']}, {info['dims']} dims",
        f"index      {info['files']} files, {info['chunks']} chunks, {info['vectors']} with "
        f"vectors ({info['status']}), {info['size_bytes'] / 1e6:.1f} MB in {info['index_dir']}",
        f"snapshot   #{info['generation']} at {when}, revision {info['revision'] or '-'}",
        f"changed    {changed['added']} added, {changed['changed']} changed, "
        f"{changed['removed']} removed since then",
        "health     " + ("healthy" if info["healthy"] else "; ".join(info["problems"])),
    ]
    click.echo("\n".join(lines))


def _project_dirs(pid: str | None) -> list[Path]:
    from kenning.project import kenning_home

    indices = kenning_home() / "indices"
    if not indices.is_dir():
        return []
    return sorted(p for p in indices.glob(f"*/{pid or '*'}") if p.is_dir())


@click.command("remove-index")
@click.argument("path", required=False, default=".", type=click.Path(path_type=Path))
@click.option("--all", "all_", is_flag=True, help="Remove the indexes of every project.")
@click.option("--json-output", is_flag=True, help="Print JSON for machines.")
def remove_index(path: Path, all_: bool, json_output: bool) -> None:
    """Delete the index of the project at PATH (every model's), or of all projects."""
    from filelock import FileLock, Timeout

    from kenning import config
    from kenning.errors import IndexBusy, IndexMissing
    from kenning.project import find_root
    from kenning.store import LOCK_NAME, project_id_for

    root = None if all_ else find_root(path)
    dirs = _project_dirs(None if root is None else project_id_for(root, config.load()))
    if root is not None and not dirs:
        raise IndexMissing(f"{root} has no index to remove.")
    removed = []
    for directory in dirs:
        lock = FileLock(directory / LOCK_NAME, timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise IndexBusy(f"The index in {directory} is being written by another process.",
                            hint="Wait for the indexing to finish, then remove it.") from None
        try:
            shutil.rmtree(directory)
        finally:
            lock.release()
        removed.append(str(directory))
        parent = directory.parent
        if parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
    if json_output:
        click.echo(json.dumps({"type": "remove_index", "removed": removed}))
    elif removed:
        click.echo("\n".join(f"Removed {d}" for d in removed))
    else:
        click.echo("No indexes to remove.")


@click.command()
@click.option("--json-output", is_flag=True, help="Print JSON for machines.")
def stats(json_output: bool) -> None:
    """Searches, latency, index runs, errors and an estimate of tokens saved (local log)."""
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
        f"tokens saved    ~{info['tokens_saved_estimate']} (whole files not read)",
        f"log             {info['log']}",
    ]))
