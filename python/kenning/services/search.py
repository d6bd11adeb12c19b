"""A search over projects: the request, checked once; each project refreshed as the freshness
policy says, with the embedder's lifetime and the deadline; the fan-out over projects and the
shared index, the merge, the token budget and the usage log. Each project's own ranking is
``retrieval.pipeline`` over its snapshot (``retrieval.snapshot_source``)."""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kenning import project, usage_log
from kenning.config import Settings
from kenning.embedding import Embedder, WordsOnly, borrowed, deadline, dimensioned, long_queries
from kenning.errors import (
    EmbedderError,
    IndexDamaged,
    IndexError_,
    IndexMissing,
    KenningError,
    UsageError,
)
from kenning.retrieval import budget, confidence, dense, pipeline
from kenning.retrieval.filters import Filters, check_path_filter
from kenning.retrieval.hits import hit_records
from kenning.retrieval.pipeline import BRANCHES, MAX_LIMIT
from kenning.retrieval.projects import ProjectRef, resolve_projects
from kenning.retrieval.query import MAX_QUERY_CHARS, Query, analyze, without_lone_surrogates
from kenning.retrieval.snapshot_source import SnapshotSource
from kenning.services.freshness import Freshness, failed_refresh, for_settings

if TYPE_CHECKING:
    from kenning.store import ChunkFilter, Index, Snapshot


@dataclass(frozen=True)
class SearchRequest:
    """What a search asks, checked once, when it is made: every front end builds one
    (``request``), so a bad limit, filter, budget or query is refused before any work, with
    the same sentence."""

    query: str
    limit: int = 10
    path_filter: str | None = None
    language: str | None = None
    kind: str | None = None
    budget_tokens: int | None = None
    filters: Filters = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        text = without_lone_surrogates(self.query).strip()
        if not text:
            raise UsageError("The query is empty.", hint="Describe the code you are looking for.")
        if len(text) > MAX_QUERY_CHARS:
            raise UsageError(f"The query is longer than {MAX_QUERY_CHARS:,} characters.",
                             hint="Shorten it to the words that matter, and a traceback to its "
                                  "frames and error line.")
        if self.limit < 1:
            raise UsageError(f"The limit must be at least 1, got {self.limit}.")
        if self.budget_tokens is not None:
            budget.check(self.budget_tokens)
        if self.path_filter is not None:  # what needs no project root; the rest at ``bind``
            check_path_filter(self.path_filter)
        # an unknown language or kind is refused here; the filter's own copy, canonical
        object.__setattr__(self, "filters", Filters(self.path_filter, self.language, self.kind))

    @property
    def depth(self) -> int:
        """The results returned at most: the limit, up to ``MAX_LIMIT``."""
        return min(self.limit, MAX_LIMIT)


@dataclass
class _Context:
    query: Query
    filters: Filters
    limit: int
    settings: Settings
    embedder: Embedder
    query_vector: np.ndarray | None
    floor: float | None  # the relevance floor of the query's model, if one was measured
    branches: frozenset[str]
    progress: Callable[[dict[str, Any]], None] | None = None
    freshness: Freshness = field(default_factory=Freshness)
    indexes: dict[Path, Index] = field(default_factory=dict)  # opened once per search
    deferred: list[Path] = field(default_factory=list)  # roots whose vectors were left over
    refreshed: bool = False  # whether this search refreshed its projects first
    refresh_failures: dict[Path, IndexError_] = field(default_factory=dict)
    skipped: dict[Path, KenningError] = field(default_factory=dict)  # of several projects
    shared_projects: Sequence[str] | None = None  # published projects to search (None: all)
    warnings: list[str] = field(default_factory=list)
    embedder_down: bool = False  # the query could not be embedded
    prefer: Path | None = None  # a folder inside a project whose results come first
    calls: bool = False  # each result carries its callers and callees
    framed: list[Path] = field(default_factory=list)  # roots holding a frame of its traceback
    budget_tokens: int | None = None  # the results packed as line ranges within this many
    # per root, the files of results whose bytes changed with size and mtime kept
    rewritten: dict[Path, set[str]] = field(default_factory=dict)


def request(query: str, limit: int = 10, path_filter: str | None = None,
            language: str | None = None, kind: str | None = None,
            budget_tokens: int | None = None) -> SearchRequest:
    """The request these arguments make; one refused is a search's error in the usage log."""
    try:
        return SearchRequest(query, limit, path_filter, language, kind, budget_tokens)
    except KenningError as exc:
        usage_log.record("error", command="search", error=exc.code, message=exc.message)
        raise


def search(query: str, projects: Sequence[ProjectRef] | None = None, *, settings: Settings,
           limit: int = 10, path_filter: str | None = None, language: str | None = None,
           kind: str | None = None, budget_tokens: int | None = None,
           **options: Any) -> dict[str, Any]:
    """``execute`` of the request these arguments make; ``options`` are ``execute``'s."""
    asked = request(query, limit, path_filter, language, kind, budget_tokens)
    return execute(asked, projects, settings=settings, **options)


def execute(request: SearchRequest, projects: Sequence[ProjectRef] | None = None, *,
            settings: Settings, refresh: bool = True, embedder: Embedder | None = None,
            branches: Collection[str] = BRANCHES,
            progress: Callable[[dict[str, Any]], None] | None = None,
            freshness: Freshness | None = None, shared_projects: Sequence[str] | None = None,
            prefer: Path | None = None, calls: bool = False,
            budget_frame: budget.Frame | None = None) -> dict[str, Any]:
    """Hybrid search over one or more projects: the search-result JSON of the README ("The
    search result JSON"), plus ``vectors_deferred``.

    ``search.backend`` decides where: ``local`` (the indexes here), ``shared`` (the published
    snapshots in the shared index: ``shared_projects``, or all), ``both`` (``projects`` here,
    every other published project from the shared index, merged).

    ``branches`` selects retrieval branches (all by default; the quality benchmark measures
    each alone). ``progress`` receives the refresh's progress events. Each project is refreshed
    first as ``freshness`` (``kenning.services.freshness``; unless given, the policy ``settings``
    configure) says: a project whose backlog of chunks without vectors is too large to embed before
    answering (a first index, say) is searched by words, symbols and the vectors it has, with a
    warning, and its root is listed in ``vectors_deferred``: the caller computes them in the
    background (the CLI starts a `kenning index`, the MCP server a worker thread). Results
    under ``prefer``, a folder inside a project searched, come first (the CLI's working
    directory). With ``calls`` each result of a local index carries the ``callers`` and
    ``callees`` of its declaration (``retrieval.calls``), a few each. With the request's
    ``budget_tokens`` the results are packed as line ranges within that many tokens
    (``budget``): each keeps the lines it was given as ``content`` and ``lines``, and
    ``budget`` reports ``{"tokens", "used"}``: the contents count, or with ``budget_frame`` all
    that the caller prints."""
    started = time.perf_counter()
    try:
        refs = list(projects) if projects else resolve_projects(settings)
        # the shared index searches projects other than these too
        parsed = analyze(request.query, _names_in_common(refs)
                         if settings["search.backend"] == "local" else ())
        for ref in refs:  # refuse a filter that escapes a root before any work
            request.filters.bind(ref.root)
        refresh = refresh and bool(settings["search.refresh"])
        with borrowed(settings, embedder) as emb, deadline.within(settings["search.timeout"]):
            ctx = _Context(parsed, request.filters, request.depth, settings, emb, None,
                           dense.relevance_floor(str(emb.model)), frozenset(branches), progress,
                           freshness or for_settings(settings),
                           shared_projects=shared_projects, prefer=prefer, calls=calls,
                           budget_tokens=request.budget_tokens)
            _prepare(refs, ctx, refresh=refresh, capped=request.limit > MAX_LIMIT)
            result = _run(refs, ctx, refresh=refresh)
            for root, paths in ctx.rewritten.items():  # results flagged stale: index them anew
                if paths and refresh:
                    ctx.freshness.reread(root, paths, settings, ctx.embedder)
    except KenningError as exc:
        usage_log.record("error", command="search", error=exc.code, message=exc.message)
        raise
    _finish(result, ctx, budget_frame)
    results = result["results"]
    saved = usage_log.tokens_saved(results)
    for r in results:
        del r["_read_bytes"]
    usage_log.record("search", ms=round((time.perf_counter() - started) * 1000, 2),
                     results=len(results), tokens_not_read=saved,
                     degraded="dense" in ctx.branches and ctx.query_vector is None)
    return result


def _prepare(refs: list[ProjectRef], ctx: _Context, *, refresh: bool, capped: bool) -> None:
    """The embedder a first index needs, and the warnings known before any project is read."""
    if (ctx.settings["search.backend"] != "shared" and refresh
            and any(_words_only(_open(ref, ctx)) for ref in refs)):
        # a first index needs the dims; with the server down and dims unknown, the
        # project gets an index of words only
        ctx.embedder = dimensioned(ctx.embedder)
        if not isinstance(ctx.embedder, WordsOnly):  # an index of the model's dims takes over
            ctx.indexes = {root: index for root, index in ctx.indexes.items()
                           if not _words_only(index)}
    emb = ctx.embedder
    if isinstance(emb, WordsOnly):
        ctx.branches -= {"dense"}
        ctx.embedder_down = True
        ctx.warnings.append(
            f"Semantic search is off: {emb.error.message.rstrip('.')}, and kenning has "
            f"not learned the dims of {emb.model} yet, so results are word and symbol "
            "matches. Vectors come with the first `kenning index` that reaches it.")
    if capped:
        ctx.warnings.append(f"At most {MAX_LIMIT} results are returned per search; "
                            "narrow the query or the filters to see others.")
    if ctx.calls and ctx.settings["search.backend"] != "local":
        ctx.warnings.append("Callers and callees come from the indexes here only: "
                            "results from the shared index carry none.")


def _finish(result: dict[str, Any], ctx: _Context, frame: budget.Frame | None) -> None:
    """The merged ``result`` completed: the roots left to a background index, the confidence,
    the fields a result of the shared index lacks, and the token budget's packing."""
    deferred = []
    for root in ctx.deferred:
        if not ctx.embedder_down:
            deferred.append(str(root))
        elif not isinstance(ctx.embedder, WordsOnly):  # whose warning says so already
            # an indexer started now would fail at once
            result["warnings"].append(f"The embedder is down, so no vectors are being computed "
                                      f"for {root}; `kenning index {root}` resumes once it "
                                      "answers.")
    result["vectors_deferred"] = deferred
    result["no_strong_match"] = confidence.assess(result["results"], ctx.query)
    result["budget"] = None
    for r in result["results"]:
        # a result of the shared index: no work tree here to vouch for
        r.setdefault("revision", None)
        r.setdefault("changed_since_index", bool(r["stale"]))
        r.setdefault("content_hash", None)
        r.setdefault("lines", None)
    if ctx.budget_tokens is not None:
        _pack(result, ctx.budget_tokens, frame)


def _names_in_common(refs: Sequence[ProjectRef]) -> frozenset[str]:
    """The names every project searched answers to: the project's, when there is one."""
    found = [project.names(ref.root, ref.id) for ref in refs]
    return frozenset.intersection(*found) if found else frozenset()


def _embed_query(ctx: _Context) -> None:
    """The query's vector (of a query longer than the model's window, the mean of its parts':
    ``long_queries``); while the embedder is known to be down (it failed moments ago) it
    is not asked again, so a degraded search does not wait on connection retries each time."""
    try:
        down = ctx.freshness.down_error()
        if down is not None:
            raise down
        vector = long_queries.embed(ctx.embedder, ctx.query.embedded)
        ctx.query_vector = np.ascontiguousarray(vector, np.float32)
    except EmbedderError as exc:
        ctx.freshness.embedder_failed(exc)
        ctx.embedder_down = True
        ctx.warnings.append(f"Semantic search is off ({exc.message}); results are word and "
                            "symbol matches from the last snapshot.")


def _run(refs: list[ProjectRef], ctx: _Context, *, refresh: bool) -> dict[str, Any]:
    backend = ctx.settings["search.backend"]
    shared: list[list[dict[str, Any]]] | None = None
    if backend == "shared":
        # the published snapshots only; the local indexes answer if the engine cannot
        if "dense" in ctx.branches:
            _embed_query(ctx)
        shared = _search_shared(refs, ctx, exclude=())
        if shared is not None:
            return _merged([(part, None) for part in shared], ctx, several=True)
    dense_wanted = "dense" in ctx.branches
    ctx.refreshed = refresh
    if refresh and dense_wanted and ctx.query_vector is None:
        # the query is embedded (and a local model loaded) while the refresh stats the files
        with ThreadPoolExecutor(max_workers=1) as pool:
            embedding = pool.submit(deadline.carry(_embed_query), ctx)
            _refresh_all(refs, ctx)
            embedding.result()
    elif refresh:
        _refresh_all(refs, ctx)
    elif dense_wanted and ctx.query_vector is None:
        _embed_query(ctx)
    parts = _search_each(refs, ctx)
    if backend == "both":  # the checkouts here, fresh; every other project as published
        shared = _search_shared(refs, ctx, exclude=[ref.id for ref in refs])
        parts += [(part, None) for part in shared or ()]
    return _merged(parts, ctx, several=len(parts) > 1)


def _merged(parts: list[tuple[list[dict[str, Any]], str | None]], ctx: _Context, *,
            several: bool) -> dict[str, Any]:
    # each project's own order is kept: its results after the first few may come from deeper
    # candidates and score above the last of those
    merged = list(heapq.merge(*(hits for hits, _ in parts), key=lambda r: -r["score"]))
    return {"type": "search_result", "query": ctx.query.text, "results": merged[: ctx.limit],
            "warnings": list(dict.fromkeys(ctx.warnings)),
            "revision": None if several else parts[0][1]}


def _search_shared(refs: list[ProjectRef], ctx: _Context,
                   exclude: Collection[str]) -> list[list[dict[str, Any]]] | None:
    """Ranked results from the shared index, one list per project (None, with a warning, when
    it cannot be reached; a refused token is an error)."""
    from kenning.errors import SharedAuthError, SharedIndexError
    from kenning.shared import Engine, retrieval
    from kenning.store import make_descriptor

    try:
        with Engine(ctx.settings, make_descriptor(ctx.embedder)) as engine:
            return retrieval.search(
                engine, ctx.query, ctx.query_vector, ctx.filters, projects=ctx.shared_projects,
                exclude=exclude, branches=ctx.branches, limit=ctx.limit, floor=ctx.floor,
                roots={ref.id: ref.root for ref in refs},
                max_file_size=int(ctx.settings["index.max_file_size"]))
    except SharedAuthError:
        raise
    except SharedIndexError as exc:
        ctx.warnings.append(f"{exc.message} Results come from the local indexes only.")
        return None


def _pack(result: dict[str, Any], tokens: int, frame: budget.Frame | None) -> None:
    """``result``'s results packed within ``tokens``, less what ``frame`` prints around them."""
    offers = [r.pop("_offer", None) or _offer_of_content(r) for r in result["results"]]
    around = 0
    if frame is not None:  # its line on the budget at its longest: all of it used
        result["budget"] = {"tokens": tokens, "used": tokens}
        around = budget.context_tokens(frame.envelope(result))
    result["results"], used = budget.pack(result["results"], offers, max(tokens - around, 0),
                                          frame.item if frame is not None else None)
    result["budget"] = {"tokens": tokens, "used": used + around}


def _offer_of_content(result: dict[str, Any]) -> budget.Lines | None:
    """What a result of the shared index offers a token budget: its content, where that holds
    every line of its span (else None: it gets no line)."""
    text, first, last = result["content"], result["start_line"], result["end_line"]
    if len(text.splitlines()) != last - first + 1:
        return None
    return budget.offer(text, first, last, (first, last), result["symbol"])


def _refresh(ref: ProjectRef, ctx: _Context) -> None:
    """Refresh one project as the freshness policy says. The approximate-search graph is left
    to `kenning index`: syncing it could keep a search waiting for minutes, and the exact scan
    answers until it is current."""
    done = ctx.freshness.refresh(ref.root, ctx.settings, ctx.embedder,
                                 index=ctx.indexes.get(ref.root), progress=ctx.progress)
    ctx.warnings += done.warnings
    if done.failure is not None:
        ctx.refresh_failures[ref.root] = done.failure
    if done.deferred:
        ctx.deferred.append(ref.root)


def _refresh_all(refs: list[ProjectRef], ctx: _Context) -> None:
    for ref in refs:
        try:
            _refresh(ref, ctx)
        except KenningError as exc:  # one project must not sink the others
            if len(refs) == 1:
                raise
            ctx.skipped[ref.root] = exc


def _words_only(index: Index | None) -> bool:
    """No index yet, or one of words only (made while the dims of the model were unknown)."""
    return index is None or not index.descriptor["dims"]


def _open(ref: ProjectRef, ctx: _Context) -> Index | None:
    """The index of ``ref`` (None when it has none yet), opened once per search."""
    from kenning.store import Index

    index = ctx.indexes.get(ref.root)
    if index is None:
        try:
            index = ctx.indexes[ref.root] = Index.open(ref.root, ctx.settings)
        except IndexMissing:
            return None
    return index


def _search_each(refs: list[ProjectRef],
                 ctx: _Context) -> list[tuple[list[dict[str, Any]], str | None]]:
    """The results of each project; with several, one that cannot be searched (no index, a
    refused root) is skipped with a warning, unless none can be."""
    if len(refs) == 1:
        found = [_search_project(refs[0], ctx)]
        _no_frame_warning(refs, ctx)
        return found

    def one(ref: ProjectRef) -> tuple[list[dict[str, Any]], str | None] | None:
        if ref.root not in ctx.skipped:
            try:
                return _search_project(ref, ctx)
            except IndexError_ as exc:
                ctx.skipped[ref.root] = exc
        return None

    with ThreadPoolExecutor(max_workers=min(len(refs), 4)) as pool:
        parts = list(pool.map(one, refs))
    for ref in refs:
        if ref.root in ctx.skipped:
            ctx.warnings.append(f"Project {ref.id} skipped: {ctx.skipped[ref.root].message}")
    if not any(part is not None for part in parts):
        raise ctx.skipped[refs[0].root]
    _no_frame_warning(refs, ctx)
    return [part for part in parts if part is not None]


def _search_project(ref: ProjectRef, ctx: _Context) -> tuple[list[dict[str, Any]], str | None]:
    """Ranked results of one project and the revision of the snapshot they come from."""
    from kenning.store import Index

    index = _open(ref, ctx)
    if index is None:
        if ref.root in ctx.refresh_failures:  # it could not even be created: say why
            raise ctx.refresh_failures[ref.root] from None
        Index.open(ref.root, ctx.settings)  # its error, which names the model and the fix
        raise AssertionError("unreachable")
    keep = ctx.filters.bind(index.root)
    failure = index.last_failure()
    if failure is not None and index.root not in ctx.refresh_failures:
        ctx.warnings.append(failed_refresh(index.root, failure["message"], failure.get("hint")))
    try:
        return _search_snapshot(index, ctx, keep)
    except IndexDamaged as exc:  # kept: status shows it until `kenning index --full`
        index.record_failure(exc, "search")
        raise


def _search_snapshot(index: Index, ctx: _Context,
                     keep: ChunkFilter | None) -> tuple[list[dict[str, Any]], str | None]:
    from kenning.store import graph

    with index.snapshot() as snap:
        if snap.generation == 0:  # a first index stopped before its first commit, or no files
            if index.root in ctx.refresh_failures:
                raise ctx.refresh_failures[index.root]
            if not ctx.refreshed:
                raise IndexMissing(f"{index.root} has no indexed snapshot yet (an index run may "
                                   "have stopped before its first commit).",
                                   hint=f"Run `kenning index {index.root}`.")
            ctx.warnings.append(f"{index.root} has no files to index.")
            return [], snap.revision
        if snap.status == "partial" and snap.chunks and not isinstance(ctx.embedder, WordsOnly):
            ctx.warnings.append(_partial_warning(index, snap, ctx))
        vector = _fitting(ctx, index)
        source = SnapshotSource(index, snap, vector, keep,
                                max_file_size=int(ctx.settings["index.max_file_size"]),
                                scan="dense" in ctx.branches,
                                ann=graph.wanted(ctx.settings, snap.vector_rows))
        found = pipeline.search(source, ctx.query, limit=ctx.limit, branches=ctx.branches,
                                floor=ctx.floor, prefer=_folder_prefix(ctx.prefer, index.root))
        if source.framed:
            ctx.framed.append(index.root)
        results = hit_records(index, snap, found.cands, ctx.settings, found.weak,
                              calls=ctx.calls, offers=ctx.budget_tokens is not None,
                              rewritten=ctx.rewritten.setdefault(index.root, set()))
        for result, evidence in zip(results, found.evidence, strict=True):
            result["_evidence"] = evidence
        return results, snap.revision


def _folder_prefix(folder: Path | None, root: Path) -> str | None:
    """The path prefix of ``folder``, a folder inside ``root`` whose results come first."""
    if folder is None or folder == root or not folder.is_relative_to(root):
        return None
    return folder.relative_to(root).as_posix() + "/"


def _no_frame_warning(refs: list[ProjectRef], ctx: _Context) -> None:
    """The warning of a traceback none of whose frames is in a project searched."""
    trace = ctx.query.trace
    if trace is None or ctx.framed:
        return
    count = len(trace.frames)
    where = str(refs[0].root) if len(refs) == 1 else f"the {len(refs)} projects searched"
    filtered = (" the filters keep" if (ctx.filters.path_filter, ctx.filters.language,
                                         ctx.filters.kind) != (None, None, None) else "")
    ctx.warnings.append(
        f"No frame of the stack trace in the query is in {where} ({count} frame"
        f"{'' if count == 1 else 's'} read, none at an indexed file and line{filtered}); "
        "results come from its message and words.")


def _partial_warning(index: Index, snap: Snapshot, ctx: _Context) -> str:
    """How complete a partial index is, and whether anything is finishing it."""
    from kenning.indexing import state as indexing_state

    wanted = max(1, snap.chunks - snap.words_only)  # the kinds that are embedded
    share = round(100 * snap.vectors / wanted)
    have = (f"{snap.vectors} of {wanted} chunks ({share}%) have vectors so far, so results "
            "rest mostly on words and symbols")
    running = indexing_state.read(index.dir)
    if running is not None:
        return (f"The index of {index.root} is still being built ("
                f"{indexing_state.describe(running)}): {have} until it is done.")
    if ctx.embedder_down:  # the search says so in a warning of its own
        return f"The index of {index.root} is incomplete: {have}."
    if index.root in ctx.deferred:
        return f"The index of {index.root} is incomplete: {have} until the rest are computed."
    return (f"The index of {index.root} is incomplete and no indexer is running: {have}; "
            f"`kenning index {index.root}` computes the rest.")


def _fitting(ctx: _Context, index: Index) -> np.ndarray | None:
    """The query's vector, unless its width is not the index's (a server whose model changed
    under the same name): then None, with the warning that says so."""
    vector = ctx.query_vector
    dims = int(index.descriptor["dims"])
    if vector is None or vector.shape[-1] == dims:
        return vector
    ctx.warnings.append(
        f"Semantic search is off ({ctx.embedder.model} returned {vector.shape[-1]}-dim "
        f"vectors; the index of {index.root} holds {dims}-dim ones: the model behind this "
        "name changed); results are word and symbol matches from the last snapshot.")
    return None
