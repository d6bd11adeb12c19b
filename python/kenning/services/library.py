"""kenning's Python API: the functions and typed records that ``kenning/__init__.py`` exports.

Each function takes plain paths and returns a frozen record whose ``to_dict()`` is the JSON the
CLI prints with ``--json-output`` (README, "The search result JSON"). Settings come from
``load_settings()`` (defaults < config file < ``KENNING_*`` variables < overrides) unless a
``Settings`` is passed. This module imports nothing heavy: the model runtime, tree-sitter and
the index load when a call needs them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar, Union

if TYPE_CHECKING:
    from kenning.config import Settings
    from kenning.indexing.state import Running
    from kenning.services.index_admin import ChangedSince, Problem, Published, Runtime, State

PathLike = Union[str, "os.PathLike[str]"]
Scope = Literal["declaration", "chunk"]
_Record = TypeVar("_Record", bound="_Typed")


class _Typed:
    """``to_dict()`` in the documented key order (``type`` first), and ``from_dict()``, which
    refuses a dict whose keys differ from the record's: the two shapes cannot drift apart."""

    TYPE: ClassVar[str]  # the JSON's "type"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE, **asdict(self)}  # type: ignore[call-overload]

    @classmethod
    def _checked(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        keys = set(data) - {"type"}
        if data.get("type", cls.TYPE) != cls.TYPE or keys != set(names):
            raise ValueError(f"not a {cls.TYPE} record: keys {sorted(keys)}")
        return {name: data[name] for name in names}

    @classmethod
    def from_dict(cls: type[_Record], data: Mapping[str, Any]) -> _Record:
        return cls(**cls._checked(data))


@dataclass(frozen=True)
class _Place(_Typed):
    """Where a chunk is, the fields that ``Hit`` and ``Chunk`` begin with: its ``id`` and
    project, its path relative to the project root, lines 1-based and inclusive, bytes
    half-open."""

    id: str
    project: str
    path: str
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int


@dataclass(frozen=True)
class CallLink(_Typed):
    """A declaration that calls a hit's declaration (a caller) or that it calls (a callee),
    linked by name within the project (no types are resolved); ``id`` is for ``get_chunk``,
    lines span the whole declaration."""

    TYPE: ClassVar[str] = "call_link"
    id: str
    path: str
    start_line: int
    end_line: int
    symbol: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_LINKS = ("callers", "callees")


@dataclass(frozen=True)
class Hit(_Place):
    """One search result: a chunk (or the whole declaration it belongs to) of a project.

    Lines are 1-based and inclusive, bytes half-open, ``path`` relative to the project root;
    ``stale`` means the file changed after it was indexed; ``weak`` that it matches the query
    poorly (the query names an identifier no chunk contains, or it is under the model's
    relevance floor, or its ``confidence`` is under ``retrieval.confidence.WEAK_BELOW``);
    ``confidence`` is the probability that it answers the query, one scale for every model
    (None for the results of ``related``, which answer no query); ``id`` is for ``get_chunk``.
    Where it comes from: ``revision``, the commit the work tree has checked out (None outside
    git); ``changed_since_index``, whether the file's size or mtime differs from the indexed
    ones, as a refresh compares them;
    ``content_hash``, a short hash of the lines as read of the declaration ``id`` names (the
    result's lines, save where a result joins short neighbours), which
    ``get_chunk(expect_hash=...)`` checks (None for a result of the shared index). ``lines``:
    with a token budget, the ranges ``[first, last]`` its ``content`` holds (None without)."""

    TYPE: ClassVar[str] = "hit"
    kind: str
    chunk_class: str  # what it is to the project: "code", "test", "vendored" ... (--kind)
    symbol: str | None
    score: float
    content: str
    stale: bool
    weak: bool
    revision: str | None
    changed_since_index: bool
    content_hash: str | None
    lines: list[list[int]] | None
    confidence: float | None = None  # None, and absent from the JSON, for ``related``
    # asked for with ``calls=True`` (None otherwise, and absent from the JSON): the
    # declarations that call this one and that it calls, best first, a few each
    callers: tuple[CallLink, ...] | None = None
    callees: tuple[CallLink, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)  # a result in the JSON carries no "type"
        if out["confidence"] is None:
            del out["confidence"]
        for key in _LINKS:
            if out[key] is None:
                del out[key]
            else:
                out[key] = list(out[key])
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Hit:
        given = {key: None for key in (*_LINKS, "confidence")} | dict(data)
        checked = cls._checked(given)
        for key in _LINKS:
            if checked[key] is not None:
                checked[key] = tuple(CallLink.from_dict(link) for link in checked[key])
        return cls(**checked)


@dataclass(frozen=True)
class SearchResult(_Typed):
    """The ranked hits of one search, best first, and what the caller should know
    (``warnings``: a refresh that failed, an embedder that is down, an index still being
    built). ``revision`` is the git HEAD of the indexed snapshot (None across projects).
    ``budget`` is ``{"tokens", "used"}`` of a search with a token budget, else None.
    ``no_strong_match``: no hit is strong (each is ``weak``): the answer may not be there."""

    TYPE: ClassVar[str] = "search_result"
    query: str
    results: tuple[Hit, ...]
    warnings: tuple[str, ...]
    revision: str | None
    # roots of projects whose new chunks were too many to embed before answering (none from
    # kenning.search, which embeds them all first)
    vectors_deferred: tuple[str, ...]
    budget: dict[str, int] | None
    no_strong_match: bool

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE, "query": self.query,
                "results": [hit.to_dict() for hit in self.results],
                "warnings": list(self.warnings), "revision": self.revision,
                "vectors_deferred": list(self.vectors_deferred), "budget": self.budget,
                "no_strong_match": self.no_strong_match}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchResult:
        checked = cls._checked(data)
        return cls(checked["query"], tuple(Hit.from_dict(hit) for hit in checked["results"]),
                   tuple(checked["warnings"]), checked["revision"],
                   tuple(checked["vectors_deferred"]), checked["budget"],
                   checked["no_strong_match"])


@dataclass(frozen=True)
class Declaration(_Typed):
    """Where a declaration is: the one ``related`` found at the location it was given (its
    whole span; ``id`` names its first chunk, for ``get_chunk``)."""

    TYPE: ClassVar[str] = "declaration"
    id: str
    project: str
    path: str
    start_line: int
    end_line: int
    kind: str
    symbol: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RelatedResult(_Typed):
    """The code most like the declaration at ``location`` (``subject``), best first, with a
    search's hits, ``warnings``, ``revision`` and ``vectors_deferred``; ``subject`` itself is
    never among the hits."""

    TYPE: ClassVar[str] = "related_result"
    location: str
    subject: Declaration
    results: tuple[Hit, ...]
    warnings: tuple[str, ...]
    revision: str | None
    vectors_deferred: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE, "location": self.location, "subject": self.subject.to_dict(),
                "results": [hit.to_dict() for hit in self.results],
                "warnings": list(self.warnings), "revision": self.revision,
                "vectors_deferred": list(self.vectors_deferred)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RelatedResult:
        checked = cls._checked(data)
        return cls(checked["location"], Declaration.from_dict(checked["subject"]),
                   tuple(Hit.from_dict(hit) for hit in checked["results"]),
                   tuple(checked["warnings"]), checked["revision"],
                   tuple(checked["vectors_deferred"]))


@dataclass(frozen=True)
class Chunk(_Place):
    """The code a hit's id names: with ``scope="declaration"`` the whole declaration the chunk
    is part of, with ``"chunk"`` the chunk alone, widened by ``context_lines``."""

    TYPE: ClassVar[str] = "chunk"
    language: str | None
    kind: str
    symbol: str | None
    scope: str
    content: str
    stale: bool
    revision: str | None
    note: str | None  # what the content lacks of what was asked (a project only published)


@dataclass(frozen=True)
class Status(_Typed):
    """What the index of a project holds and whether it is healthy: ``state`` (a ``State``:
    ``not indexed``, ``ready``, ``embedding``, ``indexing``, ``unreadable``), the last snapshot
    (``generation``, ``revision``, ``indexed_at`` in ISO 8601 UTC), counts, the files changed
    since (``changed_since``: added, changed, removed), ``problems`` (each ``{"error",
    "message", "hint"}``), the indexer running on it, if any (pid, progress), and its
    generation in the shared index (``published``, when one is configured). The keys are
    those of ``kenning status --json-output`` (``kenning.services.index_admin.ProjectStatus``)."""

    TYPE: ClassVar[str] = "status"
    project: str
    root: str
    state: State
    healthy: bool
    problems: list[Problem]
    index_dir: str | None
    model: str
    dims: int | None
    model_origin: str
    runtime: Runtime | None
    config: str
    generation: int
    status: str | None
    revision: str | None
    branch: str | None
    indexed_at: str | None
    files: int
    chunks: int
    chunks_embedded: int
    chunks_words_only: int
    kinds: dict[str, dict[str, int]]
    size_bytes: int
    changed_since: ChangedSince | None
    indexer: Running | None
    published: Published | None


@dataclass(frozen=True)
class IndexRun(_Typed):
    """What one ``kenning.index`` run did (the last line of `kenning index --json-output`):
    the snapshot it committed (``generation``, ``status`` "complete" or "partial",
    ``revision``, ``branch``), the counts and what changed, ``busy`` when another process was
    indexing it, ``nothing_changed`` when there was no work at all, the damage a ``full`` run
    found and rebuilt (``repaired``, keeping ``vectors_kept`` intact vectors), the seconds
    each phase took (``timings``) and ``warnings`` (a shared index that failed or did not
    answer: its vectors were embedded here)."""

    TYPE: ClassVar[str] = "finished"
    root: str
    project_id: str
    index_dir: str
    busy: bool
    generation: int
    status: str
    revision: str | None
    branch: str | None
    files: int
    files_added: int
    files_changed: int
    files_removed: int
    files_pending: int  # left to chunk by a run given a time (a search's), 0 from kenning.index
    chunks_pending: int  # about how many chunks those files hold
    chunks: int
    chunks_added: int
    chunks_removed: int
    vectors_embedded: int
    vectors_fetched: int  # from the shared index, by content, instead of embedded
    vectors_reused: int  # from an earlier index of the project (another chunker version)
    vectors_missing: int  # chunks still without a vector
    chunks_words_only: int  # chunks of kinds not embedded (index.embed_kinds)
    embedding_held: bool  # words and symbols only until `kenning index` (the agents' hook)
    vectors_dropped: int  # no longer used by any chunk, reclaimed
    graph_rows_added: int  # rows added to the approximate-search graph
    repaired: tuple[str, ...]
    vectors_kept: int
    timings: Mapping[str, float]
    warnings: tuple[str, ...]
    nothing_changed: bool

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE, **{f.name: getattr(self, f.name) for f in fields(self)},
                "repaired": list(self.repaired), "timings": dict(self.timings),
                "warnings": list(self.warnings)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IndexRun:
        checked = cls._checked(data)
        from types import MappingProxyType

        return cls(**{**checked, "repaired": tuple(checked["repaired"]),
                      "timings": MappingProxyType(dict(checked["timings"])),
                      "warnings": tuple(checked["warnings"])})


@dataclass(frozen=True)
class DoctorCheck(_Typed):
    """One check of ``doctor``: its name, whether it passed, what it found or why it failed
    (``detail``), and the fix for a failure."""

    TYPE: ClassVar[str] = "check"
    check: str
    ok: bool
    detail: str
    fix: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # a check in the JSON carries no "type"


@dataclass(frozen=True)
class Doctor(_Typed):
    """The self-test of ``kenning.doctor`` (`kenning doctor --json-output`): ``ok`` when every
    check passed; ``checks`` in the order they ran."""

    TYPE: ClassVar[str] = "doctor"
    ok: bool
    checks: tuple[DoctorCheck, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE, "ok": self.ok,
                "checks": [check.to_dict() for check in self.checks]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Doctor:
        checked = cls._checked(data)
        return cls(checked["ok"], tuple(DoctorCheck.from_dict(c) for c in checked["checks"]))


def _check(name: str, value: object, kinds: tuple[type, ...], what: str) -> None:
    """UsageError unless ``value`` is one of ``kinds`` (a bool is no int here): a wrong type
    is refused before any work, in the one error hierarchy."""
    from kenning.errors import UsageError

    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise UsageError(f"{name} must be {what}, not {type(value).__name__}.")


def _check_common(settings: object) -> None:
    from kenning.config import Settings

    _check("settings", settings, (Settings, type(None)), "a Settings from load_settings()")


def _check_text(**values: object) -> None:
    for name, value in values.items():
        _check(name, value, (str, type(None)), "a string or None")


def load_settings(overrides: Mapping[str, Any] | None = None) -> Settings:
    """Every setting resolved: defaults < the config file < ``KENNING_*`` environment variables
    < ``overrides`` (``{"embedder.backend": "ollama"}``; a value of None leaves the key as it
    is). A bad key or value raises ``ConfigError``, naming the key and the fix."""
    from kenning import config

    _check("overrides", overrides, (Mapping, type(None)), "a mapping of setting names to values")
    return config.load(overrides, overrides_from="the overrides passed to load_settings")


def _roots(paths: PathLike | Sequence[PathLike], settings: Settings) -> list[Any]:
    """Project refs of ``paths``: folders (lifted to their git work tree's root) or the ids of
    configured projects."""
    from kenning.errors import UsageError
    from kenning.retrieval import resolve_projects

    _check("paths", paths, (str, os.PathLike, list, tuple), "a path or a list of paths")
    given = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    for path in given:
        _check("each path", path, (str, os.PathLike), "a string or a path")
    if not given:
        raise UsageError("No path to search.", hint='Pass a project folder, such as ".".')
    return resolve_projects(settings, [p if isinstance(p, str) else Path(p) for p in given])


def search(query: str, paths: PathLike | Sequence[PathLike] = ".", *, limit: int = 10,
           path_filter: str | None = None, language: str | None = None,
           kind: str | None = None, refresh: bool = True, calls: bool = False,
           budget_tokens: int | None = None,
           settings: Settings | None = None) -> SearchResult:
    """Search one project, or several at once (their hits merged by score).

    ``path_filter`` keeps files under a path or matching a glob, relative to the project root;
    ``language`` one language (``python``, or an extension such as ``py``); ``kind`` one class
    (``code``, ``docs``, ``test``, ``example``, ``generated``, ``completion``, ``vendored``,
    ``fixture``, ``data``) or declaration
    kind (``function``, ``class``, ...). With ``refresh`` the index is brought up to date
    first: one stat pass when nothing changed, and the whole first index (embedding included)
    for a project never indexed. With ``calls`` each hit carries its ``callers`` and
    ``callees``: the declarations of the project that call it and that it calls, by name.
    ``budget_tokens`` packs the results as the line ranges that best cover the query within
    that many tokens (at most 100,000; estimated at three characters a token): the heads of
    the top declarations, then their best windows, no line twice, in rank order; the result's
    ``budget`` says how many were used."""
    from kenning.services.freshness import for_settings
    from kenning.services.search import execute, request

    _check("query", query, (str,), "a string")
    _check("limit", limit, (int,), "an integer")
    _check_text(path_filter=path_filter, language=language, kind=kind)
    _check("refresh", refresh, (bool,), "True or False")
    _check("calls", calls, (bool,), "True or False")
    _check("budget_tokens", budget_tokens, (int, type(None)), "an integer or None")
    _check_common(settings)
    settings = settings or load_settings()
    asked = request(query, limit, path_filter, language, kind, budget_tokens)
    # no background worker here to leave a backlog of chunks or vectors to: they come first
    found = execute(asked, _roots(paths, settings), settings=settings, refresh=refresh,
                    freshness=for_settings(settings, sync_embed_limit=None, chunk_seconds=None),
                    calls=calls)
    return SearchResult.from_dict(found)


def related(location: PathLike, paths: PathLike | Sequence[PathLike] = ".", *,
            line: int | None = None, limit: int = 10, path_filter: str | None = None,
            language: str | None = None, kind: str | None = None, refresh: bool = True,
            calls: bool = False, settings: Settings | None = None) -> RelatedResult:
    """The code most like the declaration at ``location``: ``"PATH:LINE"``, or a path with
    ``line``. PATH may be relative to the working directory or to the project root, or
    absolute inside it. Results come from the declaration's vector neighbours, declarations
    of the same name elsewhere, its callers and callees, fused and ranked; the declaration
    itself (``subject``) is left out. Filters, ``limit``, ``refresh`` and ``calls`` are those
    of ``search``. ``UsageError`` for a malformed location, one outside the project, a file
    that is not indexed or a line past its end."""
    from kenning.services.freshness import for_settings
    from kenning.services.related import related as run

    _check("location", location, (str, os.PathLike), "PATH:LINE, or a path with line=")
    _check("line", line, (int, type(None)), "an integer or None")
    _check("limit", limit, (int,), "an integer")
    _check_text(path_filter=path_filter, language=language, kind=kind)
    _check("refresh", refresh, (bool,), "True or False")
    _check("calls", calls, (bool,), "True or False")
    _check_common(settings)
    settings = settings or load_settings()
    found = run(os.fspath(location), _roots(paths, settings), settings=settings, line=line,
                limit=limit, path_filter=path_filter, language=language, kind=kind,
                refresh=refresh, with_calls=calls,
                freshness=for_settings(settings, sync_embed_limit=None, chunk_seconds=None))
    return RelatedResult.from_dict(found)


def index(path: PathLike = ".", *, full: bool = False,
          settings: Settings | None = None) -> IndexRun:
    """Build or bring up to date the index of the project at ``path`` (lifted to its git work
    tree's root), waiting for another process that is indexing it. Only changed files are read
    again and only unseen chunks embedded; ``full`` re-reads every file after checking the
    whole index, and rebuilds what is damaged."""
    from kenning import project
    from kenning.indexing import indexer

    _check("path", path, (str, os.PathLike), "a string or a path")
    _check("full", full, (bool,), "True or False")
    _check_common(settings)
    settings = settings or load_settings()
    run = indexer.refresh(project.find_root(path), settings, full=full, wait=True)
    return IndexRun.from_dict({"type": IndexRun.TYPE, **run.to_dict()})


def get_chunk(chunk_id: str, paths: PathLike | Sequence[PathLike] = ".", *,
              scope: Scope = "declaration", context_lines: int = 0,
              expect_hash: str | None = None, settings: Settings | None = None) -> Chunk:
    """The code a hit's ``id`` names, read from the work tree; ``paths`` are the projects the
    search covered. ``StaleChunkId`` when the index has moved past the id: search again.
    ``expect_hash`` (the hit's ``content_hash``) refuses, with ``StaleContent``, lines that
    changed since that search."""
    from kenning.errors import UsageError
    from kenning.services.chunks import get_chunk as read

    _check("chunk_id", chunk_id, (str,), "a string")
    _check("context_lines", context_lines, (int,), "an integer")
    _check_text(expect_hash=expect_hash)
    if scope not in ("declaration", "chunk"):
        raise UsageError(f"scope must be 'declaration' or 'chunk', not {scope!r}.")
    _check_common(settings)
    settings = settings or load_settings()
    return Chunk.from_dict(read(chunk_id, _roots(paths, settings), settings=settings,
                                scope=scope, context_lines=context_lines,
                                expect_hash=expect_hash))


def status(path: PathLike = ".", *, settings: Settings | None = None) -> Status:
    """What the index of the project at ``path`` holds and whether it is healthy, in every
    state: ``state`` "not indexed" when it has none for the configured model, "unreadable"
    (with its ``problems``) when it cannot be read."""
    from kenning import project
    from kenning.services.index_admin import project_status

    _check("path", path, (str, os.PathLike), "a string or a path")
    _check_common(settings)
    return Status.from_dict(project_status(project.find_root(path), settings or load_settings()))


def doctor(path: PathLike = ".", *, settings: Settings | None = None) -> Doctor:
    """An end-to-end self-test: the settings load, the kernels, the embedder answers, indexes
    can be written, a probe file is indexed and found by a search (its index removed after),
    and the indexes of the project at ``path`` are checked in full (database, full-text table,
    vector files and their checksums, every row one an embedder makes, a few drawn at random
    embedded again). A failure is a check with ``ok`` False and its ``fix``, never an
    exception."""
    from kenning.services.self_test import run_checks

    _check("path", path, (str, os.PathLike), "a string or a path")
    _check_common(settings)
    checks = tuple(run_checks(path, settings))
    return Doctor(all(check.ok for check in checks), checks)
