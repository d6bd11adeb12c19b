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
    from kenning.indexer import RefreshResult

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
class Hit(_Typed):
    """One search result: a chunk (or the whole declaration it belongs to) of a project.

    Lines are 1-based and inclusive, bytes half-open, ``path`` relative to the project root;
    ``stale`` means the file changed after it was indexed; ``weak`` that it matches the query
    poorly (the query names an identifier no chunk contains, or it is under the model's
    relevance floor); ``id`` is for ``get_chunk``. Where it comes from: ``revision``, the commit
    the work tree has checked out (None outside git); ``changed_since_index``, whether the
    file's size or mtime differs from the indexed ones, as a refresh compares them;
    ``content_hash``, a short hash of the lines as read of the declaration ``id`` names (the
    result's lines, save where a result joins short neighbours), which
    ``get_chunk(expect_hash=...)`` checks (None for a result of the shared index). ``lines``:
    with a token budget, the ranges ``[first, last]`` its ``content`` holds (None without)."""

    TYPE: ClassVar[str] = "hit"
    id: str
    project: str
    path: str
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    kind: str
    symbol: str | None
    score: float
    content: str
    stale: bool
    weak: bool
    revision: str | None
    changed_since_index: bool
    content_hash: str | None
    lines: list[list[int]] | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # a result in the JSON carries no "type"


@dataclass(frozen=True)
class SearchResult(_Typed):
    """The ranked hits of one search, best first, and what the caller should know
    (``warnings``: a refresh that failed, an embedder that is down, an index still being
    built). ``revision`` is the git HEAD of the indexed snapshot (None across projects).
    ``budget`` is ``{"tokens", "used"}`` of a search with a token budget, else None."""

    TYPE: ClassVar[str] = "search_result"
    query: str
    results: tuple[Hit, ...]
    warnings: tuple[str, ...]
    revision: str | None
    # roots of projects whose new chunks were too many to embed before answering (none from
    # kenning.search, which embeds them all first)
    vectors_deferred: tuple[str, ...]
    budget: dict[str, int] | None

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE, "query": self.query,
                "results": [hit.to_dict() for hit in self.results],
                "warnings": list(self.warnings), "revision": self.revision,
                "vectors_deferred": list(self.vectors_deferred), "budget": self.budget}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchResult:
        checked = cls._checked(data)
        return cls(checked["query"], tuple(Hit.from_dict(hit) for hit in checked["results"]),
                   tuple(checked["warnings"]), checked["revision"],
                   tuple(checked["vectors_deferred"]), checked["budget"])


@dataclass(frozen=True)
class Chunk(_Typed):
    """The code a hit's id names: with ``scope="declaration"`` the whole declaration the chunk
    is part of, with ``"chunk"`` the chunk alone, widened by ``context_lines``."""

    TYPE: ClassVar[str] = "chunk"
    id: str
    project: str
    path: str
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
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
    """What the index of a project holds and whether it is healthy: ``state`` (``not
    indexed``, ``ready``, ``embedding``, ``indexing``, ``unreadable``), the last snapshot
    (``generation``, ``revision``, ``indexed_at`` in ISO 8601 UTC), counts, the files changed
    since (``changed_since``: added, changed, removed), ``problems`` (each ``{"error",
    "message", "hint"}``), the indexer running on it, if any (pid, progress), and its
    generation in the shared index (``published``, when one is configured). The keys are
    those of ``kenning status --json-output`` (``kenning.index_admin.ProjectStatus``)."""

    TYPE: ClassVar[str] = "status"
    project: str
    root: str
    state: str
    healthy: bool
    problems: list[dict[str, Any]]
    index_dir: str | None
    model: str
    dims: int | None
    model_origin: str
    config: str
    generation: int
    status: str | None
    revision: str | None
    branch: str | None
    indexed_at: str | None
    files: int
    chunks: int
    chunks_embedded: int
    size_bytes: int
    changed_since: dict[str, int] | None
    indexer: dict[str, Any] | None
    published: dict[str, Any] | None


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
           kind: str | None = None, refresh: bool = True, budget_tokens: int | None = None,
           settings: Settings | None = None) -> SearchResult:
    """Search one project, or several at once (their hits merged by score).

    ``path_filter`` keeps files under a path or matching a glob, relative to the project root;
    ``language`` one language (``python``, or an extension such as ``py``); ``kind`` one class
    (``code``, ``docs``, ``test``, ``example``, ``generated``, ``completion``) or declaration
    kind (``function``, ``class``, ...). With ``refresh`` the index is brought up to date
    first: one stat pass when nothing changed, and the whole first index (embedding included)
    for a project never indexed. ``budget_tokens`` packs the results as the line ranges that
    best cover the query within that many tokens (at most 100,000; estimated at three
    characters a token): the heads of the top declarations, then their best windows, no line
    twice, in rank order; the result's ``budget`` says how many were used."""
    from kenning.freshness import for_settings
    from kenning.retrieval import search as run

    _check("query", query, (str,), "a string")
    _check("limit", limit, (int,), "an integer")
    _check_text(path_filter=path_filter, language=language, kind=kind)
    _check("refresh", refresh, (bool,), "True or False")
    _check("budget_tokens", budget_tokens, (int, type(None)), "an integer or None")
    _check_common(settings)
    settings = settings or load_settings()
    # no background worker here to leave a backlog of vectors to: they are embedded first
    found = run(query, _roots(paths, settings), settings=settings, limit=limit,
                path_filter=path_filter, language=language, kind=kind, refresh=refresh,
                freshness=for_settings(settings, sync_embed_limit=None),
                budget_tokens=budget_tokens)
    return SearchResult.from_dict(found)


def index(path: PathLike = ".", *, full: bool = False,
          settings: Settings | None = None) -> RefreshResult:
    """Build or bring up to date the index of the project at ``path`` (lifted to its git work
    tree's root), waiting for another process that is indexing it. Only changed files are read
    again and only unseen chunks embedded; ``full`` re-reads every file after checking the
    whole index, and rebuilds what is damaged."""
    from kenning import indexer, project

    _check("path", path, (str, os.PathLike), "a string or a path")
    _check("full", full, (bool,), "True or False")
    _check_common(settings)
    settings = settings or load_settings()
    return indexer.refresh(project.find_root(path), settings, full=full, wait=True)


def get_chunk(chunk_id: str, paths: PathLike | Sequence[PathLike] = ".", *,
              scope: Scope = "declaration", context_lines: int = 0,
              expect_hash: str | None = None, settings: Settings | None = None) -> Chunk:
    """The code a hit's ``id`` names, read from the work tree; ``paths`` are the projects the
    search covered. ``StaleChunkId`` when the index has moved past the id: search again.
    ``expect_hash`` (the hit's ``content_hash``) refuses, with ``StaleContent``, lines that
    changed since that search."""
    from kenning.errors import UsageError
    from kenning.retrieval import get_chunk as read

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
    from kenning.index_admin import project_status

    _check("path", path, (str, os.PathLike), "a string or a path")
    _check_common(settings)
    return Status.from_dict(project_status(project.find_root(path), settings or load_settings()))
