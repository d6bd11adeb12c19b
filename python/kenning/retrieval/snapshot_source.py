"""A local index's snapshot as a ``Source`` of the rank pipeline: its FTS5, symbol and vector
branches, its rows and files, filtered by the search's ``ChunkFilter``."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from kenning.retrieval import confidence, dense, lexical, symbols, tracebacks
from kenning.retrieval.calls import LINKS
from kenning.retrieval.calls import around as call_links_around
from kenning.retrieval.query import Query
from kenning.retrieval.ranking import Candidate, later_parts
from kenning.retrieval.snippets import SnippetReader
from kenning.retrieval.source import Phrases, Ranking
from kenning.retrieval.units import Unit, declared_words, units

if TYPE_CHECKING:
    from kenning.store import ChunkFilter, Index, Snapshot
    from kenning.store.reads import ChunkRow

# Vectors from which the scan runs on a worker thread, overlapping the lexical and symbol
# branches: the Hamming scan and the rescoring run in the Rust core without the GIL, and SQLite's
# steps release it too. Below it the hand-over costs more than the scan it hides
# (benchmarks/README.md). The other branches stay inline: their SQL shares one connection, and
# the symbol and ranking code keeps the GIL.
OVERLAP_ROWS = 200_000
_scans: ThreadPoolExecutor | None = None
_scans_lock = threading.Lock()


def candidate_of(row: ChunkRow) -> Candidate:
    """The candidate of a chunk's row, before it is scored."""
    return Candidate(row.id, row.path, row.start_line, row.end_line, row.start_byte,
                     row.end_byte, row.language, row.kind, row.symbol, 0.0,
                     generated=bool(row.generated), file_kind=row.file_kind)


def dense_ranking(snap: Snapshot, hits: list[tuple[int, float]], depth: int,
                  keep: ChunkFilter | None) -> Ranking:
    """The vector branch's ``depth`` best chunks, from the scan's ``(vector id, cosine)``
    list (a vector may be shared by several chunks, or by none that ``keep`` keeps)."""
    shortlist = hits[: depth + depth // 2]  # room for unused vectors
    owners = snap.chunks_of_vectors([v for v, _ in shortlist], keep)
    ranked: Ranking = []
    for vector_id, score in shortlist:
        for chunk_id in owners.get(vector_id, ()):
            ranked.append((chunk_id, score))
    return ranked[:depth]


def start_vector_scan(index: Index, snap: Snapshot, query_vector: np.ndarray,
                      ann: bool, keep: ChunkFilter | None) -> Future[list[tuple[int, float]]]:
    """The vector branch's ``(vector id, cosine)`` list, on a worker thread when it is large;
    ``ann`` lets the shortlist come from the index's HNSW graph."""
    global _scans
    # reads stay on this thread: the snapshot's connection is not shared
    allowed = snap.allowed_vectors(keep) if keep is not None else None
    ann_dir = index.dir if ann else None
    if snap.vector_rows < OVERLAP_ROWS:
        done: Future[list[tuple[int, float]]] = Future()
        done.set_result(dense.search(snap, query_vector, allowed=allowed, ann_dir=ann_dir))
        return done
    with _scans_lock:
        if _scans is None:
            _scans = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kenning-scan")
    return _scans.submit(dense.search, snap, query_vector, allowed=allowed, ann_dir=ann_dir)


class SnapshotSource:
    """One snapshot of a local index, searched with the query's ``vector`` (None: there is
    none) among the chunks ``keep`` keeps; ``scan``: the vector branch is searched (its scan
    starts at once, overlapping the other branches); ``ann``: its shortlist may come from the
    HNSW graph."""

    def __init__(self, index: Index, snap: Snapshot, vector: np.ndarray | None,
                 keep: ChunkFilter | None, *, max_file_size: int, scan: bool = True,
                 ann: bool = False) -> None:
        self.index, self.snap, self.vector, self.keep = index, snap, vector, keep
        self.max_file_size = max_file_size
        self.framed = False  # whether some frame of the query's traceback is in this snapshot
        self._key = (snap.token, snap.generation)
        self._scan = (start_vector_scan(index, snap, vector, ann, keep)
                      if vector is not None and scan else None)
        self._rows: dict[int, ChunkRow] = {}  # the symbol-less rows ``texts`` reads

    @property
    def has_vector(self) -> bool:
        return self.vector is not None

    def lexical(self, query: Query, limit: int) -> Ranking:
        return lexical.search(self.snap, query, limit=limit, keep=self.keep)

    def symbols(self, query: Query, limit: int) -> Ranking:
        return symbols.search(self.snap, query, limit=limit, keep=self.keep)

    def message(self, query: Query, limit: int) -> Ranking:
        return lexical.message_search(self.snap, query, limit=limit, keep=self.keep)

    def dense(self, limit: int) -> Ranking:
        if self._scan is None:
            return []
        return dense_ranking(self.snap, self._scan.result(), limit, self.keep)

    def frames(self, query: Query) -> Ranking:
        trace = query.trace
        if trace is None:
            return []
        snap = self.snap
        found = tracebacks.located(trace, snap.file_states().keys())
        ids = tracebacks.frame_chunks(found, snap.file_chunks(sorted({path for _, path in found})))
        if self.keep is not None:
            kept = snap.kept_chunks(ids, self.keep)
            ids = [cid for cid in ids if cid in kept]
        self.framed = bool(ids)
        return [(cid, float(len(ids) - rank)) for rank, cid in enumerate(ids)]

    def frame_calls(self, ids: list[int]) -> Ranking:
        return call_links_around(self.snap, ids, LINKS, self.keep)

    def cosines(self, ids: list[int]) -> dict[int, float]:
        assert self.vector is not None
        return dense.cosines(self.snap, self.vector, ids)

    def background(self) -> tuple[float, float] | None:
        assert self.vector is not None
        return confidence.background(self.snap, self.vector)

    def candidates(self, ids: list[int]) -> list[Candidate]:
        return [candidate_of(row) for row in self.snap.chunk_rows(ids)]

    def symbol_less(self, ids: list[int]) -> list[tuple[int, str, str | None]]:
        found = [row for row in self.snap.chunk_rows(ids) if row.symbol is None]
        self._rows.update((row.id, row) for row in found)
        return [(row.id, row.path, row.language) for row in found]

    def texts(self, ids: list[int]) -> dict[int, str]:
        """From the files in the work tree; each row was read once by ``symbol_less``."""
        rows = self._rows
        reader = SnippetReader(self.index.root,
                               self.snap.file_states({rows[cid].path for cid in ids}),
                               self.max_file_size)
        return {cid: reader.read(rows[cid].path, rows[cid].start_byte, rows[cid].end_byte)[0]
                for cid in ids}

    def units(self, cands: list[Candidate]) -> dict[int, Unit]:
        return units(self.snap, cands, self._key)

    def later_parts(self, cands: list[Candidate], query: Query) -> set[int]:
        return later_parts(self.snap, cands, query)

    def declared(self, paths: list[str]) -> dict[str, frozenset[str]]:
        return declared_words(self.snap, paths, self._key)

    def says(self, phrases: Phrases) -> bool:
        return self.snap.says(phrases)

    def saying(self, phrases: Phrases, ids: list[int]) -> set[int]:
        return self.snap.saying(phrases, ids)
