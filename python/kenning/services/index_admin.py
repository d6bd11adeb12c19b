"""Status, removal and checks of indexes: one record, which the CLI and the MCP server render.

``project_status`` returns a ``ProjectStatus`` (plain JSON-ready data: ``json.dumps`` takes it
as it is) in every state, never raising for an index that is missing or cannot be read;
``unreadable_status`` gives the same record for a project that cannot be looked at at all.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from kenning.errors import IndexError_, IndexMissing, KenningError, UsageError

if TYPE_CHECKING:
    from kenning.config import Settings
    from kenning.indexing.state import Running
    from kenning.store import Index, Snapshot

# "not indexed": no committed snapshot; "ready": every chunk has a vector; "embedding": some
# chunks still lack one; "indexing": an indexer is running now; "unreadable": the index cannot
# be read (damaged, or a folder that cannot be opened).
State = Literal["not indexed", "ready", "embedding", "indexing", "unreadable"]


class Problem(TypedDict):
    error: str | None  # the error code (``kenning.errors``), None for a plain remark
    message: str
    hint: str | None


class ChangedSince(TypedDict):
    added: int
    changed: int
    removed: int


class Runtime(TypedDict):
    """The runtime that runs the local model: its name, its version and why it was taken (the
    ``embedder.runtime`` setting and where it came from, and for "auto" the CPU's reason)."""

    name: str
    version: str
    reason: str


def runtime_status(settings: Settings, *, load: bool = False) -> Runtime | None:
    """The local model's runtime under ``settings`` (None for a remote backend): as decided from
    the setting, the CPU and the installed packages without loading it, or with ``load`` the
    one that loaded (onnxruntime where "auto" took OpenVINO and it failed to load)."""
    from kenning import config
    from kenning.embedders import BACKENDS

    if not BACKENDS[settings["embedder.backend"]].in_process:
        return None
    from kenning.embedding import local

    choice = settings["embedder.runtime"]
    chosen = local.loaded_runtime(choice)[1] if load else local.plan_runtime(choice)
    reason = config.setting_origin(settings, "embedder.runtime")
    if choice == "auto":
        reason += f": {chosen.reason}"
    return {"name": chosen.name, "version": chosen.version, "reason": reason}


class Published(TypedDict, total=False):
    """The project in the shared index: ``problem`` alone when it cannot be reached;
    ``generation`` 0 and a ``hint`` when it is not published; else the published head and
    how far the local snapshot is ahead of it."""

    problem: dict[str, Any]  # the error (``KenningError.to_dict()``)
    generation: int
    hint: str
    state: str
    snapshot_generation: int
    revision: str | None
    published_at: str | None
    local_generations_ahead: int
    files_ahead: ChangedSince | None  # files a publish would send or delete


class ProjectStatus(TypedDict):
    """What a project's index holds and whether it is healthy (``kenning status
    --json-output`` and each project of MCP ``code_index_status``)."""

    type: Literal["status"]
    project: str
    root: str
    state: State
    healthy: bool
    problems: list[Problem]
    index_dir: str | None  # None when there is no index for the configured model
    model: str
    dims: int | None
    model_origin: str  # the setting that chose the model
    runtime: Runtime | None  # the local model's runtime; None for a remote backend
    config: str  # the config file
    generation: int  # of the last committed snapshot; 0: none yet
    status: str | None  # of that snapshot: "complete" or "partial"
    revision: str | None  # git HEAD when it was committed
    branch: str | None
    indexed_at: str | None  # when it was committed, ISO 8601 UTC
    files: int
    chunks: int
    chunks_embedded: int  # chunks that have a vector
    chunks_words_only: int  # chunks without one, of kinds not embedded (index.embed_kinds)
    kinds: dict[str, dict[str, int]]  # file kind -> files, chunks, embedded (chunks)
    size_bytes: int
    changed_since: ChangedSince | None  # files changed on disk since that snapshot
    indexer: Running | None  # the process indexing it now
    published: Published | None  # its generation in the shared index, if one is set


def _iso(at: float | None) -> str | None:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at)) if at else None


def _problem(message: str, hint: str | None = None, error: str | None = None) -> Problem:
    return {"error": error, "message": message, "hint": hint}


def _changed_since(root: Path, snap: Snapshot,
                   max_file_size: int) -> tuple[ChangedSince, list[str]]:
    """Files added, changed and removed since ``snap``, by the comparison a refresh makes
    (``sources.changes``: size and mtime against the stored stat data, one stat pass; only
    new and changed files are opened), and the files no refresh takes for their names."""
    from kenning.indexing.sources import changes

    known = snap.file_stats()
    try:
        found = changes(root, max_file_size=max_file_size, known=known)
    except ValueError:  # stored stat data that damage made unreadable: the refresh rebuilds it
        known = snap.file_stats(stored=False)
        found = changes(root, max_file_size=max_file_size, known=known)
    indexed = set(known.split(b"\0")[::3])  # the paths of its path, size, mtime records
    changed = sum(f.path.encode("utf-8", "surrogateescape") in indexed for f in found.files)
    return {"added": len(found.files) - changed, "changed": changed,
            "removed": len(found.removed)}, found.unnamed


def _base(root: Path, project_id: str, settings: Settings, model: str,
          dims: int | None) -> ProjectStatus:
    from kenning import config

    return {"type": "status", "project": project_id, "root": str(root), "state": "not indexed",
            "healthy": False, "problems": [], "index_dir": None, "model": model, "dims": dims,
            "model_origin": config.model_origin(settings), "runtime": runtime_status(settings),
            "config": str(config.config_path()),
            "generation": 0, "status": None, "revision": None, "branch": None,
            "indexed_at": None, "files": 0, "chunks": 0, "chunks_embedded": 0,
            "chunks_words_only": 0, "kinds": {}, "size_bytes": 0,
            "changed_since": None, "indexer": None, "published": None}


def project_status(root: Path, settings: Settings, *, index: Index | None = None,
                   changes: bool = True) -> ProjectStatus:
    """The status of the index of ``root`` for the configured model (``index``: that index,
    already open), in every state: "not indexed" when there is none, "unreadable" with its
    problems when it cannot be read (settings that are wrong still raise ``ConfigError``).
    ``changes``: count the files changed on disk since the last snapshot (one stat pass)."""
    from kenning.store import Index

    try:
        if index is None:
            index = Index.open(root, settings)
        return _readable_status(index, settings, changes)
    except IndexError_ as exc:  # missing, damaged, or a folder that cannot be opened
        return unreadable_status(root, settings, exc)


def _readable_status(index: Index, settings: Settings, changes: bool) -> ProjectStatus:
    from kenning.indexing import state as indexing_state
    from kenning.indexing.classes import chunk_class

    report = _base(index.root, index.project_id, settings, str(index.descriptor["model"]),
                   int(index.descriptor["dims"]))
    report["index_dir"] = str(index.dir)
    problems = report["problems"]
    with index.snapshot() as snap:
        report["generation"], report["status"] = snap.generation, snap.status
        report["revision"], report["branch"] = snap.revision, snap.branch
        report["indexed_at"] = _iso(snap.created_at)
        report["files"], report["chunks"] = snap.files, snap.chunks
        report["chunks_embedded"], report["chunks_words_only"] = snap.vectors, snap.words_only
        report["kinds"] = snap.kind_counts(chunk_class)
        if changes:
            try:
                report["changed_since"], unnamed = _changed_since(
                    index.root, snap, int(settings["index.max_file_size"]))
                if unnamed:
                    problems.append(_unnamed_problem(unnamed))
            except UsageError as exc:  # a tree no refresh would take (an oversized ignore file)
                problems.append(_problem(exc.message, exc.hint, exc.code))
        published = published_status(settings, index, snap) if settings["shared.uri"] else None
    report["size_bytes"] = index.size_bytes()
    report["indexer"] = indexing_state.read(index.dir)
    if snap.generation == 0:
        problems.append(_problem("Nothing has been indexed yet.",
                                 f"Run `kenning index {index.root}`."))
    elif snap.vectors + snap.words_only < snap.chunks:
        running = report["indexer"]
        # the indexer counts vectors, one per distinct text: fewer than the chunks lacking one
        shared = (" (chunks of the same text share a vector, so the indexer has fewer to "
                  "embed)" if running is not None and running["phase"] == "embedding" else "")
        problems.append(_problem(f"{snap.chunks - snap.vectors - snap.words_only} chunks have no "
                                 f"vector yet{shared}.", None if running else
                                 f"`kenning index {index.root}` computes them."))
    failure = index.last_failure()
    if failure is not None:
        problems.append(_failure(failure))
    report["state"] = ("indexing" if report["indexer"] is not None else
                       "not indexed" if snap.generation == 0 else
                       "ready" if snap.status == "complete" else "embedding")
    report["healthy"] = not problems
    report["published"] = published
    return report


def _unnamed_problem(paths: list[str]) -> Problem:
    from kenning.indexing.sources import RENAME_HINT, unnamed_message

    return _problem(unnamed_message(paths), RENAME_HINT)


def unreadable_status(root: Path, settings: Settings, error: KenningError, *,
                      project: str | None = None) -> ProjectStatus:
    """The status of a project whose index cannot be read, or whose root cannot be looked at
    (``error`` says why): "not indexed" for ``IndexMissing``, else "unreadable". ``project``:
    its id, when ``root`` cannot tell it."""
    from kenning.embedding import identity
    from kenning.store import project_id_for

    ident = identity(settings)  # settings that are wrong fail before any index is opened
    report = _base(root, project or project_id_for(root, settings), settings, ident.model,
                   ident.dims)
    report["state"] = "not indexed" if isinstance(error, IndexMissing) else "unreadable"
    report["problems"].append(_problem(error.message, error.hint, error.code))
    if isinstance(error, IndexError_) and not isinstance(error, IndexMissing):
        from kenning.store import Index  # it is there, but cannot be read: say where

        with contextlib.suppress(KenningError):
            report["index_dir"] = str(Index.open(root, settings).dir)
    return report


def _failure(failure: dict[str, Any]) -> Problem:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(failure.get("at") or 0)))
    return _problem(f"The index run of {when} failed: {failure['message']}",
                    failure.get("hint"), failure.get("error"))


def published_status(settings: Settings, index: Index, snap: Snapshot) -> Published:
    """The project's published generation in the shared index, and how far the local snapshot
    ``snap`` is ahead of the one published: in generations, and in files a publish would send
    or delete (``files_ahead``: added, changed, removed)."""
    from kenning.shared import Engine, read_head
    from kenning.shared.publishing import unpublished

    try:
        with Engine(settings, index.descriptor) as engine:
            head = read_head(engine, index.project_id) if engine.exists() else None
            files = unpublished(engine, snap, index.project_id) if head else None
    except KenningError as exc:
        return {"problem": exc.to_dict()}
    if head is None:
        return {"generation": 0, "hint": f"`kenning publish {index.root}` publishes it."}
    published = int(head.get("snapshot_generation") or 0)
    if not published:  # claimed by a first publish that was stopped before it finished
        return {"generation": 0, "hint": f"A first publish did not finish; `kenning publish "
                                         f"{index.root}` sends it again."}
    ahead: ChangedSince | None = None if files is None else {
        "added": files["added"], "changed": files["changed"], "removed": files["removed"]}
    return {"generation": int(head.get("generation") or 0), "state": str(head.get("state")),
            "snapshot_generation": published, "revision": head.get("revision"),
            "published_at": _iso(head.get("published_at")),
            "local_generations_ahead": max(0, snap.generation - published),
            "files_ahead": ahead}


def ahead_text(published: Published) -> str:
    """How far the local snapshot is ahead of the published one, in words (both front ends)."""
    ahead = int(published.get("local_generations_ahead") or 0)
    files = published.get("files_ahead") or {"added": 0, "changed": 0, "removed": 0}
    counts = {"added": files["added"], "changed": files["changed"], "removed": files["removed"]}
    count = sum(counts.values())
    if not ahead and not count:
        return "as published"
    parts = [f"{ahead} generation{'s' if ahead != 1 else ''} ahead"] if ahead else []
    if count:
        parts.append(f"{count} file{'s' if count != 1 else ''} to publish ("
                     + ", ".join(f"{n} {k}" for k, n in counts.items()) + ")")
    return ", ".join(parts)


class Removal(TypedDict):
    type: Literal["remove_index"]
    removed: list[str]  # the folders removed
    bytes_freed: int


def index_dirs(root: Path | None, settings: Settings) -> list[Path]:
    """The index folders of the project at ``root`` (every model's), or of every project."""
    from kenning.store import index_dirs as dirs
    from kenning.store import project_id_for

    return dirs(None if root is None else project_id_for(root, settings))


def remove(root: Path | None, settings: Settings, *, cache: bool = False) -> Removal:
    """Delete the indexes of the project at ``root`` (every model's; None: of every project),
    and with ``cache`` the model cache. IndexMissing when ``root`` has none and no cache is to
    go; IndexBusy when one is being written (those before it are removed)."""
    import shutil

    from kenning.project import kenning_home
    from kenning.store import dir_bytes, remove_dir

    dirs = index_dirs(root, settings)
    if root is not None and not dirs and not cache:
        raise IndexMissing(f"{root} has no index to remove.")
    report: Removal = {"type": "remove_index", "removed": [], "bytes_freed": 0}
    for directory in dirs:
        report["bytes_freed"] += remove_dir(directory)
        report["removed"].append(str(directory))
    cache_dir = kenning_home() / "cache"
    if cache and cache_dir.is_dir():
        report["bytes_freed"] += dir_bytes(cache_dir)
        shutil.rmtree(cache_dir)
        report["removed"].append(str(cache_dir))
    return report


class SharedRemoval(TypedDict):
    type: Literal["remove_index"]
    shared: str  # the project id taken out of the shared index
    uri: str
    chunks: int  # the chunk rows it had


def remove_shared(settings: Settings, project: str) -> SharedRemoval:
    """Take ``project`` out of the shared index (the configured model's); the local index
    stays. UsageError when it is not there; SharedBusy while a publish of it is under way."""
    from kenning.shared import remove as remove_published

    rows = remove_published(settings, project)
    return {"type": "remove_index", "shared": project, "uri": str(settings["shared.uri"]),
            "chunks": rows}


def footprint(root: Path | None, settings: Settings) -> tuple[int, int]:
    """How many index folders the project at ``root`` (None: every project) has, and their
    bytes: what ``remove`` would free."""
    from kenning.store import dir_bytes

    dirs = index_dirs(root, settings)
    return len(dirs), sum(dir_bytes(d) for d in dirs)


def check(root: Path, settings: Settings) -> int:
    """Check every index of the project at ``root`` in full; how many there are. IndexDamaged
    (with its repair) for the first that is damaged."""
    from kenning.store import check_dir

    dirs = index_dirs(root, settings)
    for directory in dirs:
        check_dir(directory)
    return len(dirs)


def paths() -> dict[str, Any]:
    """Where kenning keeps everything, with the size of each."""
    from kenning import config, usage_log
    from kenning.project import kenning_home
    from kenning.store import dir_bytes

    home = kenning_home()
    places = {"config": config.config_path(), "home": home, "indexes": home / "indices",
              "model_cache": home / "cache", "usage_log": usage_log.log_path(),
              "agent_backups": home / "backups"}
    return {"type": "paths", **{
        name: {"path": str(place), "exists": place.exists(),
               "bytes": (dir_bytes(place) if place.is_dir() else
                         place.stat().st_size if place.is_file() else 0)}
        for name, place in places.items()}}
