"""Refresh: bring a project's index up to date with its files, doing only the work that changed.

1. Walk and stat pass in one (``sources.changes``, against the stat data stored beside the files
   table): only new files and files whose size or mtime differ are read and hashed, so a
   refresh of an unchanged tree builds no per-file object at all.
2. Clusters (one per directory) get a digest over their files' digests. Only the clusters that
   hold new, changed or removed files are loaded and re-digested; ``kernels.diff`` of their
   manifests narrows the file diff to the directories that changed, and the stored stat data
   is rewritten for those clusters alone, so an edit costs work in proportion to its folders.
3. Changed files are re-chunked, on every usable core (``chunk_pool``), in priority order
   (``priority``: own code and recent changes first); each chunk is keyed by a hash of its
   text, and only hashes without a vector are embedded, so renames, reverts, branch switches
   and duplicates cost no embedding at all. With a shared index configured, the vectors it
   holds for those texts are fetched first (``store.shared_vectors``), in a bounded wait, and
   only the rest is embedded.
4. Files, chunks and the lexical table commit first, in increments of a few seconds of
   chunking, each a new generation (status 'partial' while vectors are missing) that a search
   can answer from; with ``chunk_for`` the run stops chunking after that long and leaves the
   rest (``files_pending``) to the next. Then vectors arrive in batches, each committed on its
   own. A killed or failed run leaves the last commit intact and the next run resumes where it
   stopped.
5. When ``index.vector_search`` asks for it, the approximate-search graph is brought up to the
   committed vectors last (``store.graph``); it is derived data, so a run that stops before
   catches up the next time.
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from kenning import kernels, project, safe_read, usage_log
from kenning.config import Settings
from kenning.embedding import Embedder, borrowed, document_text
from kenning.errors import EmbedderError, IndexBusy, IndexMissing, KenningError, UsageError
from kenning.indexing import cost
from kenning.indexing import state as indexing_state
from kenning.indexing.chunk_pool import Chunked, ChunkStream, chunker_for, token_budget, workers_for
from kenning.indexing.kinds import EVIDENCE, Kinds
from kenning.indexing.priority import file_priority
from kenning.indexing.sources import (
    BINARY_SNIFF_BYTES,
    RENAME_HINT,
    Changes,
    WalkStats,
    changes,
    unnamed_message,
    walk,
)
from kenning.records import Chunk, SourceFile
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
# A run commits the files chunked so far after this many seconds of chunking or this many
# chunks, whichever comes first: searches meanwhile see the index grow, memory stays bounded.
COMMIT_SECONDS = 10.0
COMMIT_CHUNKS = 20_000
# Embedding texts kept from chunking for the embedding that follows; past this many bytes the
# rest are read again from the files, block by block, so a first index of any size fits in
# memory.
TEXTS_KEPT_BYTES = 64 << 20
# Files whose chunks without a vector are embedded as one group (their texts loaded at once),
# when more than EMBED_AT_ONCE chunks lack one; fewer are taken all at once.
EMBED_FILES = 256
EMBED_AT_ONCE = 4096


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
    files_pending: int = 0  # new or changed files left to chunk (a run given ``chunk_for``)
    chunks_pending: int = 0  # about how many chunks those files hold (from the rate so far)
    chunks: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    vectors_embedded: int = 0
    vectors_fetched: int = 0  # from the shared index, by content, instead of embedded
    vectors_reused: int = 0  # from an earlier index of the project (another chunker version)
    vectors_missing: int = 0
    chunks_words_only: int = 0  # chunks of kinds not embedded (index.embed_kinds)
    # words and symbols only until a `kenning index` embeds: searches start no embedding
    embedding_held: bool = False
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
            from_shared: bool | None = None, chunk_for: float | None = None,
            chunk_at_least: float = 0.0, hold: bool = False,
            reread: Collection[str] = ()) -> RefreshResult:
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
    always, and a missing ``shared.uri`` is a ConfigError; False: never). ``chunk_for``: stop
    chunking once that many seconds have passed and the files chunked so far are committed
    (``files_pending`` says how many are left, for the next run); None: chunk them all.
    ``chunk_at_least``: with ``chunk_for``, chunk for at least that many seconds once the walk
    is done, however long it took (a tree so large that its walk spends ``chunk_for`` would
    otherwise answer from one file).
    ``hold`` (with ``embed=False``): keep the index to words and symbols until a refresh that
    embeds without ``embed_limit`` (``kenning index``): searches meanwhile start no embedding
    of their own (``embedding_held``), as the agents' hook does above its budget. ``reread``:
    files to read again although their size and mtime are the indexed ones (a search saw their
    bytes differ from the indexed digest).
    """
    started = time.perf_counter()
    root = _existing_dir(root)
    if from_shared:
        from kenning.store.shared_engine import configured_uri

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

            _Refresh(index, writer, settings, embedder, result, track, from_shared,
                     chunk_for, chunk_at_least).run(full=full, embed=embed,
                                                    embed_limit=embed_limit, graph=graph,
                                                    reread=reread)
            if hold and not embed:
                writer.remember("embed_held", "1")
            elif embed and embed_limit is None:
                writer.remember("embed_held", "")
            result.embedding_held = writer.recalled("embed_held") == "1"
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
    """Tokens a chunk of ``path`` may have (``chunk_pool.token_budget``)."""
    return token_budget(int(embedder.max_tokens), embedder.count_tokens, path)


class _Refresh:
    def __init__(self, index: Index, writer: IndexWriter, settings: Settings, embedder: Embedder,
                 result: RefreshResult, emit: Progress, from_shared: bool | None = None,
                 chunk_for: float | None = None, chunk_at_least: float = 0.0) -> None:
        self.index, self.writer, self.settings = index, writer, settings
        self.from_shared = from_shared
        self.chunk_for, self.chunk_at_least = chunk_for, chunk_at_least
        self.max_file_size = int(settings["index.max_file_size"])
        self.embedder, self.result, self.emit = embedder, result, emit
        self.texts: dict[bytes, str] = {}  # content hash -> embedding text, for this run's chunks
        self.text_paths: dict[bytes, str] = {}  # the path each of those texts is of
        self.texts_bytes = 0
        self.kinds = Kinds(str(index.root))
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
                               every=full, kinds=self.kinds, reread=reread)
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
        rekinded = self.reclassify(found)
        recounted = self.embed_kinds()  # words-only kinds are counted, embedding or not
        latest = writer.latest()
        head, branch = project.git_state(self.index.root)
        result.revision, result.branch = head, branch
        if found.files or found.removed:
            self.apply(found.files, found.removed, latest, full=full)
        elif latest is not None and (latest["git_head"], latest["git_branch"]) != (head, branch):
            writer.update_revision(head, branch)
        if rekinded:
            writer.remember("kinds", self.kinds.digest)
        if embed and (result.content_changed or latest is None or recounted
                      or latest["status"] != "complete"):
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
            result.vectors_missing = final["chunks"] - final["vectors"] - final["words_only"]
            result.chunks_words_only = final["words_only"]

    def reclassify(self, found: Changes) -> bool:
        """Decide every indexed file's kind again when what decides kinds changed (the rules
        of ``.kenningkinds``, ``.gitmodules``, a licence or manifest added or removed): the
        files whose kind changed join ``found`` to be chunked again (their vectors are kept
        by content). True when the kinds were decided again."""
        if self.writer.recalled("kinds") == self.kinds.digest and not any(
                EVIDENCE.search(p) for p in (*(f.path for f in found.files), *found.removed)):
            return False
        listed = {f.path for f in found.files} | set(found.removed)
        for path, row in self.writer.files().items():
            if path in listed:
                continue
            try:
                head, _ = safe_read.read(self.index.root, path, self.max_file_size,
                                         head=BINARY_SNIFF_BYTES)
            except safe_read.Refused:
                continue  # gone since the walk: the next refresh drops it
            kind = self.kinds.of(path, row.size, row.language, head)
            if kind != row.kind:
                found.files.append(SourceFile(path, self.index.root / path, row.size,
                                              row.mtime_ns, row.language, kind))
        found.files.sort(key=lambda f: f.path)
        self.lap("kinds")
        return True

    def embed_kinds(self) -> bool:
        """Embed the chunks of ``index.embed_kinds`` only; True when that changed since the
        latest snapshot was counted."""
        from kenning.indexing.classes import chunk_class

        return self.writer.embed_kinds(chunk_class, self.settings["index.embed_kinds"])

    def apply(self, candidates: list[SourceFile], removed: list[str],
              latest: dict[str, Any] | None, *, full: bool) -> None:
        result, writer = self.result, self.writer
        # only the clusters of new, changed and removed files can have changed: their rows are
        # loaded and their digests rebuilt, the rest of the tree is not read
        near = None if full else {_cluster(p) for p in (*(f.path for f in candidates), *removed)}
        stored = writer.files(near)
        # only an indexed file is hashed first, to tell an edit from a touch; a new one is
        # chunked whatever its digest, which comes with its chunks (``chunk_pool.Chunked``)
        known = [f for f in candidates if f.path in stored]
        new = [f.path for f in candidates if f.path not in stored]
        hashed = kernels.hash_files(self.index.root, [f.path for f in known], self.max_file_size)
        unreadable = {f.path for f, d in zip(known, hashed, strict=True) if d is None}
        digests = {p: row.digest for p, row in stored.items()}
        for f, digest in zip(known, hashed, strict=True):
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
        rekinded = {f.path for f in known if f.path in digests
                    and stored[f.path].kind != f.kind}  # chunks carry their file's kind
        rechunk = sorted({*changed_f, *added_f, *new, *rekinded} | (
            {p for p in digests if p in by_path} if full else set()))
        rechunk_set = set(rechunk)
        touched = [_file_row(f, digests[f.path]) for f in candidates
                   if f.path in digests and f.path not in rechunk_set]
        self.lap("diff")

        # what each increment commits: the files committed so far make its clusters' digests
        committed: dict[str, dict[str, bytes]] = defaultdict(dict)
        for path, row in stored.items():
            if path in digests:
                committed[row.cluster][path] = row.digest
        order = sorted((by_path[p] for p in rechunk),
                       key=lambda f: file_priority(f.path, f.language, f.mtime_ns, f.kind))
        generation = latest["generation"] if latest else 0
        first = True
        for replaced, chunks, gone in self.chunk_increments(order):
            removed_now = sorted({*removed_f, *gone} if first else gone)
            for path in removed_now:
                committed[_cluster(path)].pop(path, None)
            for row in replaced:
                committed[row.cluster][row.path] = row.digest
            names = {*new_clusters, *old_clusters} if first else set()
            names.update(_cluster(p) for p in (*gone, *(r.path for r in replaced)))
            clusters = _cluster_digests({p: d for c in names for p, d in committed[c].items()})
            added = sum(1 for r in replaced if r.path not in stored)
            dropped = sum(1 for p in removed_now if p in stored)
            result.files_added += added
            result.files_changed += len(replaced) - added
            result.files_removed += dropped
            result.chunks_added += len(chunks)
            result.chunks_removed += writer.count_chunks([*removed_now,
                                                          *(r.path for r in replaced)])
            content = bool(replaced or dropped)
            generation += content
            snapshot = {"generation": generation, "git_head": result.revision,
                        "git_branch": result.branch, "timings": self.timings} if content else None
            writer.commit_files(removed=removed_now, replaced=replaced, chunks=chunks,
                                touched=touched if first else [], clusters=clusters,
                                removed_clusters=[c for c in names if c not in clusters],
                                snapshot=snapshot)
            self.lap("commit")
            first = False
            if content:  # searchable now; the counts are of the whole run so far
                self.emit({"type": "committed", "generation": generation,
                           "files": result.files_added + result.files_changed,
                           "removed": result.files_removed, "chunks": result.chunks_added})
                crash_point("chunks-committed")

    def chunk_increments(self, files: Sequence[SourceFile]
                         ) -> Iterator[tuple[list[FileRow], list[tuple[Chunk, bytes]],
                                             list[str]]]:
        """The new chunks of ``files`` in increments to commit, each ``(file rows, chunks,
        paths that vanished since the walk)``; at least one, even with no files. With
        ``chunk_for`` the last comes once that time is up (``chunk_at_least`` from now at the
        earliest), and ``files_pending`` and
        ``chunks_pending`` say what is left."""
        chunker = chunker_for(self.embedder, self.index.root, self.max_file_size)
        deadline = None if self.chunk_for is None else max(
            self.started + self.chunk_for, time.perf_counter() + self.chunk_at_least)
        replaced: list[FileRow] = []
        chunks: list[tuple[Chunk, bytes]] = []
        gone: list[str] = []
        made = read = 0  # chunks and bytes of this run so far
        cut = time.perf_counter()
        yielded = False
        with ChunkStream(chunker, files, workers_for(files, chunker)) as stream:
            for done, item in enumerate(stream, 1):
                self.take(item, replaced, chunks, gone)
                made, read = made + len(item.chunks), read + item.size
                if done % 50 == 0 or done == len(files):
                    self.emit({"type": "chunking", "done": done, "total": len(files),
                               "chunks": made})
                now = time.perf_counter()
                late = deadline is not None and now >= deadline
                if late or len(chunks) >= COMMIT_CHUNKS or now - cut >= COMMIT_SECONDS:
                    left = files[done:]
                    if late and left:
                        self.result.files_pending = len(left)
                        self.result.chunks_pending = (
                            round(made / read * sum(f.size for f in left)) if read else 0)
                    self.lap("chunk")
                    yield replaced, chunks, gone
                    if late:
                        return
                    replaced, chunks, gone = [], [], []
                    yielded, cut = True, time.perf_counter()
        self.lap("chunk")
        if replaced or gone or not yielded:
            yield replaced, chunks, gone

    def take(self, item: Chunked, replaced: list[FileRow], chunks: list[tuple[Chunk, bytes]],
             gone: list[str]) -> None:
        """Add one file's chunks to an increment, its row with the digest of the bytes they
        were cut from; its embedding texts are kept for the embedding that follows, up to
        ``TEXTS_KEPT_BYTES``."""
        if item.refused is not None:
            gone.append(item.file.path)
            return
        for piece, content_hash in zip(item.chunks, item.hashes, strict=True):
            chunks.append((piece, content_hash))
            # a text in several files is embedded with the first path, whatever the order
            # chunked in, as the shared index and a teammate's index embed it
            kept = self.text_paths.get(content_hash)
            if kept is None and self.texts_bytes < TEXTS_KEPT_BYTES or (
                    kept is not None and piece.path < kept):
                text = self.texts[content_hash] = document_text(piece.path, piece.text)
                self.text_paths[content_hash] = piece.path
                self.texts_bytes += len(text)
        replaced.append(_file_row(item.file, item.digest))

    def embed_missing(self, limit: int | None = None) -> None:
        """Embed the chunks without a vector, the files in ``file_priority`` order and their
        chunks in ``embedding_order``, a group of files at a time: memory holds one group's
        texts, whatever the size of the index (all at once only to ask the shared index)."""
        total = self.writer.count_missing(limit)
        if not total or (limit is not None and total > limit):
            return
        files = self.writer.files()
        groups: list[list[str] | None] = [None]  # all at once (an edit's few)
        if total > EMBED_AT_ONCE:
            order = sorted(files, key=lambda p: file_priority(p, files[p].language,
                                                              files[p].mtime_ns, files[p].kind))
            groups = [order[i:i + EMBED_FILES] for i in range(0, len(order), EMBED_FILES)]
        shared: dict[bytes, str] | None = None
        if self.asks_shared(total):
            shared = self.shared_first(embedding_order(self.writer.missing_vectors(), files))
            total = self.writer.count_missing()
        self.lap("embed_prepare")
        batch = max(1, int(self.settings["embedder.batch_size"])) * max(
            1, int(self.settings["embedder.concurrency"]))
        needs_centering = bool(getattr(self.embedder, "needs_centering", False))
        done = 0
        self.emit({"type": "embedding", "done": 0, "total": total})
        for group in groups:
            missing = embedding_order(self.writer.missing_vectors(group), files)
            if not missing:
                continue
            left = set(self.reuse_earlier([m.content_hash for m in missing]))
            total -= len(missing) - len(left)
            todo = [m for m in missing if m.content_hash in left]
            texts = shared if shared is not None else self.load_texts(todo)
            hashes_of_group = [m.content_hash for m in todo if m.content_hash in texts]
            total -= len(todo) - len(hashes_of_group)  # their files changed since: not embedded
            self.lap("embed_prepare")
            for start in range(0, len(hashes_of_group), batch):
                hashes = hashes_of_group[start:start + batch]
                try:
                    vectors = self.embedder.embed_documents([texts[h] for h in hashes])
                except EmbedderError as exc:
                    self.lap("embed")
                    raise type(exc)(exc.message, hint=" ".join(filter(None, [
                        exc.hint, f"Files and chunks are indexed (text search works) and {done} "
                        f"of {total} vectors are stored; run `kenning index` again to resume."]))
                    ) from exc
                self.lap("embed")
                self.writer.add_vectors(hashes, vectors, needs_centering)
                self.result.vectors_embedded += len(hashes)
                done += len(hashes)
                self.lap("store_vectors")
                self.emit({"type": "embedding", "done": done, "total": total})
        cost.record(str(self.index.descriptor["model"]), self.result.vectors_embedded,
                    self.timings.get("embed", 0.0))

    def shared_first(self, missing: list[MissingVector]) -> dict[bytes, str]:
        """Store what the shared index holds for ``missing`` (and an earlier index first);
        returns the texts of all of them, for the embedding of the rest."""
        left = set(self.reuse_earlier([m.content_hash for m in missing]))
        missing = [m for m in missing if m.content_hash in left]
        texts = self.load_texts(missing)
        todo = [m.content_hash for m in missing if m.content_hash in texts]
        if todo:
            self.fetch_shared(todo, texts)
        return texts

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
        from kenning.store import shared_vectors

        if getattr(self.embedder, "needs_centering", False):
            if self.from_shared:  # asked for: say why nothing was fetched
                self.warn(f"The vectors of {self.index.descriptor['model']} are centred per "
                          "index, so none are taken from the shared index; all are embedded "
                          "here.")
            return todo
        self.emit({"type": "fetching", "total": len(todo)})
        found, warnings = shared_vectors.fetch(self.settings, self.index.descriptor,
                                             [texts[h] for h in todo], self.embedder)
        for warning in warnings:
            self.warn(warning)
        hits = sorted(found)
        dims = int(self.index.descriptor["dims"])
        for start in range(0, len(hits), shared_vectors.GET_IDS):
            part = hits[start:start + shared_vectors.GET_IDS]
            self.writer.add_rows([todo[i] for i in part],
                                 shared_vectors.rows_of([found[i] for i in part], dims))
        self.result.vectors_fetched = len(hits)
        self.emit({"type": "fetched", "vectors": len(hits), "total": len(todo)})
        self.lap("fetch")
        return [h for i, h in enumerate(todo) if i not in found]

    def load_texts(self, missing: Iterable[MissingVector]) -> dict[bytes, str]:
        """Embedding texts for missing hashes: this run's chunks, else re-read from the files
        (a run that resumes after a crash), skipping chunks whose file has changed since."""
        texts: dict[bytes, str] = {}
        unread: list[MissingVector] = []
        for m in missing:
            if m.content_hash in self.texts:
                texts[m.content_hash] = self.texts[m.content_hash]
            else:
                unread.append(m)
        texts.update(chunk_texts(self.index.root, unread, self.max_file_size))
        return texts


def chunk_texts(root: Path, chunks: Iterable[MissingVector],
                max_file_size: int) -> dict[bytes, str]:
    """Embedding texts of ``chunks`` read from their files, by content hash; a chunk whose file
    has changed since (its bytes no longer hash to its content hash) or cannot be read is left
    out."""
    texts: dict[bytes, str] = {}
    wanted: dict[str, list[MissingVector]] = defaultdict(list)
    for m in chunks:
        wanted[m.path].append(m)
    for path, entries in wanted.items():
        try:
            data, _ = safe_read.read(root, path, max_file_size)
        except safe_read.Refused:
            continue
        pieces = [data[m.start_byte:m.end_byte].decode("utf-8", "replace") for m in entries]
        for m, text, digest in zip(entries, pieces, kernels.hash_many(pieces), strict=True):
            if digest == m.content_hash:
                texts[m.content_hash] = document_text(path, text)
    return texts


def embedding_order(missing: Sequence[MissingVector], files: dict[str, FileRow]
                    ) -> list[MissingVector]:
    """What searches need first, in the files' ``priority.file_priority`` order (the order they
    are chunked in), so a search during a first index finds vectors where the answers usually
    are (about twice as soon as in path order: benchmarks/README.md)."""
    def key(m: MissingVector) -> tuple[tuple[float, int, str], int]:
        row = files.get(m.path)
        return (file_priority(m.path, row.language if row else None, row.mtime_ns if row else 0,
                              row.kind if row else None), m.start_byte)

    return sorted(missing, key=key)


def _file_row(file: SourceFile, digest: bytes) -> FileRow:
    return FileRow(file.path, file.size, file.mtime_ns, digest, _cluster(file.path), file.language,
                   file.kind)


def dry_run(root: Path, settings: Settings, *, embedder: Embedder | None = None,
            progress: Progress | None = None, top: int = 10) -> dict[str, Any]:
    """What an index would hold, without writing anything: files and chunks per language and
    per kind, the largest files and folders, the folders with the most chunks (each with its
    kind and the time its vectors would take at the rate a sample embedded here shows), and
    what to write to leave out the folders of data and fixtures that dominate."""
    started = time.perf_counter()
    root = _existing_dir(root)
    project.check_root(root, force=settings["index.force_root"], first_index=True)
    if embedder is None:
        with borrowed(settings) as made:
            return dry_run(root, settings, embedder=made, progress=progress, top=top)
    from kenning.indexing.classes import chunk_class

    emit = progress or (lambda event: None)
    skipped = WalkStats(paths={})  # the Python walker names what it skips; Rust only counts
    limit = int(settings["index.max_file_size"])
    files = list(walk(root, max_file_size=limit, stats=skipped, backend="python",
                      kinds=Kinds(str(root))))
    emit({"type": "scan", "files": len(files)})
    embedded = set(settings["index.embed_kinds"])
    languages: dict[str, Counter[str]] = defaultdict(Counter)
    kinds: dict[str, Counter[str]] = defaultdict(Counter)
    folders: Counter[str] = Counter()
    folder_kinds: dict[str, Counter[str]] = defaultdict(Counter)
    sample: list[str] = []  # texts of embedded kinds, to measure the rate on
    chunker = chunker_for(embedder, root, limit)
    with ChunkStream(chunker, files, workers_for(files, chunker)) as stream:
        for done, item in enumerate(stream, 1):
            if item.refused is not None:
                skipped.skip(item.refused, item.file.path)
            else:
                file, pieces = item.file, item.chunks
                kind = file.kind or chunk_class(file.path, file.language, None)
                for stats in (languages[file.language or "text"], kinds[kind]):
                    stats.update(files=1, bytes=item.size, chunks=len(pieces))
                if kind in embedded and len(sample) < _RATE_SAMPLE:
                    sample.extend(document_text(p.path, p.text) for p in pieces[:8])
                for parent in PurePosixPath(file.path).parents:
                    if parent.as_posix() != ".":
                        folders[parent.as_posix() + "/"] += item.size
                        folder_kinds[parent.as_posix() + "/"][kind] += len(pieces)
            if done % 50 == 0 or done == len(files):
                emit({"type": "chunking", "done": done, "total": len(files),
                      "chunks": sum(s["chunks"] for s in languages.values())})
    rate, measured = _measured_rate(embedder, sample[:_RATE_SAMPLE], str(embedder.model))
    chunks = sum(s["chunks"] for s in languages.values())
    to_embed = sum(s["chunks"] for k, s in kinds.items() if k in embedded)
    costly = _costly_folders(folder_kinds, top)
    largest = sorted(files, key=lambda f: (-f.size, f.path))[:top]
    return {
        "type": "dry_run", "root": str(root),
        "files": sum(s["files"] for s in languages.values()), "chunks": chunks,
        "bytes": sum(s["bytes"] for s in languages.values()),
        "languages": {name: dict(stats) for name, stats in
                      sorted(languages.items(), key=lambda kv: -kv[1]["chunks"])},
        "kinds": {name: {**stats, "embedded": name in embedded} for name, stats in
                  sorted(kinds.items(), key=lambda kv: -kv[1]["chunks"])},
        "embedding": {"chunks": to_embed, "seconds": round(cost.seconds(to_embed, rate), 1),
                      "seconds_all": round(cost.seconds(chunks, rate), 1),
                      "vectors_per_second": round(rate, 2), "measured": measured,
                      "kinds": sorted(embedded)},
        "costly_folders": [{"path": path, "kind": kind, "chunks": n,
                            "seconds": round(cost.seconds(n, rate), 1),
                            "embedded": kind in embedded} for path, kind, n in costly],
        "leave_out": _leave_out(folder_kinds, chunks, embedded, top),
        "largest_files": [{"path": f.path, "bytes": f.size} for f in largest],
        "largest_folders": [{"path": p, "bytes": b} for p, b in folders.most_common(top)],
        "skipped_files": dict(skipped.skipped), "skipped_folders": dict(skipped.skipped_dirs),
        "skipped_paths": {reason: sorted(paths) for reason, paths in
                          sorted((skipped.paths or {}).items())},
        "seconds": round(time.perf_counter() - started, 3),
    }


_RATE_SAMPLE = 96  # chunk texts a dry run embeds to measure the rate (about 2 s on 2 cores)
# A folder has a kind when this share of its chunks are of that kind.
FOLDER_KIND_SHARE = 0.9
# Folders of kinds not embedded are named for .kenningignore when together they hold this share
# of the chunks: below it, they cost little even to search.
LEAVE_OUT_SHARE = 0.25
LEAVE_OUT_MIN_SHARE = 0.01  # a folder named holds at least this share of the chunks


def _measured_rate(embedder: Embedder, texts: list[str], model: str) -> tuple[float, bool]:
    """Vectors a second, timed on ``texts`` (after one text, so that loading the model does
    not count) and kept for later estimates; the kept rate when there are too few texts or
    the embedder fails."""
    if len(texts) >= cost.MIN_MEASURED:
        try:
            embedder.embed_documents(texts[:1])
            started = time.perf_counter()
            embedder.embed_documents(texts)
            elapsed = time.perf_counter() - started
        except EmbedderError:
            return cost.rate(model)
        cost.record(model, len(texts), elapsed)
        return len(texts) / elapsed, True
    return cost.rate(model)


def _costly_folders(folder_kinds: dict[str, Counter[str]], top: int
                    ) -> list[tuple[str, str, int]]:
    """(folder, kind, chunks) of the largest folders of one kind (``FOLDER_KIND_SHARE`` of
    their chunks), none inside another listed, most chunks first."""
    whole = []
    for path, counts in folder_kinds.items():
        total = sum(counts.values())
        kind, most = counts.most_common(1)[0]
        if total and most >= FOLDER_KIND_SHARE * total:
            whole.append((path, kind, total))
    whole.sort(key=lambda row: (-row[2], row[0]))
    picked: list[tuple[str, str, int]] = []
    for row in whole:
        if not any(row[0].startswith(p[0]) for p in picked):
            picked.append(row)
    return picked[:top]


def _leave_out(folder_kinds: dict[str, Counter[str]], chunks: int, embedded: set[str],
               top: int) -> list[str]:
    """The ``.kenningignore`` lines that leave out the largest folders holding nothing of the
    kinds embedded, when they hold ``LEAVE_OUT_SHARE`` of the chunks or more (else none)."""
    least = LEAVE_OUT_MIN_SHARE * chunks
    apart = sorted(((path, n) for path, counts in folder_kinds.items()
                    if (n := sum(counts.values())) >= max(least, 1)
                    and not any(counts[kind] for kind in embedded)),
                   key=lambda row: (-row[1], row[0]))
    picked: list[tuple[str, int]] = []
    for path, n in apart:
        if len(picked) < top and not any(path.startswith(p) for p, _ in picked):
            picked.append((path, n))
    held = sum(n for _, n in picked)
    return [f"/{path}" for path, _ in picked] if chunks and held >= LEAVE_OUT_SHARE * chunks else []


__all__ = ["RefreshResult", "chunk_budget", "dry_run", "refresh"]
