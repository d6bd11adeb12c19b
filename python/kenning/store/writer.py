"""The write side of an index: one transaction per metadata change, one per vector batch.

Created only by ``Index.writer()``, under the OS lock. Every method that changes the index
commits a consistent state: a reader sees either all of a change or none of it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np

from kenning import kernels
from kenning.errors import IndexError_
from kenning.records import Chunk
from kenning.store import db, graph, integrity, vectors
from kenning.store.chunk_filter import Classifier, class_condition
from kenning.store.ids import new_token
from kenning.tokens import code_tokens, path_tokens

if TYPE_CHECKING:
    from kenning.store import Index


@dataclass(frozen=True, slots=True)
class FileRow:
    path: str
    size: int
    mtime_ns: int
    digest: bytes
    cluster: str
    language: str | None
    kind: str | None = None  # what evidence says the file is (indexing.kinds)


@dataclass(frozen=True, slots=True)
class MissingVector:
    """A chunk hash with no vector yet, and where one chunk with that hash lives."""

    content_hash: bytes
    path: str
    start_byte: int
    end_byte: int


def fts_row(chunk: Chunk) -> tuple[str, str, str]:
    """(body, symbol, path) columns of the lexical table, in code-aware tokens."""
    body = code_tokens(chunk.text + "\n" + (chunk.signature or ""))
    symbol = code_tokens(chunk.symbol or "")
    return " ".join(body), " ".join(symbol), " ".join(path_tokens(chunk.path))


def declared_name(symbol: str | None) -> str | None:
    """The name a chunk declares: the last part of its symbol (the chunker joins qualifiers
    with dots), which calls name it by."""
    return symbol.rpartition(".")[2] or None if symbol else None


class IndexWriter:
    def __init__(self, index: Index) -> None:
        self.index = index
        self.dims = int(index.descriptor["dims"])
        self.conn = db.open_writer(index.dir)
        if db.get_meta(self.conn, "descriptor") is None:
            self._init_meta()
        if db.get_meta(self.conn, "index_token") is None:  # an index from before tokens
            self.conn.execute("BEGIN IMMEDIATE")
            db.set_meta(self.conn, "index_token", new_token())
            self.conn.execute("COMMIT")
        rows = int(db.get_meta(self.conn, "vector_rows") or 0)
        epoch = int(db.get_meta(self.conn, "vector_epoch") or 0)
        self.vectors = vectors.VectorWriter(index.dir, self.dims, rows, epoch)
        self.center = vectors.read_center(index.dir, self.dims)
        # a condition over ``chunks c`` and its parameters: of a class that is not embedded
        # (``embed_kinds``); none until it is called: every class is embedded
        self.not_embedded: tuple[str, list[object]] = ("0", [])
        self._check_blocks()

    def _check_blocks(self) -> None:
        """The last committed block must be intact before rows are appended after it, and one
        other drawn at random (old blocks are checked in turn, refresh by refresh); rows no
        block covers yet (an index from before checksums) get theirs now."""
        try:
            committed = self.committed_rows()
            problem = (integrity.last_block_problem(self.conn, committed)
                       or integrity.sampled_block_problem(self.conn, committed))
            if problem:
                raise db.damaged(self.index.dir, problem)
            covered = self.conn.execute(
                "SELECT coalesce(max(start + rows), 0) FROM vector_blocks").fetchone()[0]
            if covered < self.vectors.rows:
                hashes = [r[0] for r in self.conn.execute(
                    "SELECT content_hash FROM vectors WHERE vector_id >= ? ORDER BY vector_id",
                    (covered,))]
                tail = vectors.VectorRows(committed.bits[covered:], committed.int8[covered:],
                                          committed.scales[covered:])
                self.conn.execute("BEGIN IMMEDIATE")
                integrity.record(self.conn, covered, hashes, tail)
                self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc

    def committed_rows(self) -> vectors.VectorRows:
        return vectors.read_rows(self.index.dir, self.dims, self.vectors.rows, self.vectors.epoch)

    def _init_meta(self) -> None:
        index = self.index
        self.conn.execute("BEGIN IMMEDIATE")
        for key, value in {"descriptor": json.dumps(index.descriptor, sort_keys=True),
                           "project_id": index.project_id, "root": str(index.root),
                           "schema_version": index.descriptor["schema_version"],
                           "index_token": new_token(), "vector_rows": 0}.items():
            db.set_meta(self.conn, key, value)
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> IndexWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        self.close()

    # -- reading the writer's own state -------------------------------------------------------

    def files(self, clusters: Collection[str] | None = None) -> dict[str, FileRow]:
        """The file rows, all or those of ``clusters``."""
        sql = "SELECT path, size, mtime_ns, digest, cluster, language, kind FROM files"
        if clusters is None:
            return {r[0]: FileRow(*r) for r in self.conn.execute(sql)}
        rows: dict[str, FileRow] = {}
        for cluster in clusters:
            where, args = db.in_cluster(cluster)
            rows.update((r[0], FileRow(*r)) for r in self.conn.execute(f"{sql} WHERE {where}",
                                                                       args))
        return rows

    def file_stats(self, *, rebuild: bool = False) -> bytes:
        """The stat data of every file as one blob (``db.read_file_stats`` describes it): read
        in a few rows instead of one Python object per file. Rebuilt here from the files table
        if missing, or with ``rebuild``."""
        stats = None if rebuild else db.read_file_stats(self.conn)
        if stats is not None:
            return stats
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            db.write_file_stats(self.conn, None)
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc
        return db.read_file_stats(self.conn) or b""

    def clusters(self, names: Collection[str] | None = None) -> dict[str, bytes]:
        """Cluster digests, all or those of ``names``."""
        if names is None:
            return dict(self.conn.execute("SELECT cluster, digest FROM clusters").fetchall())
        found: dict[str, bytes] = {}
        wanted = list(names)
        for i in range(0, len(wanted), 500):
            part = wanted[i:i + 500]
            marks = ",".join("?" * len(part))
            found.update(self.conn.execute(
                f"SELECT cluster, digest FROM clusters WHERE cluster IN ({marks})", part))
        return found

    def latest(self) -> dict[str, Any] | None:
        row = self.conn.execute(
            "SELECT generation, git_head, git_branch, files, chunks, vectors, status, timings, "
            "words_only FROM snapshots ORDER BY generation DESC LIMIT 1").fetchone()
        if row is None:
            return None
        keys = ("generation", "git_head", "git_branch", "files", "chunks", "vectors", "status",
                "timings", "words_only")
        return dict(zip(keys, row, strict=True))

    def recalled(self, key: str) -> str | None:
        """A value ``remember`` stored."""
        return db.get_meta(self.conn, f"refresh:{key}")

    def remember(self, key: str, value: str) -> None:
        """Keep ``value`` for the next refresh (what its kinds were decided by, say)."""
        db.set_meta(self.conn, f"refresh:{key}", value)

    def embed_kinds(self, class_of: Classifier, classes: Sequence[str]) -> bool:
        """Embed only the chunks of ``classes`` from now on; True when the latest snapshot
        counted with other classes (its counts and status are brought up to these)."""
        wanted = ",".join(sorted(classes))
        # registered here, outside any statement: SQLite refuses a new function while one runs
        self.not_embedded = class_condition(self.conn, class_of, sorted(classes), among=False)
        if db.get_meta(self.conn, "embed_kinds") == wanted:
            return False
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            self._recount()
            db.set_meta(self.conn, "embed_kinds", wanted)
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc
        return True

    def missing_vectors(self, paths: Sequence[str] | None = None) -> list[MissingVector]:
        """One chunk location per distinct content hash that has no vector and is of a class
        that is embedded, in path order; with ``paths``, of the chunks of those files only."""
        words_only, params = self.not_embedded
        sql = ("SELECT c.content_hash, c.path, c.start_byte, c.end_byte FROM chunks c "
               "LEFT JOIN vectors v ON v.content_hash = c.content_hash WHERE v.vector_id IS NULL "
               f"AND NOT ({words_only})")
        if paths is None:
            rows = self.conn.execute(f"{sql} GROUP BY c.content_hash ORDER BY c.path, "
                                     "c.start_byte", params).fetchall()
        else:
            rows = []
            for i in range(0, len(paths), 500):
                part = list(paths[i:i + 500])
                rows += self.conn.execute(f"{sql} AND c.path IN ({','.join('?' * len(part))}) "
                                          "GROUP BY c.content_hash", [*params, *part]).fetchall()
            unique = {r[0]: r for r in rows}  # a hash in two parts: one location is enough
            rows = sorted(unique.values(), key=lambda r: (r[1], r[2]))
        return [MissingVector(*r) for r in rows]

    def count_missing(self, limit: int | None = None) -> int:
        """How many distinct content hashes have no vector and are of a class that is embedded;
        counting stops past ``limit``."""
        words_only, params = self.not_embedded
        query = ("SELECT 1 FROM chunks c LEFT JOIN vectors v ON v.content_hash = c.content_hash "
                 f"WHERE v.vector_id IS NULL AND NOT ({words_only}) GROUP BY c.content_hash")
        if limit is not None:
            query += f" LIMIT {int(limit) + 1}"
        return int(self.conn.execute(f"SELECT count(*) FROM ({query})", params).fetchone()[0])

    # -- changes -------------------------------------------------------------------------------

    def commit_files(self, *, removed: Sequence[str], replaced: Sequence[FileRow],
                     chunks: Sequence[tuple[Chunk, bytes]], touched: Sequence[FileRow],
                     clusters: dict[str, bytes], removed_clusters: Sequence[str],
                     snapshot: dict[str, Any] | None) -> None:
        """Apply one refresh's file changes in one transaction.

        ``removed`` and ``replaced`` files lose their chunks; ``chunks`` are the replaced files'
        new chunks; ``touched`` files changed only their stat data. ``snapshot`` (a new
        generation's row) is None when no content changed.
        """
        generation = snapshot["generation"] if snapshot else 0
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            # the stat blobs to rewrite: the written clusters' when the others are in step
            in_step = self.conn.execute("SELECT 1 FROM meta WHERE key = ?",
                                        (db.FILE_STATS_KEY,)).fetchone() is not None
            written = ({f.cluster for f in (*replaced, *touched)} | self._clusters_of(removed)
                       if in_step else None)
            stale = [*removed, *(f.path for f in replaced)]
            for i in range(0, len(stale), 500):
                part = stale[i:i + 500]
                marks = ",".join("?" * len(part))
                self.conn.execute(f"DELETE FROM chunks_fts WHERE rowid IN "
                                  f"(SELECT id FROM chunks WHERE path IN ({marks}))", part)
                for table in ("calls", "members"):
                    self.conn.execute(f"DELETE FROM {table} WHERE chunk IN "
                                      f"(SELECT id FROM chunks WHERE path IN ({marks}))", part)
                self.conn.execute(f"DELETE FROM chunks WHERE path IN ({marks})", part)
            self.conn.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in removed])
            self.conn.executemany(
                "INSERT OR REPLACE INTO files(path, size, mtime_ns, digest, cluster, language, "
                "kind) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(f.path, f.size, f.mtime_ns, f.digest, f.cluster, f.language, f.kind)
                 for f in (*replaced, *touched)])
            kinds = {f.path: f.kind for f in replaced}
            for chunk, content_hash in chunks:
                cursor = self.conn.execute(
                    "INSERT INTO chunks(generation, path, start_byte, end_byte, start_line, "
                    "end_line, language, kind, symbol, signature, content_hash, generated, name, "
                    "file_kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (generation, chunk.path, chunk.start_byte, chunk.end_byte, chunk.start_line,
                     chunk.end_line, chunk.language, chunk.kind, chunk.symbol, chunk.signature,
                     content_hash, int(chunk.generated), declared_name(chunk.symbol),
                     kinds.get(chunk.path)))
                self.conn.execute("INSERT INTO chunks_fts(rowid, body, symbol, path) "
                                  "VALUES (?, ?, ?, ?)", (cursor.lastrowid, *fts_row(chunk)))
                self.conn.executemany("INSERT INTO calls(chunk, name, line) VALUES (?, ?, ?)",
                                      [(cursor.lastrowid, *call) for call in chunk.calls])
                self.conn.executemany(
                    "INSERT INTO members(chunk, name, symbol, kind, start_line, end_line, "
                    "start_byte, end_byte) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(cursor.lastrowid, m.name, m.symbol, m.kind, m.start_line, m.end_line,
                      m.start_byte, m.end_byte) for m in chunk.members])
            self.conn.executemany("DELETE FROM clusters WHERE cluster = ?",
                                  [(c,) for c in removed_clusters])
            self.conn.executemany("INSERT OR REPLACE INTO clusters(cluster, digest) VALUES (?, ?)",
                                  list(clusters.items()))
            if snapshot is not None:
                self._insert_snapshot(snapshot)
            db.write_file_stats(self.conn, written)
            crash_point("files-written")
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc

    def _clusters_of(self, paths: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(paths), 500):
            part = list(paths[i:i + 500])
            found.update(r[0] for r in self.conn.execute(
                f"SELECT DISTINCT cluster FROM files WHERE path IN ({','.join('?' * len(part))})",
                part))
        return found

    def _failed(self, exc: sqlite3.Error) -> IndexError_:
        """Roll back what SQLite has not already; the last commit stays as it was."""
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        if db.is_damage(exc):
            return db.failure(self.index.dir, exc, "write")
        return IndexError_(f"Cannot write the index in {self.index.dir}: {exc}.",
                           hint="Check free disk space, then run `kenning index` again to "
                           "resume; the last committed snapshot is intact.")

    def _insert_snapshot(self, snapshot: dict[str, Any]) -> None:
        counts = self.counts()
        self.conn.execute(
            "INSERT INTO snapshots(generation, created_at, git_head, git_branch, files, chunks, "
            "vectors, words_only, status, timings) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (snapshot["generation"], time.time(), snapshot.get("git_head"),
             snapshot.get("git_branch"), counts["files"], counts["chunks"], counts["vectors"],
             counts["words_only"], _status(counts), json.dumps(snapshot.get("timings", {}))))

    def counts(self) -> dict[str, int]:
        """Files, chunks, chunks with a vector, and chunks ``words_only`` (without one, of a
        class that is not embedded)."""
        files = self.conn.execute("SELECT count(*) FROM files").fetchone()[0]
        words_only, params = self.not_embedded
        chunks, with_vector, without = self.conn.execute(
            "SELECT count(*), count(v.vector_id), "
            # the class of a chunk with a vector is not asked: CASE never calls it
            f"coalesce(sum(CASE WHEN v.vector_id IS NULL THEN {words_only} ELSE 0 END), 0) "
            "FROM chunks c "
            "LEFT JOIN vectors v ON v.content_hash = c.content_hash", params).fetchone()
        return {"files": files, "chunks": chunks, "vectors": with_vector, "words_only": without}

    def _recount(self) -> None:
        """Bring the latest snapshot's counts and status up to the index (in a transaction)."""
        counts = self.counts()
        self.conn.execute(
            "UPDATE snapshots SET files = ?, chunks = ?, vectors = ?, words_only = ?, status = ? "
            "WHERE generation = (SELECT max(generation) FROM snapshots)",
            (counts["files"], counts["chunks"], counts["vectors"], counts["words_only"],
             _status(counts)))

    def count_chunks(self, paths: Sequence[str]) -> int:
        """How many chunks the files ``paths`` have now."""
        total = 0
        for i in range(0, len(paths), 500):
            part = list(paths[i:i + 500])
            marks = ",".join("?" * len(part))
            total += self.conn.execute(
                f"SELECT count(*) FROM chunks WHERE path IN ({marks})", part).fetchone()[0]
        return total

    def update_revision(self, git_head: str | None, git_branch: str | None) -> None:
        """Record a new HEAD on the latest snapshot when no file content changed (a commit)."""
        self.conn.execute("UPDATE snapshots SET git_head = ?, git_branch = ? WHERE generation = "
                          "(SELECT max(generation) FROM snapshots)", (git_head, git_branch))

    def finish(self, timings: dict[str, float]) -> None:
        """Store the final counts, status and stage timings on the latest snapshot."""
        self._recount()
        self.conn.execute("UPDATE snapshots SET timings = ? WHERE generation = "
                          "(SELECT max(generation) FROM snapshots)", (json.dumps(timings),))

    def add_vectors(self, hashes: Sequence[bytes], embeddings: np.ndarray,
                    needs_centering: bool) -> None:
        """Append one batch of vectors and commit it: durable rows first, then the rows' count."""
        embeddings = np.ascontiguousarray(embeddings, np.float32)
        if embeddings.shape != (len(hashes), self.dims):
            raise IndexError_(f"The embedder returned vectors of shape {embeddings.shape}; "
                              f"expected ({len(hashes)}, {self.dims}).")
        if needs_centering and self.center is None:
            # Fixed from the first batch so every row's bits share one reference point.
            self.center = embeddings.mean(axis=0).astype(np.float32)
            self.vectors.write_center(self.center)
        bits = kernels.binarize(embeddings, self.center if needs_centering else None)
        int8, scales = kernels.quantize_int8(embeddings)
        self.add_rows(hashes, vectors.VectorRows(bits, int8, scales))

    def add_rows(self, hashes: Sequence[bytes], rows: vectors.VectorRows) -> None:
        """Append rows already binarized and quantized (one block) and commit them."""
        ids = self.vectors.append(rows.bits, rows.int8, rows.scales)
        crash_point("vectors-written")
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany("INSERT INTO vectors(content_hash, vector_id) VALUES (?, ?)",
                                  zip(hashes, ids, strict=True))
            integrity.record(self.conn, ids.start, hashes, rows, block_rows=len(hashes))
            db.set_meta(self.conn, "vector_rows", self.vectors.rows)
            marks = ",".join("?" * len(hashes))
            gained = self.conn.execute(
                f"SELECT count(*) FROM chunks WHERE content_hash IN ({marks})", list(hashes)
            ).fetchone()[0]
            self.conn.execute(
                "UPDATE snapshots SET vectors = vectors + ?, status = CASE WHEN vectors + ? + "
                "words_only >= chunks THEN 'complete' ELSE 'partial' END "
                "WHERE generation = (SELECT max(generation) FROM snapshots)", (gained, gained))
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self.vectors.rows = ids.start  # the appended tail is cut by the next writer
            raise self._failed(exc) from exc
        crash_point("batch-committed")

    def compact(self, *, min_dead: int) -> int:
        """Drop the vectors no chunk uses any more once they are at least ``min_dead`` and as
        many as the live ones (so switching back to a recent branch stays free); returns how
        many were dropped. Live rows keep their order and get new, dense ids."""
        live = self.conn.execute(
            "SELECT vector_id, content_hash FROM vectors v WHERE EXISTS "
            "(SELECT 1 FROM chunks c WHERE c.content_hash = v.content_hash) "
            "ORDER BY vector_id").fetchall()
        dead = self.vectors.rows - len(live)
        if dead < max(min_dead, len(live), 1):
            return 0
        problems = integrity.block_problems(self.conn, self.committed_rows())
        if problems:  # copying would give damaged rows fresh checksums
            raise db.damaged(self.index.dir, "; ".join(problems))
        epoch = self.vectors.write_epoch(np.asarray([r[0] for r in live], dtype=np.int64))
        crash_point("compaction-written")
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.execute("DELETE FROM vectors")
            self.conn.executemany("INSERT INTO vectors(content_hash, vector_id) VALUES (?, ?)",
                                  [(h, i) for i, (_, h) in enumerate(live)])
            self.conn.execute("DELETE FROM vector_blocks")
            integrity.record(self.conn, 0, [h for _, h in live],
                             vectors.read_rows(self.index.dir, self.dims, len(live), epoch))
            db.set_meta(self.conn, "vector_rows", len(live))
            db.set_meta(self.conn, "vector_epoch", epoch)
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc
        self.vectors.switch_epoch(epoch, len(live))
        return dead

    def sync_graph(self) -> int:
        """Bring the approximate-search graph up to the committed vector rows; returns the rows
        added. It is derived data: on failure search keeps to the exact scan."""
        rows = self.committed_rows()
        try:
            return graph.sync(self.index.dir, self.dims, self.vectors.epoch, rows.bits)
        except OSError as exc:
            raise IndexError_(
                f"Cannot write the approximate-search graph in {self.index.dir}: "
                f"{exc.strerror or exc}.", hint="Search uses the exact scan meanwhile; free some "
                "disk space, then run `kenning index` again.") from exc


def _status(counts: dict[str, int]) -> str:
    """'complete' when every chunk of an embedded class has a vector."""
    done = counts["vectors"] + counts["words_only"] >= counts["chunks"]
    return "complete" if done else "partial"


_CRASH_COUNTS: dict[str, int] = {}


def crash_point(stage: str) -> None:
    """Crash-safety tests only: ``KENNING_TEST_KILL_AT=<stage>[:<n>]`` kills this process the
    n-th time (default 1st) it reaches ``stage``. Stages, in order: files-written (files and
    chunks written, their transaction not committed), chunks-committed, vectors-written (rows
    fsynced, their transaction not committed), batch-committed, compaction-written; and those
    of a shared-index publish: files-marked, vectors-stored (after each batch of vectors by
    content), chunks-sent (chunks upserted, stale rows not yet deleted), stale-deleted,
    manifest-written (files and clusters, not the head)."""
    import os

    target = os.environ.get("KENNING_TEST_KILL_AT")
    if not target:
        return
    name, _, nth = target.partition(":")
    if name != stage:
        return
    _CRASH_COUNTS[stage] = _CRASH_COUNTS.get(stage, 0) + 1
    if _CRASH_COUNTS[stage] == int(nth or 1):
        from kenning import hostos

        hostos.kill_now(os.getpid())

