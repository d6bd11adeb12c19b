"""SQLite connections for one index: the writer's (creates the schema) and read-only views.

WAL mode lets readers keep a consistent snapshot while the writer commits. ``synchronous=NORMAL``
is crash safe in WAL mode (a killed process never corrupts or half-applies a transaction; a
power cut can at worst roll back the last commits, which the vector files tolerate because
their committed row count lives in the database).
"""

from __future__ import annotations

import json
import os
import sqlite3
from importlib import resources
from pathlib import Path
from typing import Any

from kenning.errors import IndexDamaged, IndexError_, IndexMissing, KenningError
from kenning.project import home_error

DB_NAME = "index.db"
# Readers map the database file instead of copying pages into a private cache through read()
# calls: a search touches a few hundred scattered pages (FTS postings, index probes), and on a
# 100k-chunk index mapping took a fifth off a warm search. SQLite clamps this to its own limit
# (2 GiB in common builds) and maps only what the file holds. The file never shrinks under a
# reader (no VACUUM, auto_vacuum off), which is what makes a map safe beside the writer.
READER_MMAP_BYTES = 1 << 40
REBUILD_HINT = ("If the disk is fine, the index may be damaged: `kenning index --full` "
                "rebuilds it.")
REPAIR_HINT = "Run `kenning index --full` to rebuild it (vectors that are intact are kept)."


# The stat data of the files table (all a refresh of an unchanged tree needs), kept in meta as
# one blob per cluster (key ``file_stats:<cluster>``) of ``path\0size\0mtime_ns`` records
# joined by ``\0``, so a refresh rewrites the blobs of the clusters it wrote and no others.
# ``file_stats_complete`` says that the blobs cover the files table: any write to the files
# table, by this version or any other, drops it (and the single blob of earlier versions) through
# triggers; the writer restores it in the same transaction once the blobs are up to date.
FILE_STATS_KEY = "file_stats_complete"
FILE_STATS_SHARD = "file_stats:"
_SHARDS = ("file_stats:", "file_stats;")  # the key range of the blobs (';' follows ':')
# CAST: a size or mtime that damage turned into text reads as 0, a change the refresh re-reads
_STAT_RECORDS = ("CAST(group_concat(path || char(0) || CAST(size AS INTEGER) || char(0) || "
                 "CAST(mtime_ns AS INTEGER), char(0)) AS BLOB)")
_FILE_STATS_TRIGGERS = {
    f"files_{event.lower()}_drops_stat_shards": f"CREATE TRIGGER IF NOT EXISTS "
    f"files_{event.lower()}_drops_stat_shards AFTER {event} ON files BEGIN DELETE FROM meta "
    f"WHERE key IN ('{FILE_STATS_KEY}', 'file_stats'); END;"
    for event in ("INSERT", "UPDATE", "DELETE")}


def in_cluster(cluster: str) -> tuple[str, tuple[str, ...]]:
    """A WHERE clause (and its arguments) for the files of one cluster. They lie in one range
    of the path key ('/' + 1 is '0'), so the primary key finds them; the root's, the paths
    without a slash, take a scan."""
    if not cluster:
        return "cluster = ''", ()
    return "path > ? AND path < ? AND cluster = ?", (f"{cluster}/", f"{cluster}0", cluster)


def read_file_stats(conn: sqlite3.Connection) -> bytes | None:
    """The stat records of every file as one blob, or None when they may be out of step with
    the files table (a write elsewhere, an index from before them)."""
    if conn.execute("SELECT 1 FROM meta WHERE key = ?", (FILE_STATS_KEY,)).fetchone() is None:
        return None
    return b"\0".join(bytes(row[0]) for row in conn.execute(
        "SELECT value FROM meta WHERE key >= ? AND key < ?", _SHARDS))


def computed_file_stats(conn: sqlite3.Connection) -> bytes:
    """The blob ``read_file_stats`` returns, computed from the files table (writes nothing)."""
    blob = conn.execute(f"SELECT {_STAT_RECORDS} FROM files").fetchone()[0]
    return bytes(blob or b"")


def write_file_stats(conn: sqlite3.Connection, clusters: set[str] | None) -> None:
    """Rebuild the stat blobs of ``clusters`` (all when None) from the files table and mark the
    blobs complete; inside the caller's transaction."""
    if clusters is None:
        conn.execute("DELETE FROM meta WHERE key >= ? AND key < ?", _SHARDS)
        rows = conn.execute(f"SELECT cluster, {_STAT_RECORDS} FROM files GROUP BY cluster")
        conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)",
                         [(FILE_STATS_SHARD + cluster, blob) for cluster, blob in rows])
    for cluster in clusters or ():
        where, args = in_cluster(cluster)
        blob = conn.execute(f"SELECT {_STAT_RECORDS} FROM files WHERE {where}", args).fetchone()[0]
        if blob:
            set_meta(conn, FILE_STATS_SHARD + cluster, bytes(blob))
        else:
            conn.execute("DELETE FROM meta WHERE key = ?", (FILE_STATS_SHARD + cluster,))
    set_meta(conn, FILE_STATS_KEY, "1")


def damaged(directory: Path, what: str) -> IndexDamaged:
    return IndexDamaged(f"The index in {directory} is damaged: {what}.", hint=REPAIR_HINT)


def is_damage(exc: sqlite3.Error) -> bool:
    """Whether SQLite says its file is damaged (not busy, full or unreadable), or a text it
    holds is not the UTF-8 that every text kenning stores is."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB
    text = str(exc)
    return any(sign in text for sign in ("malformed", "not a database", "decode to UTF-8"))


def failure(directory: Path, exc: sqlite3.Error, doing: str) -> IndexError_:
    """The error for ``exc`` met while ``doing`` (e.g. "read"): damage, or another failure."""
    if is_damage(exc):
        return damaged(directory, f"SQLite cannot {doing} its database ({exc})")
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code in (8, 14):  # SQLITE_READONLY, SQLITE_CANTOPEN: the folder, not the index
        error = home_error(PermissionError(13, str(exc), str(directory)))
        return IndexError_(f"Cannot {doing} the index database in {directory} ({exc}).",
                           hint=error.hint)
    return IndexError_(f"Cannot {doing} the index database in {directory}: {exc}.",
                       hint=REBUILD_HINT)


def _schema() -> str:
    return resources.files("kenning.store").joinpath("schema.sql").read_text(encoding="utf-8")


def open_writer(directory: Path) -> sqlite3.Connection:
    """The read-write connection, schema applied; transactions are explicit (``BEGIN``)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise home_error(exc) from None
    try:
        conn = connect(directory / DB_NAME, isolation_level=None, timeout=30.0)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        present = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if "meta" not in present or "vector_blocks" not in present:  # new, or from before it
            conn.executescript(_schema())
        if not present.issuperset(_FILE_STATS_TRIGGERS):  # an index from before them
            conn.executescript("".join(_FILE_STATS_TRIGGERS.values()))
    except sqlite3.Error as exc:
        raise failure(directory, exc, "open") from exc
    return conn


def open_reader(directory: Path) -> sqlite3.Connection:
    """A read-only connection; the caller starts the read transaction that pins a snapshot."""
    path = directory / DB_NAME
    if not path.exists():
        raise IndexMissing(f"No index at {directory}.", hint="Run `kenning index` first.")
    try:
        return _reader(path, "mode=ro")
    except sqlite3.Error as exc:
        wal = directory / (DB_NAME + "-wal")
        if os.access(directory, os.W_OK) or (wal.exists() and wal.stat().st_size):
            raise failure(directory, exc, "read") from exc
        error = exc
    # A folder no one may write (a read-only home): a WAL database without its shared memory
    # file opens only as immutable; with no WAL content, the file holds every commit, and no
    # writer can change it meanwhile, for none may write there.
    try:
        return _reader(path, "mode=ro&immutable=1")
    except sqlite3.Error:
        raise failure(directory, error, "read") from error


def _reader(path: Path, query: str) -> sqlite3.Connection:
    conn = connect(f"{path.as_uri()}?{query}", uri=True, isolation_level=None, timeout=30.0,
                   check_same_thread=False)
    try:
        conn.execute("PRAGMA query_only=1")
        conn.execute(f"PRAGMA mmap_size={READER_MMAP_BYTES}")
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def connect(database: str | Path, **options: Any) -> sqlite3.Connection:
    """``sqlite3.connect``, with the file opened and its schema read at once. SQLite's message
    for a damaged schema quotes the damaged text, and where that is not UTF-8 Python raises a
    UnicodeDecodeError in place of the error: here it becomes the damage error it stands for
    (later statements meet a schema already read, whose messages quote no stored text)."""
    conn: sqlite3.Connection = sqlite3.connect(database, **options)
    try:
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1")  # opens the file (and the WAL)
    except UnicodeDecodeError as exc:
        conn.close()
        raise sqlite3.DatabaseError(f"malformed database schema ({exc.reason})") from exc
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def stored_descriptor(directory: Path) -> dict[str, Any] | None:
    """The descriptor an index folder was built for; None when it cannot be read."""
    try:
        conn = open_reader(directory)
    except KenningError:
        return None
    try:
        stored = get_meta(conn, "descriptor")
        descriptor = json.loads(stored) if stored else None
    except (sqlite3.Error, ValueError):
        return None
    finally:
        conn.close()
    return descriptor if isinstance(descriptor, dict) else None


def set_meta(conn: sqlite3.Connection, key: str, value: object) -> None:
    """Store ``value`` as text, or as a blob when it is bytes."""
    stored = value if isinstance(value, bytes) else str(value)
    conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) "
                 "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, stored))
