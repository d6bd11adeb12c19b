"""Search over the shared index: the engine serves the three retrieval branches, kenning's own
fusion and ranking run on top, per project, as they do for local indexes.

- vector: the engine's exact Hamming top-N (``BIN_FLAT``) over the sign bits, rescored here
  with the int8 rows the search returns;
- lexical: the engine's BM25 over kenning's own code tokens (``kenning.tokens``, split on
  whitespace by the engine), so identifiers split as they do locally;
- symbol: rows whose symbol name has a queried component, graded by ``symbols.best_grade``.

Filters become one engine filter expression, applied inside each branch.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from collections.abc import Collection, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from kenning import kernels, safe_read
from kenning.errors import SharedIndexError, UsageError
from kenning.retrieval.classes import CLASSES, chunk_class
from kenning.retrieval.filters import Filters
from kenning.retrieval.fusion import fuse
from kenning.retrieval.query import Query
from kenning.retrieval.ranking import Candidate, named_candidates, rank
from kenning.retrieval.reexports import lead_with_reexports
from kenning.retrieval.snippets import signature_line, windowed
from kenning.retrieval.units import Row, name_words, units
from kenning.services import usage_log
from kenning.shared.engine import CLASS_FIELD, PATHS_PER_QUERY, Engine
from kenning.shared.reads import (
    META,
    Published,
    all_of,
    bm25,
    chunks_by_id,
    chunks_of_paths,
    declaration_parts,
    expression,
    hamming,
    one_of,
    path_test,
    published,
    symbol_rows,
)

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
           floor_min_terms: int, depths: dict[str, int],
           roots: dict[str, Path], max_file_size: int) -> list[dict[str, Any]]:
    """Ranked results of the published projects (``projects``, or all), fused and ranked per
    project as local results are; each project's best ``limit``, merged by score. Projects in
    ``exclude`` are left out (searched locally instead)."""
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
    expr = expression(filters, sorted(heads))
    exact = path_test(filters)
    pk_of: dict[str, int] = {}  # engine primary key -> a small int id for fusion and ranking
    rows: dict[int, dict[str, Any]] = {}

    def kept(hits: list[tuple[dict[str, Any], float]]) -> list[tuple[dict[str, Any], float]]:
        return hits if exact is None else [(r, v) for r, v in hits if exact(r["path"])]

    def key(row: dict[str, Any]) -> int:
        if row["id"] not in pk_of:
            pk_of[row["id"]] = len(pk_of)
            rows[pk_of[row["id"]]] = row
        return pk_of[row["id"]]

    per_project: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(
        lambda: defaultdict(list))
    cosine: dict[int, float] = {}
    if "lexical" in branches:
        for row, score in kept(bm25(engine, query,
                                    min(TOPK_MAX, depths["lexical"] * len(heads)), expr)):
            per_project[row["project"]]["lexical"].append((key(row), score))
    if "symbol" in branches:
        for row, grade in kept(symbol_rows(engine, query, depths["symbol"] * len(heads), expr)):
            per_project[row["project"]]["symbol"].append((key(row), grade))
    if query_vector is not None and "dense" in branches:
        for row, score in kept(dense(engine, query_vector, heads, expr)):
            cid = key(row)
            cosine[cid] = score
            per_project[row["project"]]["dense"].append((cid, score))
    results: list[dict[str, Any]] = []
    for project, rankings in per_project.items():
        if "symbol" in branches:
            rankings.setdefault("symbol", [])
        lead_with_reexports(
            query, rankings,
            lambda ids: [(cid, rows[cid]["path"], rows[cid]["language"] or None) for cid in ids
                         if not rows[cid]["symbol"]],
            lambda ids: {pk_of[row["id"]]: row["text"] for row in chunks_by_id(
                engine, [rows[cid]["id"] for cid in ids], ["id", "text"], "reading re-exports")})
        ranked_lists = {b: r[:depths[b]] for b, r in rankings.items()}
        fused = fuse(ranked_lists, query)
        if floor is not None and query_vector is not None and len(query.terms) >= floor_min_terms:
            symbol_hits = {cid for cid, _ in ranked_lists.get("symbol", ())}
            fused = {cid: s for cid, s in fused.items()
                     if cid in symbol_hits or cosine.get(cid, floor) >= floor}
        head = sorted(fused, key=lambda cid: -fused[cid])[:depths["rank"]]
        cands = [_candidate(cid, rows[cid], fused[cid]) for cid in head]
        ranked = rank(cands, query, _later_parts(engine, project, cands, rows, query),
                      partial(units, _EngineFiles(engine, project, pk_of)),
                      depth=max(limit, depths["settled"]),
                      declared_of=partial(declared, engine, project))[:limit]
        # under the floor, unless it declares a name the query asks for (as a local result)
        declares = {c.id for c in named_candidates(ranked, query)}
        for c in ranked:
            row = rows[c.id]
            results.append({
                "id": heads[project].chunk_id(row["ordinal"]), "project": project,
                "path": c.path, "start_line": c.start_line, "end_line": c.end_line,
                "start_byte": c.start_byte, "end_byte": c.end_byte, "kind": c.kind,
                "chunk_class": row.get(CLASS_FIELD) or chunk_class(c.path, c.language,
                                                                   c.symbol),
                "symbol": c.symbol, "score": round(c.score, 6), "content": "", "stale": False,
                "weak": (floor is not None and c.id not in declares
                         and cosine.get(c.id, floor) < floor),
                "_pk": row["id"], "_window": c.window,
                "_evidence": {"named": c.id in declares}})  # for confidence.assess
    _Snippets(engine, roots, max_file_size).fill(
        results, {r["_pk"]: rows[pk_of[r["_pk"]]] for r in results})
    for r in results:
        del r["_pk"], r["_window"]
    return results


def _candidate(cid: int, row: dict[str, Any], score: float) -> Candidate:
    return Candidate(cid, row["path"], row["start_line"], row["end_line"], row["start_byte"],
                     row["end_byte"], row["language"] or None, row["kind"], row["symbol"] or None,
                     score)
