"""Refresh: bring a project's index up to date with its files, doing only the work that changed.

1. Walk and stat pass in one (``sources.changes``, against the stat data stored beside the files
   table): only new files and files whose size or mtime differ are read and hashed, so a
   refresh of an unchanged tree builds no per-file object at all.
2. Clusters (one per directory) get a digest over their files' digests. Only the clusters that
   hold new, changed or removed files are loaded and re-digested; ``kernels.diff`` of their
   manifests narrows the file diff to the directories that changed, and the stored stat data
   is rewritten for those clusters alone, so an edit costs work in proportion to its folders.
3. Changed files are re-chunked; each chunk is keyed by a hash of its text, and only hashes
   without a vector are embedded, so renames, reverts, branch switches and duplicates cost no
   embedding at all. With a shared index configured, the vectors it holds for those texts are
   fetched first (``shared.vector_cache``), in a bounded wait, and only the rest is embedded.
4. Files, chunks and the lexical table commit first as a new generation (status 'partial' while
   vectors are missing), then vectors arrive in batches, each committed on its own. A killed or
   failed run leaves the last commit intact and the next run resumes where it stopped.
5. When ``index.vector_search`` asks for it, the approximate-search graph is brought up to the
   committed vectors last (``store.graph``); it is derived data, so a run that stops before
   catches up the next time.
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from kenning import kernels, project, safe_read
from kenning.config import Settings
from kenning.embedding import Embedder, borrowed, document_text
from kenning.embedding.profiles import HEADER_RESERVE_TOKENS
from kenning.errors import EmbedderError, IndexBusy, IndexMissing, KenningError, UsageError
from kenning.indexing import state as indexing_state
from kenning.indexing.sources import (
    RENAME_HINT,
    Changes,
    WalkStats,
    changes,
    unnamed_message,
    walk,
)
from kenning.records import Chunk, SourceFile
from kenning.services import usage_log
from kenning.store import Index, db
from kenning.store import graph as store_graph
from kenning.store.repair import Repair
from kenning.store.vectors import VectorRows
from kenning.store.writer import FileRow, IndexWriter, MissingVector, crash_point

Progress = Callable[[dict[str, Any]], None]

# Vectors no chunk uses are kept (switching back to a branch or reverting costs nothing) until
# there are at least this many and at least as many as live ones; then they are reclaimed.
COMPACT_MIN_DEAD = 10_000
# Vectors taken from an earlier index are stored in blocks of this many rows, each committed.
REUSE_BLOCK = 4096
# Below this many missing vectors, embedding them costs less than asking the shared index (for
# milvus-lite, starting its engine): an edit followed by a search stays local.
SHARED_FETCH_MIN = 32


@dataclass
class RefreshResult:
    """What one refresh did; ``nothing_changed`` when it found no work at all."""

    root: str
    project_id: str
    index_dir: str
    busy: bool = False
    generation: int = 0
    status: str = "complete"
    revision: str | None = None
    branch: str | None = None
    files: int = 0
    files_added: int = 0
    files_changed: int = 0
    files_removed: int = 0
    chunks: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    vectors_embedded: int = 0
    vectors_fetched: int = 0  # from the shared index, by content, instead of embedded
    vectors_reused: int = 0  # from an earlier index of the project (another chunker version)
    vectors_missing: int = 0
    vectors_dropped: int = 0  # no longer used by any chunk, reclaimed by a compaction
    graph_rows_added: int = 0  # rows added to the approximate-search graph (all, on a rebuild)
    repaired: list[str] = field(default_factory=list)  # damage found and rebuilt (``full``)
    vectors_kept: int = 0  # intact vectors carried over by that rebuild
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def content_changed(self) -> bool:
        return bool(self.files_added or self.files_changed or self.files_removed)

    @property
    def nothing_changed(self) -> bool:
        return not self.busy and not self.content_changed and not (
            self.vectors_embedded or self.vectors_fetched or self.vectors_reused)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "nothing_changed": self.nothing_changed}


def refresh(root: Path, settings: Settings, *, embedder: Embedder | None = None,
            full: bool = False, wait: bool = False, embed: bool = True,
            embed_limit: int | None = None, graph: bool = True,
            progress: Progress | None = None, index: Index | None = None,
            from_shared: bool | None = None, reread: Collection[str] = ()) -> RefreshResult:
    """Update the index of the project at ``root``; ``busy=True`` if another process holds it.

    ``full`` re-hashes and re-chunks every file (vectors are still reused by content hash),
    after checking the whole index: a damaged one is rebuilt with its intact vectors;
    ``embed=False`` commits files and chunks only; with ``embed_limit`` the missing vectors are
    computed only when there are no more than that many (``vectors_missing`` says how many were
    left). ``index``: the index of ``root``, already open. ``graph=False`` leaves the
    approximate-search graph as it is (search keeps to the exact scan until a refresh with the
    graph catches up): for callers that must answer fast, as syncing rewrites the graph file
    and a rebuild after a compaction takes minutes on millions of vectors. ``from_shared``:
    fetch the vectors the shared index has for the chunks to embed (None: when ``shared.uri``
    is set, ``shared.vectors`` is on and at least ``SHARED_FETCH_MIN`` are missing; True:
    always, and a missing ``shared.uri`` is a ConfigError; False: never). ``reread``: files
    to read again although their size and mtime are the indexed ones (a search saw their
    bytes differ from the indexed digest).
    """
    started = time.perf_counter()
    root = _existing_dir(root)
    if from_shared:
        from kenning.shared.engine import configured_uri

        configured_uri(settings)  # said before any work
    with ExitStack() as stack:
        embedder = stack.enter_context(borrowed(settings, embedder))
        try:
            if index is None:
                index = Index.open(root, settings, embedder=embedder)
            project.check_root(root, force=settings["index.force_root"], first_index=False)
        except IndexMissing:
            project.check_root(root, force=settings["index.force_root"], first_index=True)
            index = Index.open(root, settings, embedder=embedder, create=True)
        emit = progress or (lambda event: None)
        result = RefreshResult(str(root), index.project_id, str(index.dir))
        try:
            def repaired(found: Repair) -> None:
                result.repaired, result.vectors_kept = found.problems, found.vectors_kept
                emit({"type": "repaired", "problems": found.problems,
                      "vectors_kept": found.vectors_kept})

            check = repaired if full else None  # --full checks everything and repairs
            try:
                writer = stack.enter_context(index.writer(wait=False, repaired=check))
            except IndexBusy:
                if not wait:
                    result.busy = True
                    if progress:
                        progress({"type": "finished", **result.to_dict()})
                    return result
                emit({"type": "waiting", "root": str(root)})
                writer = stack.enter_context(index.writer(wait=True, repaired=check))
            tracker = indexing_state.Tracker(index.dir)  # lets `kenning status` see this run
            stack.callback(tracker.close)

            def track(event: dict[str, Any]) -> None:
                tracker(event)
                emit(event)

            _Refresh(index, writer, settings, embedder, result, track, from_shared).run(
                full=full, embed=embed, embed_limit=embed_limit, graph=graph, reread=reread)
        except KenningError as exc:  # kept for status and search: nobody may see it otherwise
            index.record_failure(exc, "index")
            raise
        index.clear_failure(damage=bool(result.repaired))
    result.timings["total"] = round(time.perf_counter() - started, 4)
    if not result.nothing_changed:
        usage_log.record("index", files=result.files, chunks=result.chunks,
                         vectors_embedded=result.vectors_embedded,
                         s=result.timings["total"])
    if progress:
        progress({"type": "finished", **result.to_dict()})
    return result


def _existing_dir(root: Path) -> Path:
    """``root`` resolved; the caller decides whether to lift it to a git root (the CLI does)."""
    path = Path(root).expanduser()
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory." if path.exists() else
                         f"{path} does not exist.")
    return path.resolve()


def _cluster(path: str) -> str:
    """A file's cluster is its directory ('' at the root)."""
    return path.rpartition("/")[0]


def _cluster_digests(digests: dict[str, bytes]) -> dict[str, bytes]:
    """One digest per directory over its sorted (path, file digest) pairs."""
    members: dict[str, list[str]] = defaultdict(list)
    for path in sorted(digests):
        members[_cluster(path)].append(f"{path}\0{digests[path].hex()}")
    names = list(members)
    return dict(zip(names, kernels.hash_many(["\n".join(members[n]) for n in names]),
                    strict=True))


def chunk_budget(embedder: Embedder, path: str) -> int:
    """Tokens a chunk of ``path`` may have. ``max_tokens`` already leaves out the document
    prefix and a fixed reserve for the ``Filepath:`` header; a longer header takes the rest."""
    header = embedder.count_tokens(document_text(path, ""))
    return max(16, int(embedder.max_tokens) - max(0, header - HEADER_RESERVE_TOKENS))


def chunk_source(embedder: Embedder, file: SourceFile, data: bytes) -> list[Chunk]:
    from kenning.chunking import chunk_file

    return chunk_file(file.path, data, file.language, max_tokens=chunk_budget(embedder, file.path),
                      count_tokens=embedder.count_tokens)


class _Refresh:
    def __init__(self, index: Index, writer: IndexWriter, settings: Settings, embedder: Embedder,
                 result: RefreshResult, emit: Progress, from_shared: bool | None = None
                 ) -> None:
        self.index, self.writer, self.settings = index, writer, settings
        self.from_shared = from_shared
        self.max_file_size = int(settings["index.max_file_size"])
        self.embedder, self.result, self.emit = embedder, result, emit
        self.texts: dict[bytes, str] = {}  # content hash -> embedding text, for this run's chunks
        self.timings = result.timings
        self.started = self.clock = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[stage] = round(self.timings.get(stage, 0.0) + now - self.clock, 4)
        self.clock = now

    def changes(self, full: bool, reread: Collection[str] = ()) -> Changes:
        """The walk compared with the stored stat data; only new and changed files (and those
        of ``reread``) are read. Stat data that damage made unreadable is rebuilt once from
        the files table."""
        for rebuild in (False, True):
            known = self.writer.file_stats(rebuild=rebuild)
            self.lap("load")
            try:
                return changes(self.index.root, max_file_size=self.max_file_size, known=known,
                               every=full, reread=reread)
            except ValueError as exc:  # the only ValueError: ``known`` cannot be read
                reason = str(exc)
        raise db.damaged(self.index.dir, f"its file records cannot be read ({reason})")

    def run(self, *, full: bool, embed: bool, embed_limit: int | None, graph: bool,
            reread: Collection[str] = ()) -> None:
        result, writer = self.result, self.writer
        found = self.changes(full, reread)
        if found.unnamed:  # skipped by every run: said, or nobody would know
            result.warnings.append(f"{unnamed_message(found.unnamed)} {RENAME_HINT}")
        self.emit({"type": "scan", "files": found.unchanged + len(found.files)})
        self.lap("walk")
        latest = writer.latest()
        head, branch = git_state(self.index.root)
        result.revision, result.branch = head, branch
        if found.files or found.removed:
            self.apply(found.files, found.removed, latest, full=full)
        elif latest is not None and (latest["git_head"], latest["git_branch"]) != (head, branch):
            writer.update_revision(head, branch)
        if embed and (result.content_changed or latest is None or latest["status"] != "complete"):
            self.embed_missing(embed_limit)
            if result.content_changed:
                result.vectors_dropped = writer.compact(min_dead=COMPACT_MIN_DEAD)
                self.lap("compact")
        if embed and graph and store_graph.wanted(self.settings, writer.vectors.rows):
            result.graph_rows_added = writer.sync_graph()
            self.lap("graph")
        final = writer.latest()
        if final is not None:
            if (result.content_changed or result.vectors_embedded or result.vectors_fetched
                    or result.vectors_reused):
                elapsed = round(time.perf_counter() - self.started, 4)
                writer.finish({**self.timings, "total": elapsed})
                final = writer.latest() or final
            result.generation, result.status = final["generation"], final["status"]
            result.files, result.chunks = final["files"], final["chunks"]
            result.vectors_missing = final["chunks"] - final["vectors"]

    def apply(self, candidates: list[SourceFile], removed: list[str],
              latest: dict[str, Any] | None, *, full: bool) -> None:
        result, writer = self.result, self.writer
        # only the clusters of new, changed and removed files can have changed: their rows are
        # loaded and their digests rebuilt, the rest of the tree is not read
        near = None if full else {_cluster(p) for p in (*(f.path for f in candidates), *removed)}
        stored = writer.files(near)
        hashed = kernels.hash_files(self.index.root, [f.path for f in candidates],
                                    self.max_file_size)
        unreadable = {f.path for f, d in zip(candidates, hashed, strict=True) if d is None}
        digests = {p: row.digest for p, row in stored.items()}
        for f, digest in zip(candidates, hashed, strict=True):
            if digest is not None:
                digests[f.path] = digest
        for path in [*removed, *unreadable]:
            digests.pop(path, None)
        self.lap("hash")

        old_clusters = writer.clusters(near)
        new_clusters = _cluster_digests(digests)
        _, changed_c, added_c, removed_c = kernels.diff(old_clusters, new_clusters)
        dirty = set(changed_c) | set(added_c) | set(removed_c)
        old_files = {p: r.digest for p, r in stored.items() if r.cluster in dirty}
        new_files = {p: d for p, d in digests.items() if _cluster(p) in dirty}
        _, changed_f, added_f, removed_f = kernels.diff(old_files, new_files)
        by_path = {f.path: f for f in candidates}
        rechunk = sorted({*changed_f, *added_f} | ({p for p in digests if p in by_path}
                                                   if full else set()))
        rechunk_set = set(rechunk)
        touched = [_file_row(f, digests[f.path]) for f in candidates
                   if f.path in digests and f.path not in rechunk_set]
        self.lap("diff")

        replaced, chunks, gone = self.chunk_files([by_path[p] for p in rechunk], digests)
        removed_all = sorted({*removed_f, *gone})
        result.files_added = sum(1 for r in replaced if r.path not in stored)
        result.files_changed = len(replaced) - result.files_added
        result.files_removed = sum(1 for p in removed_all if p in stored)
        result.chunks_added = len(chunks)
        stale = [*removed_all, *(r.path for r in replaced)]
        result.chunks_removed = writer.count_chunks(stale)
        for path in gone:  # vanished or unreadable since the walk: leave it out of the clusters
            digests.pop(path, None)
        if gone:
            new_clusters = _cluster_digests(digests)
        content = result.content_changed
        generation = (latest["generation"] if latest else 0) + 1
        snapshot = {"generation": generation, "git_head": result.revision,
                    "git_branch": result.branch, "timings": self.timings} if content else None
        writer.commit_files(removed=removed_all, replaced=replaced, chunks=chunks,
                            touched=touched, clusters=new_clusters,
                            removed_clusters=[c for c in old_clusters if c not in new_clusters],
                            snapshot=snapshot)
        self.lap("commit")
        if content:
            self.emit({"type": "committed", "generation": generation, "files": len(replaced),
                       "removed": len(removed_all), "chunks": len(chunks)})  # searchable now
            crash_point("chunks-committed")

    def chunk_files(self, files: Sequence[SourceFile], digests: dict[str, bytes]
                    ) -> tuple[list[FileRow], list[tuple[Chunk, bytes]], list[str]]:
        """New chunks of the files that changed; also the paths that vanished meanwhile."""
        replaced: list[FileRow] = []
        chunks: list[tuple[Chunk, bytes]] = []
        gone: list[str] = []
        for done, file in enumerate(files, 1):
            try:
                data, _ = safe_read.read(self.index.root, file.path, self.max_file_size)
            except safe_read.Refused:
                gone.append(file.path)
                continue
            pieces = chunk_source(self.embedder, file, data)
            hashes = kernels.hash_many([c.text for c in pieces])
            for piece, content_hash in zip(pieces, hashes, strict=True):
                chunks.append((piece, content_hash))
                self.texts.setdefault(content_hash, document_text(piece.path, piece.text))
            replaced.append(_file_row(file, digests[file.path]))
            if done % 50 == 0 or done == len(files):
                self.emit({"type": "chunking", "done": done, "total": len(files),
                           "chunks": len(chunks)})
        self.lap("chunk")
        return replaced, chunks, gone

    def embed_missing(self, limit: int | None = None) -> None:
        missing = self.writer.missing_vectors()
        if not missing or (limit is not None and len(missing) > limit):
            return
        texts = self.load_texts(missing)
        todo = [m.content_hash for m in embedding_order(missing, self.writer.files())
                if m.content_hash in texts]
        self.lap("embed_prepare")
        if todo:
            todo = self.reuse_earlier(todo)
        if todo and self.asks_shared(len(todo)):
            todo = self.fetch_shared(todo, texts)
        batch = max(1, int(self.settings["embedder.batch_size"])) * max(
            1, int(self.settings["embedder.concurrency"]))
        needs_centering = bool(getattr(self.embedder, "needs_centering", False))
        self.emit({"type": "embedding", "done": 0, "total": len(todo)})
        for start in range(0, len(todo), batch):
            hashes = todo[start:start + batch]
            try:
                vectors = self.embedder.embed_documents([texts[h] for h in hashes])
            except EmbedderError as exc:
                self.lap("embed")
                raise type(exc)(exc.message, hint=" ".join(filter(None, [
                    exc.hint, f"Files and chunks are indexed (text search works) and {start} of "
                    f"{len(todo)} vectors are stored; run `kenning index` again to resume."]))
                ) from exc
            self.lap("embed")
            self.writer.add_vectors(hashes, vectors, needs_centering)
            self.result.vectors_embedded += len(hashes)
            self.lap("store_vectors")
            self.emit({"type": "embedding", "done": start + len(hashes), "total": len(todo)})

    def reuse_earlier(self, todo: list[bytes]) -> list[bytes]:
        """Store the vectors that an earlier index of this project (same model, older chunker
        or schema) holds for the chunk hashes of ``todo``, row for row as it stores them;
        returns the hashes left to embed. An earlier index that cannot be read gives none."""
        if getattr(self.embedder, "needs_centering", False):
            return todo  # its rows are centred on that index's own mean
        stored: set[bytes] = set()
        for earlier in self.index.earlier():
            try:  # read all it lends first: a failure to write here is no failure of its own
                with earlier.snapshot() as snap:
                    found = snap.vectors_of_hashes([h for h in todo if h not in stored])
                    hashes = list(found)
                    ids = np.asarray([found[h] for h in hashes], dtype=np.int64)
                    lent = VectorRows(snap.bits[ids], snap.int8[ids], snap.scales[ids])
            except (KenningError, sqlite3.Error, OSError, IndexError):
                continue  # unreadable or damaged: its vectors are embedded instead
            for start in range(0, len(hashes), REUSE_BLOCK):
                part = slice(start, start + REUSE_BLOCK)
                self.writer.add_rows(hashes[part], VectorRows(
                    lent.bits[part], lent.int8[part], lent.scales[part]))
                stored.update(hashes[part])
                self.result.vectors_reused += len(hashes[part])
        self.lap("reuse")
        return [h for h in todo if h not in stored]

    def asks_shared(self, missing: int) -> bool:
        if self.from_shared is not None:
            return self.from_shared
        return bool(self.settings["shared.uri"] and self.settings["shared.vectors"]
                    and missing >= SHARED_FETCH_MIN)

    def warn(self, message: str) -> None:
        self.result.warnings.append(message)
        self.emit({"type": "warning", "message": message})

    def fetch_shared(self, todo: list[bytes], texts: dict[bytes, str]) -> list[bytes]:
        """Store the vectors the shared index holds for the texts of ``todo``; returns the
        hashes left to embed. A failing or slow engine costs one warning and at most
        ``shared.timeout`` seconds per answer."""
        from kenning.shared import vector_cache

        if getattr(self.embedder, "needs_centering", False):
            if self.from_shared:  # asked for: say why nothing was fetched
                self.warn(f"The vectors of {self.index.descriptor['model']} are centred per "
                          "index, so none are taken from the shared index; all are embedded "
                          "here.")
            return todo
        self.emit({"type": "fetching", "total": len(todo)})
        found, warning = vector_cache.fetch(self.settings, self.index.descriptor,
                                            [texts[h] for h in todo])
        if warning:
            self.warn(warning)
        hits = sorted(found)
        dims = int(self.index.descriptor["dims"])
        for start in range(0, len(hits), vector_cache.GET_IDS):
            part = hits[start:start + vector_cache.GET_IDS]
            self.writer.add_rows([todo[i] for i in part],
                                 vector_cache.rows_of([found[i] for i in part], dims))
        self.result.vectors_fetched = len(hits)
        self.emit({"type": "fetched", "vectors": len(hits), "total": len(todo)})
        self.lap("fetch")
        return [h for i, h in enumerate(todo) if i not in found]

    def load_texts(self, missing: Iterable[MissingVector]) -> dict[bytes, str]:
        """Embedding texts for missing hashes: this run's chunks, else re-read from the files
        (a run that resumes after a crash), skipping chunks whose file has changed since."""
        texts: dict[bytes, str] = {}
        wanted: dict[str, list[MissingVector]] = defaultdict(list)
        for m in missing:
            if m.content_hash in self.texts:
                texts[m.content_hash] = self.texts[m.content_hash]
            else:
                wanted[m.path].append(m)
        for path, entries in wanted.items():
            try:
                data, _ = safe_read.read(self.index.root, path, self.max_file_size)
            except safe_read.Refused:
                continue
            pieces = [data[m.start_byte:m.end_byte].decode("utf-8", "replace") for m in entries]
            for m, text, digest in zip(entries, pieces, kernels.hash_many(pieces), strict=True):
                if digest == m.content_hash:
                    texts[m.content_hash] = document_text(path, text)
        return texts


def embedding_order(missing: Sequence[MissingVector], files: dict[str, FileRow]
                    ) -> list[MissingVector]:
    """What searches need first: implementation code before tests, examples, docs and generated
    text (in the order ranking demotes them), and within each, recently changed files first, so
    a search during a first index finds vectors where the answers usually are (about twice as
    soon as in path order: benchmarks/README.md)."""
    from kenning.retrieval.classes import categories
    from kenning.retrieval.ranking import PENALTY

    def key(m: MissingVector) -> tuple[float, int, str, int]:
        row = files.get(m.path)
        weight = 1.0
        for category in categories(m.path, row.language if row else None):
            weight *= PENALTY.get(category, 1.0)
        return -weight, -(row.mtime_ns if row else 0), m.path, m.start_byte

    return sorted(missing, key=key)


def _file_row(file: SourceFile, digest: bytes) -> FileRow:
    return FileRow(file.path, file.size, file.mtime_ns, digest, _cluster(file.path), file.language)


def git_state(root: Path) -> tuple[str | None, str | None]:
    """(HEAD commit, branch) read from the git directory itself; (None, None) outside git."""
    dirs = project.git_dirs(root)
    if dirs is None:
        return None, None
    own, common = dirs
    try:
        head = (own / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None, None
    if not head.startswith("ref:"):
        return head or None, None  # detached HEAD
    ref = head.removeprefix("ref:").strip()
    branch = ref.removeprefix("refs/heads/")
    for base in (own, common):
        try:
            return (base / ref).read_text(encoding="utf-8").strip() or None, branch
        except OSError:
            pass
    try:
        for line in (common / "packed-refs").read_text(encoding="utf-8").splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                return sha, branch
    except OSError:
        pass
    return None, branch  # a branch with no commits yet


def dry_run(root: Path, settings: Settings, *, embedder: Embedder | None = None,
            progress: Progress | None = None, top: int = 10) -> dict[str, Any]:
    """What an index would hold, without embedding or writing anything: files and chunks per
    language, and the largest files and folders (to fix ignore rules before spending time)."""
    started = time.perf_counter()
    root = _existing_dir(root)
    project.check_root(root, force=settings["index.force_root"], first_index=True)
    if embedder is None:
        with borrowed(settings) as made:
            return dry_run(root, settings, embedder=made, progress=progress, top=top)
    emit = progress or (lambda event: None)
    skipped = WalkStats(paths={})  # the Python walker names what it skips; Rust only counts
    limit = int(settings["index.max_file_size"])
    files = list(walk(root, max_file_size=limit, stats=skipped, backend="python"))
    emit({"type": "scan", "files": len(files)})
    languages: dict[str, Counter[str]] = defaultdict(Counter)
    folders: Counter[str] = Counter()
    for done, file in enumerate(files, 1):
        try:
            data, _ = safe_read.read(root, file.path, limit)
        except safe_read.Refused as refused:
            skipped.skip(refused.reason, file.path)
            continue
        stats = languages[file.language or "text"]
        stats.update(files=1, bytes=len(data), chunks=len(chunk_source(embedder, file, data)))
        for parent in PurePosixPath(file.path).parents:
            if parent.as_posix() != ".":
                folders[parent.as_posix() + "/"] += len(data)
        if done % 50 == 0 or done == len(files):
            emit({"type": "chunking", "done": done, "total": len(files),
                  "chunks": sum(s["chunks"] for s in languages.values())})
    largest = sorted(files, key=lambda f: (-f.size, f.path))[:top]
    return {
        "type": "dry_run", "root": str(root),
        "files": sum(s["files"] for s in languages.values()),
        "chunks": sum(s["chunks"] for s in languages.values()),
        "bytes": sum(s["bytes"] for s in languages.values()),
        "languages": {name: dict(stats) for name, stats in
                      sorted(languages.items(), key=lambda kv: -kv[1]["chunks"])},
        "largest_files": [{"path": f.path, "bytes": f.size} for f in largest],
        "largest_folders": [{"path": p, "bytes": b} for p, b in folders.most_common(top)],
        "skipped_files": dict(skipped.skipped), "skipped_folders": dict(skipped.skipped_dirs),
        "skipped_paths": {reason: sorted(paths) for reason, paths in
                          sorted((skipped.paths or {}).items())},
        "seconds": round(time.perf_counter() - started, 3),
    }


__all__ = ["RefreshResult", "chunk_budget", "dry_run", "git_state", "refresh"]
