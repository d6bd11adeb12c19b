"""One index per (project, embedding descriptor): SQLite metadata plus fixed-width vector files.

``Index.open(...).snapshot()`` gives readers a consistent view that never blocks on, and is
never disturbed by, a writer; ``Index.writer()`` (under the OS lock ``index.lock``) is the one
way to change an index.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np
from filelock import FileLock, Timeout

from kenning import project
from kenning.config import config_path, model_origin
from kenning.errors import IndexBusy, IndexDamaged, IndexError_, IndexMissing, KenningError
from kenning.store import db, ids, integrity, vectors
from kenning.store.chunk_filter import ChunkFilter
from kenning.store.reads import SnapshotReads

if TYPE_CHECKING:
    from kenning.config import Settings
    from kenning.embedding import Embedder, Identity
    from kenning.store.repair import Repair
    from kenning.store.writer import IndexWriter

PRECISION = "b1+int8"
LOCK_NAME = "index.lock"
FAILURE_NAME = "last_failure.json"  # the last failed refresh or damaged read, until fixed
# The failure file keeps this many bytes allocated (JSON padded with spaces) and is rewritten in
# place, so a failure on a full disk can still be kept: it needs no new block.
FAILURE_BYTES = 4096
# descriptor keys whose change makes a new index of the same vectors
_REBUILT_BY = ("chunker_version", "schema_version")

__all__ = ["LOCK_NAME", "PRECISION", "ChunkFilter", "Index", "Snapshot", "dir_bytes",
           "index_dirs", "make_descriptor", "project_id_for"]


def make_descriptor(embedder: Embedder | Identity, dims: int | None = None) -> dict[str, Any]:
    """What decides the index folder: a change of any of these is a new index, never a mix.
    ``dims`` stands for the embedder's when given."""
    from kenning.chunking import CHUNKER_VERSION

    dims = embedder.dims if dims is None else dims
    if dims is None:
        raise ValueError(f"the dims of {embedder.model} are not known")
    descriptor = {"model": embedder.model, "dims": int(dims),
                  "precision": PRECISION, "chunker_version": CHUNKER_VERSION,
                  "schema_version": project.SCHEMA_VERSION}
    named = embedder.descriptor()
    if named.get("document_prefix"):  # the vectors depend on it: another must not share the index
        descriptor["document_prefix"] = named["document_prefix"]
    if named.get("weights"):  # the shipped file of the local model, one per release of it
        descriptor["weights"] = named["weights"]
    return descriptor


def _check_dims_learned(descriptor: dict[str, Any], on_disk: dict[str, Any] | None,
                        root: Path) -> None:
    """EmbedderError when the dims the server answered with (none were configured) are not
    those of the project's index of the model: the model behind the name changed, and a new
    index would start from nothing in silence."""
    from kenning.errors import EmbedderError

    if on_disk is None or on_disk["dims"] == descriptor["dims"] or not on_disk["dims"]:
        return
    raise EmbedderError(
        f"{descriptor['model']} returned {descriptor['dims']}-dim vectors; the index of "
        f"{root} holds {on_disk['dims']}-dim ones.",
        hint="The model behind this name changed: use a new model name, or set "
             f"embedder.dims = {descriptor['dims']} to build a new index for it.")


def _on_disk(ident: Embedder | Identity, pid: str) -> dict[str, Any] | None:
    """The descriptor of an existing index of ``pid`` for ``ident``'s model, found by its
    folder name, when the dims of the model are not known without asking its server (folders
    are ``<model>-<dims>-<digest>``; the digest must match the dims read). Real dims are
    preferred to an index of words only (dims 0)."""
    slug = project.model_slug(ident.model)
    found = []
    for folder in (project.kenning_home() / "indices").glob(f"{slug}-*/{pid}"):
        dims = folder.parent.name[len(slug) + 1:].partition("-")[0]
        if not dims.isdigit() or not (folder / db.DB_NAME).exists():
            continue
        descriptor = make_descriptor(ident, int(dims))
        if project.descriptor_slug(descriptor) == folder.parent.name:
            found.append(descriptor)
    return max(found, key=lambda d: int(d["dims"]), default=None)


def _earlier_index(descriptor: dict[str, Any], pid: str) -> Path | None:
    """An index of ``pid`` for the same model and dims under another descriptor (another
    release's model file or chunker, or another document prefix), the newest if several."""
    here = project.index_dir(descriptor, pid)
    prefix = f"{project.model_slug(str(descriptor['model']))}-{descriptor['dims']}-"
    found = [folder for folder in (project.kenning_home() / "indices").glob(f"{prefix}*/{pid}")
             if folder != here and (folder / db.DB_NAME).exists()]
    return max(found, key=lambda folder: folder.stat().st_mtime, default=None)


@dataclass
class Snapshot(SnapshotReads):
    """A consistent read view: one SQLite read transaction plus the vector rows it commits to,
    read through the methods of ``SnapshotReads``. Its connection is lent by the process's pool
    of read connections and goes back on ``close()``."""

    _conn: sqlite3.Connection
    generation: int
    revision: str | None
    branch: str | None
    status: str
    files: int
    chunks: int
    vectors: int  # chunks that have a vector
    token: str  # this index instance's, for chunk ids (``store.ids``)
    vector_rows: int
    vector_epoch: int  # ids are stable within an epoch; a compaction starts the next one
    bits: np.ndarray
    int8: np.ndarray
    scales: np.ndarray
    center: np.ndarray | None
    descriptor: dict[str, Any]
    directory: Path
    created_at: float | None = None
    timings: dict[str, float] = field(default_factory=dict)
    words_only: int = 0  # chunks without a vector of kinds not embedded (index.embed_kinds)
    _lease: _Lease | None = field(default=None, repr=False)

    def close(self) -> None:
        """End the read transaction; the connection goes back to the pool (or is closed), and
        this snapshot's connection is a closed one from now on, so a late use fails loudly
        instead of reading inside another snapshot."""
        lease, self._lease = self._lease, None
        if lease is not None:
            conn, self._conn = self._conn, _CLOSED
            _readers.give_back(lease, conn)

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
        if isinstance(exc, sqlite3.Error):  # a query on this view failed: say so, and how to fix
            raise db.failure(self.directory, exc, "read") from exc

    def chunk_id(self, project: str, ordinal: int) -> str:
        """The id of chunk row ``ordinal`` as handed out from this snapshot."""
        return str(ids.ChunkId(project, self.token, self.generation, ordinal))


@dataclass
class Index:
    root: Path
    project_id: str
    descriptor: dict[str, Any]
    dir: Path

    @classmethod
    def open(cls, root: Path, settings: Settings, *, embedder: Embedder | None = None,
             create: bool = False) -> Index:
        """The index of ``root`` for the configured embedder; IndexMissing if absent.

        It is located from settings alone: no model is loaded and no server asked, unless
        ``create`` needs the dims of a remote model that never answered. ``embedder``: the
        one to index with, whose dims then name the index."""
        from kenning.embedding import identity

        root = Path(root).resolve()
        pid = project_id_for(root, settings)
        descriptor: dict[str, Any] | None
        if embedder is not None:
            model = embedder.model
            descriptor = make_descriptor(embedder)
            if not descriptor["dims"]:  # words only: the model's real index may be on disk
                descriptor = _on_disk(embedder, pid) or descriptor
            elif settings["embedder.dims"] is None:
                _check_dims_learned(descriptor, _on_disk(embedder, pid), root)
        else:
            ident = identity(settings)
            model = ident.model
            # dims unknown: a remote model whose dims were never learned here, or forgotten
            descriptor = (make_descriptor(ident) if ident.dims is not None else
                          _on_disk(ident, pid))
        if descriptor is None and create:
            from kenning.embedding import borrowed

            with borrowed(settings) as made:
                descriptor = make_descriptor(made)  # the dims, asked of the server
        index = (None if descriptor is None else
                 cls(root, pid, descriptor, project.index_dir(descriptor, pid)))
        if index is not None and create:
            index._create()
        elif index is None or not index.exists():
            if index is not None:
                _readers.drop(index.dir)  # removed: its kept connections and maps must go too
            earlier = None if descriptor is None else _earlier_index(descriptor, pid)
            if earlier is not None:
                raise IndexMissing(
                    f"{root} has no index for this release of {model} yet: the one in "
                    f"{earlier} was built by another release of kenning or with other settings, "
                    "and is never searched with this one.",
                    hint=f"`kenning index {root}` builds it again; a search does too, answering "
                         "from words and symbols at once while the vectors are computed in the "
                         "background. Then the old folder can be removed.")
            raise IndexMissing(f"{root} has no index for {model} yet (the model "
                               f"comes from {model_origin(settings)}; config file "
                               f"{config_path()}).",
                               hint=f"Run `kenning index {root}` first, or choose the model of "
                                    "an existing index (`kenning config list`).")
        return index

    def exists(self) -> bool:
        return (self.dir / db.DB_NAME).exists()

    def earlier(self) -> list[Index]:
        """The other indexes of this project whose vectors this one can take: the same model,
        dims, precision and prefix, built by another chunker or schema version (an upgrade
        makes a new index; its chunks whose text did not change keep their vectors)."""
        same = {k: v for k, v in self.descriptor.items() if k not in _REBUILT_BY}
        found = []
        for directory in index_dirs(self.project_id):
            if directory == self.dir:
                continue
            descriptor = db.stored_descriptor(directory)
            if descriptor is not None and same == {
                    k: v for k, v in descriptor.items() if k not in _REBUILT_BY}:
                found.append(Index(self.root, self.project_id, descriptor, directory))
        return found

    def record_failure(self, error: KenningError, command: str) -> None:
        """Keep the last failure of ``command`` where status and search show it (a refresh in
        the background has no one else to tell). Best effort: the disk may be what failed."""
        entry = {"command": command, "at": time.time(), "error": error.code,
                 "message": error.message, "hint": error.hint}
        text = json.dumps(entry)
        if len(text.encode()) > FAILURE_BYTES:  # a message of kilobytes: keep its start
            entry["message"] = error.message[:FAILURE_BYTES // 4] + "..."
            entry["hint"] = (error.hint or "")[:FAILURE_BYTES // 8] or None
            text = json.dumps(entry)
        self._keep_failure(text)

    def _keep_failure(self, text: str) -> None:
        """Write ``text`` over the failure file, in place when it exists (its blocks are
        allocated already), else as a new file of ``FAILURE_BYTES``. Best effort."""
        data = text.encode().ljust(FAILURE_BYTES)
        path = self.dir / FAILURE_NAME
        try:
            if path.is_file() and not path.is_symlink() and path.stat().st_size >= len(data):
                with path.open("r+b") as fh:
                    fh.write(data)
                return
            tmp = self.dir / (FAILURE_NAME + ".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except OSError:
            pass

    def last_failure(self) -> dict[str, Any] | None:
        """The failure ``record_failure`` kept, if it still holds."""
        try:
            entry = json.loads((self.dir / FAILURE_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return entry if isinstance(entry, dict) and entry.get("message") else None

    def clear_failure(self, *, damage: bool = False) -> None:
        """Forget the kept failure after a success; damage only goes with a repair (a refresh
        that touched no damaged part says nothing about it)."""
        kept = self.last_failure()
        if kept is not None and (damage or kept.get("error") != IndexDamaged.code):
            self._keep_failure("{}")
        elif not (self.dir / FAILURE_NAME).is_file():
            self._keep_failure("{}")  # the room a failure on a full disk will need

    def size_bytes(self) -> int:
        return dir_bytes(self.dir)

    def remove(self) -> int:
        """Delete this index (under its lock, so never under a writer); the bytes freed.
        IndexBusy while another process writes it."""
        return remove_dir(self.dir)

    def check(self) -> None:
        """Check the whole index (database, full-text table, every vector block); IndexDamaged
        with its repair when any part is damaged, IndexError_ when it cannot be read."""
        check_dir(self.dir)

    def _create(self) -> None:
        if not self.exists():
            db.open_writer(self.dir).close()  # the schema; meta is filled in by the writer

    def snapshot(self) -> Snapshot:
        """The latest committed snapshot; close it (or use ``with``) to release the read view."""
        for attempt in range(3):
            lease, conn = _readers.take(self.dir)
            try:
                return self._read_snapshot(conn, lease)
            except FileNotFoundError as exc:  # a compaction replaced the files meanwhile
                _readers.give_back(lease, conn)
                if attempt == 2:
                    if exc.args and isinstance(exc.args[0], IndexDamaged):
                        raise exc.args[0] from None  # the same every time: not a compaction
                    raise IndexError_(f"The vector files in {self.dir} keep changing.",
                                      hint=f"Try again. {db.REBUILD_HINT}") from None
            except BaseException:
                conn.close()
                raise
        raise AssertionError("unreachable")

    def _read_snapshot(self, conn: sqlite3.Connection, lease: _Lease) -> Snapshot:
        try:
            conn.execute("BEGIN")
            meta = dict(conn.execute(  # the first read pins the WAL snapshot
                "SELECT key, value FROM meta WHERE key IN ('vector_rows', 'vector_epoch', "
                "'index_token')").fetchall())
            rows, epoch = int(meta.get("vector_rows") or 0), int(meta.get("vector_epoch") or 0)
            snap = conn.execute(
                "SELECT generation, git_head, git_branch, status, files, chunks, vectors, "
                "created_at, timings, words_only FROM snapshots ORDER BY generation DESC LIMIT 1"
            ).fetchone()
            dims = int(self.descriptor["dims"])
            view = _mapped.rows(self.dir, dims, rows, epoch, conn)
        except sqlite3.Error as exc:
            raise db.failure(self.dir, exc, "read") from exc
        if snap is None:
            snap = (0, None, None, "partial", 0, 0, 0, None, "{}", 0)
        return Snapshot(_conn=conn, generation=snap[0], revision=snap[1], branch=snap[2],
                        status=snap[3], files=snap[4], chunks=snap[5], vectors=snap[6],
                        token=str(meta.get("index_token") or ids.LEGACY_TOKEN),
                        vector_rows=rows, vector_epoch=epoch, bits=view.bits, int8=view.int8,
                        scales=view.scales, center=_mapped.center(self.dir, dims),
                        descriptor=self.descriptor, directory=self.dir, created_at=snap[7],
                        timings=_timings(snap[8]), words_only=snap[9], _lease=lease)

    @contextmanager
    def writer(self, *, wait: bool = False,
               repaired: Callable[[Repair], None] | None = None) -> Iterator[IndexWriter]:
        """Exclusive write access under the OS lock; IndexBusy if another process holds it.
        With ``repaired``, the whole index is checked first and, if damaged, rebuilt with its
        intact vectors (``store.repair``); ``repaired`` is told what was found."""
        from kenning.store.repair import repair_if_damaged
        from kenning.store.writer import IndexWriter

        self._create()  # removed meanwhile (remove-index)?
        lock = FileLock(self.dir / LOCK_NAME, timeout=-1 if wait else 0)
        try:
            lock.acquire()
        except Timeout:
            raise IndexBusy(f"Indexing of {self.root} is in progress in another process.",
                            hint="Pass --wait to wait for it.") from None
        except OSError as exc:  # the lock file cannot be made: a read-only home, a folder
            raise _lock_error(self.dir / LOCK_NAME, exc) from None
        try:
            if repaired is not None:
                done = repair_if_damaged(self)
                if done is not None:
                    _readers.drop(self.dir)
                    repaired(done)
            with IndexWriter(self) as writer:
                yield writer
        except sqlite3.Error as exc:  # the writer wraps what it expects; this is the rest
            raise db.failure(self.dir, exc, "update") from exc
        finally:
            lock.release()


def _timings(stored: object) -> dict[str, float]:
    """A snapshot's stage timings; ``{}`` for a value damage made unreadable (they only
    inform)."""
    try:
        timings = json.loads(stored) if isinstance(stored, (str, bytes)) else None
    except ValueError:
        return {}
    if not isinstance(timings, dict):
        return {}
    return {str(k): float(v) for k, v in timings.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _lock_error(lock: Path, exc: OSError) -> IndexError_:
    """The error for an index lock that cannot be taken: a folder in its place, or a home that
    cannot be written."""
    if lock.is_dir() and not lock.is_symlink():
        return IndexError_(f"The index lock {lock} is a folder, not a file.",
                           hint=f"Remove that folder (`rmdir {lock}`) and try again.")
    return project.home_error(exc)


def dir_bytes(directory: Path) -> int:
    """The bytes of the files under ``directory`` (0 when it does not exist)."""
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def index_dirs(project_id: str | None = None) -> list[Path]:
    """The index folders of ``project_id`` (one per embedding descriptor), or of every project."""
    indices = project.kenning_home() / "indices"
    if not indices.is_dir():
        return []
    return sorted(p for p in indices.glob(f"*/{project_id or '*'}") if p.is_dir())


def remove_dir(directory: Path) -> int:
    """Delete the index in ``directory`` under its lock, and its descriptor folder when that is
    left empty; the bytes freed. IndexBusy while another process writes it."""
    lock = FileLock(directory / LOCK_NAME, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise IndexBusy(f"The index in {directory} is being written by another process.",
                        hint="Wait for the indexing to finish, then remove it.") from None
    except OSError as exc:  # the folder cannot be written: a read-only home, a folder
        raise _lock_error(directory / LOCK_NAME, exc) from None
    try:
        size = dir_bytes(directory)
        shutil.rmtree(directory)
    finally:
        lock.release()
    _readers.drop(directory)  # its kept connections and maps must go too
    parent = directory.parent
    if parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
    return size


def check_dir(directory: Path) -> None:
    """``Index.check`` for the index in ``directory``."""
    try:
        problems = integrity.full_check(directory)
    except sqlite3.OperationalError as exc:  # busy, or a folder that cannot be written
        raise db.failure(directory, exc, "check") from exc
    if problems:
        raise IndexDamaged(f"The index in {directory} is damaged: {'; '.join(problems)}.",
                           hint=db.REPAIR_HINT)


def project_id_for(root: Path, settings: Settings) -> str:
    """The explicit id of a configured ``[[projects]]`` entry for ``root``, else the derived one."""
    for entry in settings.projects:
        if (isinstance(entry, Mapping) and entry.get("id") and entry.get("root")
                and Path(str(entry["root"])).expanduser().resolve() == root):
            return str(entry["id"])
    return project.project_id(root)


def _identity(path: Path) -> tuple[int, int] | None:
    """Which file ``path`` names now (None: none). A file kept open (a pooled connection, a
    mapping) cannot have its inode reused, so a removed and rebuilt index is another identity."""
    try:
        stat = os.stat(path)
    except OSError:  # gone, or unreadable: opening it says which
        return None
    return stat.st_dev, stat.st_ino


@dataclass(frozen=True)
class _Lease:
    directory: Path
    identity: tuple[int, int] | None  # of the database file the connection opened; None: not
    # known for sure, so the connection is closed after use


class _Readers:
    """Read connections kept between snapshots (the MCP server's case): each is set up once, and
    its prepared statements (FTS5 queries above all) serve every later search. A connection is
    lent to one snapshot at a time and comes back only once its read transaction has ended
    cleanly; one whose database file was replaced (the index removed and rebuilt) is closed.
    Only the INDEXES most recently read keep connections and maps: a long-running process that
    meets many projects holds open files for a few."""

    KEEP = 2  # idle connections kept per index
    INDEXES = 8

    def __init__(self) -> None:
        # index folder -> idle connections, least recently read first
        self._idle: OrderedDict[Path, list[tuple[sqlite3.Connection, tuple[int, int]]]] = \
            OrderedDict()
        self._lock = threading.Lock()

    def take(self, directory: Path) -> tuple[_Lease, sqlite3.Connection]:
        """An idle connection to the index in ``directory``, or a new one."""
        path = directory / db.DB_NAME
        identity = _identity(path)
        with self._lock:
            idle = self._idle.pop(directory, [])
            same = [entry for entry in idle if entry[1] == identity]
            conn = same.pop()[0] if same else None
            self._idle[directory] = same  # the most recently read
            evicted = []
            while len(self._idle) > self.INDEXES:
                evicted.append(self._idle.popitem(last=False))
        for old_dir, old_idle in evicted:
            self._close(old_dir, [old for old, _ in old_idle])
        stale = [old for old, seen in idle if seen != identity]
        if stale or identity is None:  # the index was removed (and maybe rebuilt) since
            self._close(directory, stale)
        if conn is None:
            conn = db.open_reader(directory)
            if _identity(path) != identity:  # replaced while opening: use it once, never keep it
                identity = None
        return _Lease(directory, identity), conn

    def give_back(self, lease: _Lease, conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            conn.close()
            return
        if lease.identity is None:
            conn.close()
            return
        with self._lock:
            idle = self._idle.get(lease.directory)  # None: evicted or dropped meanwhile
            if idle is not None and len(idle) < self.KEEP:
                idle.append((conn, lease.identity))
                return
        conn.close()

    def drop(self, directory: Path) -> None:
        """Close the idle connections to the index in ``directory`` and forget its maps."""
        with self._lock:
            idle = self._idle.pop(directory, [])
        self._close(directory, [conn for conn, _ in idle])

    def drop_all(self) -> None:
        """Close every idle connection and forget every map (connections lent now are closed
        when they come back)."""
        with self._lock:
            everything, self._idle = self._idle, OrderedDict()
        for directory, idle in everything.items():
            self._close(directory, [conn for conn, _ in idle])

    @staticmethod
    def _close(directory: Path, conns: list[sqlite3.Connection]) -> None:
        for conn in conns:
            conn.close()
        _mapped.forget(directory)  # unlinked files must not stay mapped


class _Mapped:
    """Memory maps of the vector files kept between snapshots: mapping them anew for every
    search cost more than the query itself. A mapping is reused only for the same committed row
    count of the same files (their identities), so it never shows rows another snapshot has
    not committed, and a compaction or rebuild (new files) maps afresh."""

    def __init__(self) -> None:
        self._rows: dict[Path, tuple[object, vectors.VectorRows]] = {}
        self._center: dict[Path, tuple[object, np.ndarray | None]] = {}
        self._lock = threading.Lock()

    def rows(self, directory: Path, dims: int, rows: int, epoch: int,
             conn: sqlite3.Connection) -> vectors.VectorRows:
        """The committed rows; rows mapped afresh have their last block checked first (``conn``
        reads the snapshot that commits them). FileNotFoundError: the files changed meanwhile
        (its argument is the IndexDamaged error when they are too short or do not match)."""
        key = (dims, rows, epoch, self._files(directory, epoch) if rows else ())
        with self._lock:
            kept = self._rows.get(directory)
        if kept is not None and kept[0] == key:
            return kept[1]
        short = vectors.size_problem(directory, dims, rows, epoch)
        if short:  # replaced while reading (a compaction), or cut short: the caller reads again
            raise FileNotFoundError(db.damaged(directory, short))
        try:
            view = vectors.read_rows(directory, dims, rows, epoch)
        except (ValueError, OSError) as exc:  # replaced or cut between the check and the map
            raise FileNotFoundError(exc) from exc
        if rows and self._files(directory, epoch) != key[3]:
            raise FileNotFoundError(directory)  # replaced while mapping: the caller reads again
        problem = integrity.last_block_problem(conn, view)
        if problem:
            raise FileNotFoundError(db.damaged(directory, problem))
        # plain arrays over the maps: indexing a np.memmap costs more than the rows it reads
        plain = vectors.VectorRows(np.asarray(view.bits), np.asarray(view.int8),
                                   np.asarray(view.scales))
        with self._lock:
            self._rows[directory] = (key, plain)
        return plain

    @staticmethod
    def _files(directory: Path, epoch: int) -> tuple[tuple[int, ...] | None, ...]:
        """Which files the epoch's names hold now, with their sizes and times: a file cut
        short or written in place is mapped and checked again."""
        stamps: list[tuple[int, ...] | None] = []
        for name in vectors.names(epoch):
            try:
                stat = os.stat(directory / name)
            except OSError:
                stamps.append(None)
                continue
            stamps.append((stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns))
        return tuple(stamps)

    def forget(self, directory: Path) -> None:
        with self._lock:
            self._rows.pop(directory, None)
            self._center.pop(directory, None)

    def center(self, directory: Path, dims: int) -> np.ndarray | None:
        path = directory / vectors.CENTER
        try:
            stat = os.stat(path)
        except OSError:
            return None
        key = (dims, stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
        with self._lock:
            kept = self._center.get(directory)
        if kept is not None and kept[0] == key:
            return kept[1]
        center = vectors.read_center(directory, dims)
        if center is not None:
            center.flags.writeable = False  # shared by every snapshot
        with self._lock:
            self._center[directory] = (key, center)
        return center


_readers = _Readers()
_mapped = _Mapped()
_CLOSED = sqlite3.connect(":memory:", check_same_thread=False)  # what a closed snapshot holds
_CLOSED.close()
