"""`kenning status`, `kenning remove-index` and `kenning stats`."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from kenning.config import Settings


def _dir_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def _changed_since(root: Path, indexed: dict[str, tuple[int, int]],
                   max_file_size: int) -> dict[str, int]:
    """Files added, changed (size or mtime) and removed since the last snapshot (``indexed``:
    path -> size and mtime): one stat pass."""
    from kenning.sources import walk

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


def project_status(root: Path, settings: Settings | None = None) -> dict[str, Any]:
    from kenning import config, indexing_state
    from kenning.store import Index

    settings = settings or config.load()
    index = Index.open(root, settings)
    indexer = indexing_state.read(index.dir)
    with index.snapshot() as snap:
        since = _changed_since(index.root, snap.file_states(),
                               int(settings["index.max_file_size"]))
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
            "healthy": not problems, "problems": problems, "indexer": indexer,
            "model_origin": config.model_origin(settings), "config": str(config.config_path()),
        }


def _failure_text(failure: dict[str, Any]) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(failure.get("at") or 0)))
    return " ".join(filter(None, [f"the index run of {when} failed: {failure['message']}",
                                  failure.get("hint")]))


def _indexer_line(info: dict[str, Any]) -> str:
    from kenning.indexing_state import describe

    if info["indexer"] is not None:
        return f"running ({describe(info['indexer'])})"
    if info["vectors"] < info["chunks"] or info["generation"] == 0:
        return f"none running; `kenning index {info['root']}` finishes the index"
    return "none running"


def paths() -> dict[str, Any]:
    """Where kenning keeps everything, with the size of each folder."""
    from kenning import config, usage_log
    from kenning.project import kenning_home

    home = kenning_home()
    places = {"config": config.config_path(), "home": home, "indexes": home / "indices",
              "model_cache": home / "cache", "usage_log": usage_log.log_path(),
              "agent_backups": home / "backups"}
    return {"type": "paths", **{
        name: {"path": str(place), "exists": place.exists(),
               "bytes": (_dir_bytes(place) if place.is_dir() else
                         place.stat().st_size if place.is_file() else 0)}
        for name, place in places.items()}}


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
    from kenning.display import visible
    from kenning.project import find_root

    if show_paths:
        where = paths()
        if json_output:
            click.echo(json.dumps(where))
            return
        for name, label in _PATH_LABELS.items():
            place = where[name]
            size = (f"{place['bytes'] / 1e6:.1f} MB" if place["exists"] else "not created yet")
            click.echo(f"{label:<12} {place['path']}  ({size})")
        return
    info = project_status(find_root(path))
    if json_output:
        click.echo(json.dumps(info))
        return
    when = (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["last_snapshot"]))
            if info["last_snapshot"] else "never")
    changed = info["changed_since"]
    lines = [
        f"project    {info['project']}  ({info['root']})",
        f"model      {info['model']}, {info['dims']} dims, from {info['model_origin']}",
        f"config     {info['config']}",
        f"index      {info['files']} files, {info['chunks']} chunks, {info['vectors']} with "
        f"vectors ({info['status']}), {info['size_bytes'] / 1e6:.1f} MB in {info['index_dir']}",
        f"snapshot   #{info['generation']} at {when}, revision {info['revision'] or '-'}",
        f"changed    {changed['added']} added, {changed['changed']} changed, "
        f"{changed['removed']} removed since then",
        "health     " + ("healthy" if info["healthy"] else "; ".join(info["problems"])),
        f"indexer    {_indexer_line(info)}",
    ]
    click.echo(visible("\n".join(lines), multiline=True))  # folder names may hold escapes


def _project_dirs(pid: str | None) -> list[Path]:
    from kenning.project import kenning_home

    indices = kenning_home() / "indices"
    if not indices.is_dir():
        return []
    return sorted(p for p in indices.glob(f"*/{pid or '*'}") if p.is_dir())


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

    from filelock import FileLock, Timeout

    from kenning import config
    from kenning.errors import IndexBusy, IndexMissing, UsageError
    from kenning.project import find_root, kenning_home
    from kenning.store import LOCK_NAME, project_id_for

    if shared_project is not None:
        from kenning.shared import remove

        settings = config.load()
        rows = remove(settings, shared_project)
        if json_output:
            click.echo(json.dumps({"type": "remove_index", "shared": shared_project,
                                   "uri": settings["shared.uri"], "chunks": rows}))
        else:
            click.echo(f"Removed {shared_project} ({rows} chunks) from {settings['shared.uri']}.")
        return
    root = None if all_ else find_root(path)
    dirs = _project_dirs(None if root is None else project_id_for(root, config.load()))
    cache_dir = kenning_home() / "cache"
    if root is not None and not dirs and not cache:
        raise IndexMissing(f"{root} has no index to remove.")
    if all_ and dirs and not yes:
        if not sys.stdin.isatty():
            raise UsageError(f"Refusing to remove every index ({len(dirs)}) without a "
                             "confirmation; pass --yes.")
        total = sum(_dir_bytes(d) for d in dirs)
        if not click.confirm(f"Remove every index ({len(dirs)}, {total / 1e6:.1f} MB) in "
                             f"{kenning_home() / 'indices'}?", err=True):
            click.echo("Nothing was removed.", err=True)
            return
    removed, freed = [], 0
    for directory in dirs:
        lock = FileLock(directory / LOCK_NAME, timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise IndexBusy(f"The index in {directory} is being written by another process.",
                            hint="Wait for the indexing to finish, then remove it.") from None
        try:
            size = _dir_bytes(directory)
            shutil.rmtree(directory)
        finally:
            lock.release()
        removed.append(str(directory))
        freed += size
        parent = directory.parent
        if parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
    if cache and cache_dir.is_dir():
        freed += _dir_bytes(cache_dir)
        shutil.rmtree(cache_dir)
        removed.append(str(cache_dir))
    if json_output:
        click.echo(json.dumps({"type": "remove_index", "removed": removed, "bytes_freed": freed}))
    elif removed:
        click.echo("\n".join(f"Removed {d}" for d in removed))
        click.echo(f"{freed / 1e6:.1f} MB freed.")
    else:
        click.echo("Nothing to remove.")


@click.command()
@click.option("--json-output", is_flag=True, help="Print JSON for machines.")
def stats(json_output: bool) -> None:
    """Searches, latency, errors and tokens saved (local log).

    Tokens saved is a low estimate per search: the whole files of the top 3 results (each
    once), which an agent would otherwise have opened, less what the search returned; 4 bytes
    a token. The log ($KENNING_HOME/usage.jsonl) never leaves this machine and keeps only its
    newest ~2 MB.
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
        f"tokens saved    ~{info['tokens_saved_estimate']} (low estimate: top-3 result files "
        "not read whole; see -h)",
        f"log             {info['log']}",
    ]))
    if info["last_errors"]:
        click.echo("last errors:")
    for error in info["last_errors"]:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(error["t"] or 0))
        click.echo(f"  {when}  {error['command']}: {error['message'] or error['error']}")
