"""Search over the shared index: the engine serves the three retrieval branches, kenning's own
fusion and ranking run on top, per project, as they do for local indexes.

- vector: the engine's exact Hamming top-N (``BIN_FLAT``) over the sign bits, rescored here
  with the int8 rows the search returns;
- lexical: the engine's BM25 over kenning's own code tokens (``kenning.tokens``, split on
  whitespace by the engine), so identifiers split as they do locally;
- symbol: rows whose symbol name has a queried component, graded by ``symbols.best_grade``.

Filters become one engine filter expression, applied inside each branch. Each published
project is a ``Source`` (``EngineSource``) of the rank pipeline local indexes are ranked by
(``retrieval.pipeline``): the same fusion, floor, head, signals, weak rule and evidence.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kenning import kernels, safe_read, usage_log
from kenning.errors import SharedIndexError, UsageError
from kenning.indexing.classes import CLASSES, chunk_class
from kenning.retrieval import confidence, pipeline
from kenning.retrieval.filters import Filters
from kenning.retrieval.query import Query
from kenning.retrieval.ranking import Candidate, named_candidates
from kenning.retrieval.snippets import signature_line, windowed
from kenning.retrieval.source import Phrases, Ranking
from kenning.retrieval.units import Row, Unit, name_words, units
from kenning.shared.reads import (
    META,
    Published,
    all_of,
    at_project,
    bm25,
    chunks_by_id,
    chunks_of_paths,
    declaration_parts,
    expression,
    hamming,
    one_of,
    path_test,
    published,
    quote,
    symbol_rows,
)
from kenning.store.shared_engine import CLASS_FIELD, PATHS_PER_QUERY, Engine

SHORTLIST = 300  # Hamming candidates rescored per query, as locally
TOPK_MAX = 16_384  # Milvus's cap on one search's limit


def _center_key(center: np.ndarray | None) -> bytes:
    return b"" if center is None else center.tobytes()


def dense(engine: Engine, query_vector: np.ndarray, heads: dict[str, Published], expr: str,
          shortlist: int = SHORTLIST) -> list[tuple[dict[str, Any], float]]:
    """Hamming shortlist from the engine, rescored with the int8 rows: ``(row, cosine)`` best
    first. Projects whose bits are mean-centred are searched with their own query bits."""
    groups: dict[bytes, list[str]] = defaultdict(list)
    for head in heads.values():
        groups[_center_key(head.center)].append(head.project)
    out: list[tuple[dict[str, Any], float]] = []
    for key, members in groups.items():
        center = heads[members[0]].center if key else None
        bits = kernels.binarize(query_vector[None, :], center)[0]
        scope = expr if len(groups) == 1 else all_of(expr, one_of("project", members))
        hits = hamming(engine, bits, shortlist, scope, [*META, "rescore"])
        if not hits:
            continue
        raw = [base64.b64decode(row.pop("rescore")) for row, _ in hits]
        dims = len(query_vector)
        int8 = np.frombuffer(b"".join(r[:dims] for r in raw), np.int8).reshape(len(raw), dims)
        scales = np.frombuffer(b"".join(r[dims:] for r in raw), np.float32)
        cosines = kernels.rescore(query_vector, np.ascontiguousarray(int8),
                                  np.ascontiguousarray(scales))
        out += [(row, float(c)) for (row, _), c in zip(hits, cosines, strict=True)]
    out.sort(key=lambda item: -item[1])
    return out


def _later_parts(engine: Engine, project: str, cands: list[Candidate],
                 rows: dict[int, dict[str, Any]], query: Query) -> set[int]:
    """As ``ranking.later_parts``: candidates named as a queried symbol that are not where it
    is declared (a later part of a declaration split into several chunks); the parts of all
    of them are read in one engine query."""
    named = named_candidates(cands, query)
    if not named:
        return set()
    paths = sorted({rows[cand.id]["path"] for cand in named})
    declared = sorted({rows[cand.id]["symbol"] for cand in named})
    first: dict[tuple[str, str, str], int] = {}
    for row in declaration_parts(engine, project, paths, declared):
        key = (row["path"], row["symbol"], row["signature"])
        first[key] = min(first.get(key, row["start_byte"]), row["start_byte"])
    parts: set[int] = set()
    for cand in named:
        row = rows[cand.id]
        start = first.get((row["path"], row["symbol"], row["signature"]))
        if start is not None and cand.start_byte > start:
            parts.add(cand.id)
    return parts


def declared(engine: Engine, project: str, paths: Sequence[str]) -> dict[str, frozenset[str]]:
    """Path -> the words of the names its published chunks declare (``units.declared_words``
    of the engine's rows)."""
    names: dict[str, set[str]] = {path: set() for path in paths}
    for i in range(0, len(paths), PATHS_PER_QUERY):
        for row in chunks_of_paths(engine, project, paths[i:i + PATHS_PER_QUERY],
                                   ["path", "symbol"], "reading the names files declare"):
            if row["symbol"]:
                names[row["path"]].add(row["symbol"])
    return {path: name_words(found) for path, found in names.items()}


class _EngineFiles:
    """Every chunk row of one project's files as the engine holds them, read as a local
    snapshot's are (``file_chunks``), for the units of results. Rows that are candidates carry
    their ids; the others get ids of their own, below 0."""

    def __init__(self, engine: Engine, project: str, pk_of: dict[str, int]) -> None:
        self.engine, self.project, self.pk_of = engine, project, pk_of
        self._files: dict[str, list[Row]] = {}
        self._others = 0

    def file_chunks(self, paths: Sequence[str]) -> dict[str, list[Row]]:
        missing = sorted(set(paths) - set(self._files))
        if missing:
            found = chunks_of_paths(
                self.engine, self.project, missing,
                ["id", "path", "start_byte", "end_byte", "start_line", "end_line", "kind",
                 "symbol", "signature"], "reading the chunks of results' files", limit=TOPK_MAX)
            for path in missing:
                self._files[path] = []
            for row in sorted(found, key=lambda r: (r["path"], r["start_byte"])):
                self._files[row["path"]].append(Row(self._id(row["id"]), row["start_byte"],
                                                    row["end_byte"], row["start_line"],
                                                    row["end_line"], row["kind"],
                                                    row["symbol"] or None,
                                                    row["signature"] or None))
        return {p: self._files[p] for p in paths if self._files.get(p)}

    def _id(self, pk: str) -> int:
        if pk in self.pk_of:
            return self.pk_of[pk]
        self._others += 1
        return -self._others


class _Snippets:
    """Snippets from a local checkout where it has the same chunk text, else the engine's."""

    def __init__(self, engine: Engine, roots: dict[str, Path], max_file_size: int) -> None:
        self.engine, self.roots, self.max_file_size = engine, roots, max_file_size
        self._files: dict[tuple[str, str], bytes | None] = {}

    def _local(self, project: str, path: str) -> bytes | None:
        key = (project, path)
        if key not in self._files:
            root = self.roots.get(project)
            data = None
            if root is not None:
                try:  # as every project file is read: no symlink, regular files, bounded
                    data, _ = safe_read.read(root, path, self.max_file_size)
                except safe_read.Refused:
                    data = None
            self._files[key] = data
        return self._files[key]

    def fill(self, results: list[dict[str, Any]], rows: dict[str, dict[str, Any]]) -> None:
        """Set ``content`` and ``stale`` (the local file differs from what was published) of
        results whose engine row is ``rows[result["_pk"]]``."""
        wanted = []
        for r in results:
            row = rows[r["_pk"]]
            data = self._local(r["project"], r["path"])
            piece = data[row["start_byte"]:row["end_byte"]] if data is not None else None
            if piece is not None and kernels.hash_many([piece])[0].hex() == row["content_hash"]:
                assert data is not None
                # the result's range may have grown over its unit or an overlapping chunk
                window = r["_window"]
                r["content"] = (
                    data[r["start_byte"]:r["end_byte"]].decode("utf-8", "replace")
                    if window is None else
                    windowed(data[window[0]:window[1]].decode("utf-8", "replace"),
                             r["start_line"], r["end_line"], window, signature_line(
                                 data, (r["start_byte"], r["end_byte"], r["start_line"],
                                        r["end_line"]), window, r["symbol"])))
                r["stale"] = False
            else:
                # a checkout here whose file differs, is gone or is refused (a symlink, a FIFO)
                r["stale"] = r["project"] in self.roots
                wanted.append(r)
            r["_read_bytes"] = usage_log.read_cost(data) if data is not None else 0
        if wanted:
            texts = {row["id"]: row["text"] for row in chunks_by_id(
                self.engine, [r["_pk"] for r in wanted], ["id", "text"], "reading snippets")}
            for r in wanted:  # the chunk that matched, marking the rest of its unit
                row = rows[r["_pk"]]
                r["content"] = windowed(texts.get(r["_pk"], ""), r["start_line"], r["end_line"],
                                        (row["start_byte"], row["end_byte"], row["start_line"],
                                         row["end_line"]))


def search(engine: Engine, query: Query, query_vector: np.ndarray | None, filters: Filters, *,
           projects: Sequence[str] | None, exclude: Collection[str] = (),
           branches: frozenset[str], limit: int, floor: float | None,
           roots: dict[str, Path], max_file_size: int) -> list[list[dict[str, Any]]]:
    """Each published project's (``projects``, or all) best ``limit`` results, ranked by the
    pipeline local results are ranked by (``retrieval.pipeline``). Projects in ``exclude``
    are left out (searched locally instead)."""
    every = published(engine, projects)
    unknown = [p for p in projects or () if p not in every and p not in exclude]
    if unknown:  # asked for by id: say so rather than find nothing
        raise UsageError(f"No project {unknown[0]!r} is published in {engine.where}.",
                         hint="`kenning status PATH` of a checkout says whether it is "
                              "published; `kenning publish PATH` publishes it.")
    heads = {p: h for p, h in every.items() if p not in exclude}
    if not heads:
        return []
    if filters.kind in (*CLASSES, "code") and not engine.classes:
        raise SharedIndexError(
            f"The shared index at {engine.uri} holds chunks published before their class was "
            "stored, so "
            f"--kind {filters.kind} cannot filter them.",
            hint="Publish its projects again into a new collection: `kenning remove-index "
            "--shared PROJECT` each (the emptied collection is dropped), then `kenning publish`.")
    reads = EngineReads(engine, query, query_vector, heads, filters)
    parts: list[list[dict[str, Any]]] = []
    snippets = _Snippets(engine, roots, max_file_size)
    for project in heads:
        source = EngineSource(reads, project)
        found = pipeline.search(source, query, limit=limit, branches=branches, floor=floor)
        results = [_record(heads[project], reads.rows[c.id], c, c.id in found.weak, evidence)
                   for c, evidence in zip(found.cands, found.evidence, strict=True)]
        snippets.fill(results, {r["_pk"]: reads.rows[reads.pk_of[r["_pk"]]] for r in results})
        for r in results:
            del r["_pk"], r["_window"]
        if results:
            parts.append(results)
    return parts


def _record(head: Published, row: dict[str, Any], c: Candidate, weak: bool,
            evidence: dict[str, Any]) -> dict[str, Any]:
    """The result record of a ranked candidate, its snippet still to be filled."""
    return {"id": head.chunk_id(row["ordinal"]), "project": head.project,
            "path": c.path, "start_line": c.start_line, "end_line": c.end_line,
            "start_byte": c.start_byte, "end_byte": c.end_byte, "kind": c.kind,
            "chunk_class": row.get(CLASS_FIELD) or chunk_class(c.path, c.language, c.symbol),
            "symbol": c.symbol, "score": round(c.score, 6), "content": "", "stale": False,
            "weak": weak, "_pk": row["id"], "_window": c.window,
            "_evidence": evidence}  # for confidence.assess


class EngineReads:
    """The engine's reads of one search over every project it searches: each branch is one
    engine query over all of them (per depth asked), whose rows each project's source takes
    its share of; rows get small int ids (``pk_of``) for fusion and ranking."""

    def __init__(self, engine: Engine, query: Query, vector: np.ndarray | None,
                 heads: dict[str, Published], filters: Filters) -> None:
        self.engine, self.query, self.vector, self.heads = engine, query, vector, heads
        self.expr = expression(filters, sorted(heads))
        self.exact = path_test(filters)
        self.pk_of: dict[str, int] = {}  # engine primary key -> id
        self.rows: dict[int, dict[str, Any]] = {}
        self.cosine: dict[int, float] = {}  # of the rows the vector branch found
        self._branches: dict[tuple[str, int], dict[str, Ranking]] = {}

    def key(self, row: dict[str, Any]) -> int:
        if row["id"] not in self.pk_of:
            self.pk_of[row["id"]] = len(self.pk_of)
            self.rows[self.pk_of[row["id"]]] = row
        return self.pk_of[row["id"]]

    def branch(self, name: str, project: str, depth: int) -> Ranking:
        """``project``'s best ``depth`` of branch ``name``, from one engine query over every
        project (the same depth for each)."""
        if (name, depth) not in self._branches:
            per: dict[str, Ranking] = defaultdict(list)
            for row, score in self._hits(name, depth):
                if self.exact is None or self.exact(row["path"]):
                    per[row["project"]].append((self.key(row), score))
            self._branches[name, depth] = per
        return self._branches[name, depth].get(project, [])[:depth]

    def _hits(self, name: str, depth: int) -> list[tuple[dict[str, Any], float]]:
        if name == "lexical":
            return bm25(self.engine, self.query, min(TOPK_MAX, depth * len(self.heads)),
                        self.expr)
        if name == "symbol":
            return symbol_rows(self.engine, self.query, depth * len(self.heads), self.expr)
        assert self.vector is not None
        found = dense(self.engine, self.vector, self.heads, self.expr,
                      max(SHORTLIST, depth + depth // 2))
        for row, score in found:
            self.cosine[self.key(row)] = score
        return found


class EngineSource:
    """One published project as a ``Source`` of the rank pipeline, read through the search's
    ``EngineReads``."""

    def __init__(self, reads: EngineReads, project: str) -> None:
        self.reads, self.project, self.engine = reads, project, reads.engine
        self.files = _EngineFiles(reads.engine, project, reads.pk_of)

    @property
    def has_vector(self) -> bool:
        return self.reads.vector is not None

    def lexical(self, query: Query, limit: int) -> Ranking:
        return self.reads.branch("lexical", self.project, limit)

    def symbols(self, query: Query, limit: int) -> Ranking:
        return self.reads.branch("symbol", self.project, limit)

    def dense(self, limit: int) -> Ranking:
        return self.reads.branch("dense", self.project, limit)

    def message(self, query: Query, limit: int) -> Ranking:
        return []  # the traceback branches read the work tree's files, which are not here

    def frames(self, query: Query) -> Ranking:
        return []

    def frame_calls(self, ids: list[int]) -> Ranking:
        return []

    def cosines(self, ids: list[int]) -> dict[int, float]:
        known = {cid: self.reads.cosine[cid] for cid in ids if cid in self.reads.cosine}
        missing = [self.reads.rows[cid]["id"] for cid in ids if cid not in known]
        if missing:
            rows = chunks_by_id(self.engine, missing, ["id", "rescore"], "reading vectors")
            found = self._rescored([row["rescore"] for row in rows])
            known.update((self.reads.pk_of[row["id"]], c)
                         for row, c in zip(rows, found, strict=True))
        return known

    def background(self) -> tuple[float, float] | None:
        """As ``confidence.background``, over the project's distinct vectors (the first
        ``BACKGROUND_ROWS`` the engine gives)."""
        rows = self.engine.query(self.engine.chunks, at_project(self.project), ["rescore"],
                                 "reading the vectors' background", limit=TOPK_MAX)
        distinct = list(dict.fromkeys(row["rescore"] for row in rows))
        if len(distinct) < 2:
            return None
        step = max(1, len(distinct) // confidence.BACKGROUND_ROWS)
        cos = self._rescored(distinct[::step][:confidence.BACKGROUND_ROWS])
        spread = float(np.std(cos))
        return (float(np.mean(cos)), spread) if spread > 0 else None

    def _rescored(self, packed: list[str]) -> list[float]:
        """The cosines of the query's vector against rows' ``rescore`` fields."""
        vector = self.reads.vector
        assert vector is not None
        if not packed:
            return []
        dims = len(vector)
        raw = [base64.b64decode(p) for p in packed]
        int8 = np.frombuffer(b"".join(r[:dims] for r in raw), np.int8).reshape(len(raw), dims)
        scales = np.frombuffer(b"".join(r[dims:] for r in raw), np.float32)
        return [float(c) for c in kernels.rescore(vector, np.ascontiguousarray(int8),
                                                  np.ascontiguousarray(scales))]

    def candidates(self, ids: list[int]) -> list[Candidate]:
        return [_candidate(cid, self.reads.rows[cid], 0.0) for cid in ids]

    def symbol_less(self, ids: list[int]) -> list[tuple[int, str, str | None]]:
        rows = self.reads.rows
        return [(cid, rows[cid]["path"], rows[cid]["language"] or None) for cid in ids
                if not rows[cid]["symbol"]]

    def texts(self, ids: list[int]) -> dict[int, str]:
        return {self.reads.pk_of[row["id"]]: row["text"] for row in chunks_by_id(
            self.engine, [self.reads.rows[cid]["id"] for cid in ids], ["id", "text"],
            "reading re-exports")}

    def units(self, cands: list[Candidate]) -> dict[int, Unit]:
        return units(self.files, cands)

    def later_parts(self, cands: list[Candidate], query: Query) -> set[int]:
        return _later_parts(self.engine, self.project, cands, self.reads.rows, query)

    def declared(self, paths: list[str]) -> dict[str, frozenset[str]]:
        return declared(self.engine, self.project, paths)

    def says(self, phrases: Phrases) -> bool:
        return all(self._saying(phrase, at_project(self.project), 1) for phrase in phrases)

    def saying(self, phrases: Phrases, ids: list[int]) -> set[int]:
        found = set(ids)
        for phrase in phrases:
            if not found:
                break
            pks = [self.reads.rows[cid]["id"] for cid in found]
            found = {self.reads.pk_of[pk] for pk in
                     self._saying(phrase, one_of("id", pks), len(pks))}
        return found

    def _saying(self, phrase: Sequence[str], scope: str, limit: int) -> list[str]:
        """Up to ``limit`` primary keys of rows in ``scope`` whose words say ``phrase`` as the
        local index's FTS5 phrase does (its tokenizer splits at ``_`` too)."""
        said = " ".join(phrase).replace("_", " ")
        # LIKE's ``_`` is any one character: a space or a ``_`` between the tokens
        like = said.replace(" ", "_")
        whole = " or ".join(f"words like {quote(p)}" for p in
                            (like, f"{like} %", f"% {like} %", f"% {like}"))
        rows = self.engine.query(self.engine.chunks, all_of(scope, whole), ["id", "words"],
                                 "finding a phrase", limit=TOPK_MAX if limit > 1 else 64)
        return [row["id"] for row in rows
                if f" {said} " in f" {row['words'].replace('_', ' ')} "][:limit]


def _candidate(cid: int, row: dict[str, Any], score: float) -> Candidate:
    return Candidate(cid, row["path"], row["start_line"], row["end_line"], row["start_byte"],
                     row["end_byte"], row["language"] or None, row["kind"], row["symbol"] or None,
                     score)
