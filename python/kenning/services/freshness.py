"""How fresh a search is: the one refresh-before-search policy of the CLI, the MCP server and
the Python API.

Before a search each project is refreshed (files and chunks: one stat pass when nothing
changed), at most once per ``refresh_interval`` seconds. Chunking stops after
``chunk_seconds`` (a first index of a large tree): the search answers from the files chunked
so far, the project's own code and recent changes first, says how many are still to come, and
the caller leaves the rest to the background, as it does vectors. A search then embeds the
chunks that lack a vector if there are at most ``sync_embed_limit`` of them (seconds of work);
a larger backlog (a first index, a branch switch) is left to the caller, which computes it in
the background (the CLI starts a `kenning index`, the MCP server a worker thread) while the
searches answer from words, symbols and the vectors there are. After the embedder fails,
refreshes skip embedding for ``embedder_retry_after`` seconds, so a search with the embedder
down does not wait on connection retries each time.

Within a process one refresh of a project runs at a time: a search waits at most
``refresh_wait`` seconds for another's, then answers from the last snapshot. Across processes
the index's OS lock decides, and a refresh that finds it held answers at once (``busy``); the
first search to meet another process's indexing says so, the later ones while it lasts do not.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kenning.errors import EmbedderError, IndexError_

if TYPE_CHECKING:
    from kenning.config import Settings
    from kenning.embedding import Embedder
    from kenning.indexing.indexer import RefreshResult
    from kenning.store import Index

Progress = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Policy:
    # Chunks a search embeds before answering (``search.embed_limit``: 64 is about two seconds
    # with the local model); None: all of them, however long that takes.
    sync_embed_limit: int | None = 64
    # Seconds a search's refresh chunks before it commits what it has and answers from that
    # (20 s: with the walk and the query, a first answer within a minute on 2 cores in a
    # 20,000-file tree, benchmarks/README.md); None: every file first.
    chunk_seconds: float | None = 20.0
    # Seconds it chunks at least once the walk is done, however long the walk took: at 100,000
    # files the walk alone can spend chunk_seconds, and the answer would come from one file.
    chunk_floor_seconds: float = 8.0
    # After the embedder fails, refreshes skip embedding (lexical tables stay fresh) this long.
    embedder_retry_after: float = 30.0
    # A project refreshed less than this many seconds ago is not refreshed again.
    refresh_interval: float = 0.0
    # How long a search waits for another search's refresh of the same project before answering
    # from the last snapshot; such refreshes are incremental and normally take milliseconds.
    refresh_wait: float = 5.0

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> Policy:
        return cls(**{"sync_embed_limit": int(settings["search.embed_limit"]), **overrides})


@dataclass
class _Project:
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_refresh: float = float("-inf")  # time.monotonic() of the last refresh attempt
    working: bool = False  # a worker of this process is indexing it
    last: dict[str, Any] | None = None  # what its last refresh did (``RefreshResult``)
    busy_told: bool = False  # a search was told another process indexes it, and still does


@dataclass
class Freshened:
    """What ``Freshness.refresh`` did for one project."""

    root: Path
    result: RefreshResult | None = None  # None: not refreshed (within the interval, or busy)
    deferred: bool = False  # chunks lack vectors: left to be computed in the background
    failure: IndexError_ | None = None  # the refresh failed; the last snapshot answers
    embedder_error: EmbedderError | None = None  # embedding failed; the chunks are fresh
    warnings: list[str] = field(default_factory=list)


class Freshness:
    """The policy's state in one process: per project, when it was last refreshed and who is
    refreshing it; whether the embedder is known to be down."""

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy = policy or Policy()
        self._projects: dict[Path, _Project] = {}
        self._lock = threading.Lock()
        self._embedder_down_until = float("-inf")
        self.embedder_error: EmbedderError | None = None

    def _project(self, root: Path) -> _Project:
        with self._lock:
            return self._projects.setdefault(root, _Project())

    # -- the embedder's health ------------------------------------------------------------

    def embedder_usable(self) -> bool:
        return time.monotonic() >= self._embedder_down_until

    def embedder_failed(self, error: EmbedderError) -> None:
        self.embedder_error = error
        self._embedder_down_until = time.monotonic() + self.policy.embedder_retry_after

    def embedder_answered(self) -> None:
        self._embedder_down_until = float("-inf")

    def down_error(self) -> EmbedderError | None:
        """The embedder's last failure while it is considered down, else None."""
        return None if self.embedder_usable() else self.embedder_error

    # -- refreshing -----------------------------------------------------------------------

    def last(self, root: Path) -> dict[str, Any] | None:
        """What the last refresh of ``root`` in this process did, if there was one."""
        return self._project(root).last

    def remember(self, root: Path, result: RefreshResult) -> None:
        """Keep ``result`` of a refresh made outside ``refresh`` (a worker's) for ``last``."""
        self._project(root).last = result.to_dict()

    @contextmanager
    def working(self, root: Path) -> Iterator[None]:
        """Hold ``root`` for a long refresh (a background worker of this process); searches
        meanwhile answer from the last snapshot instead of waiting."""
        state = self._project(root)
        with state.lock:
            state.working = True
            state.last_refresh = time.monotonic()
            try:
                yield
            finally:
                state.working = False

    def refresh(self, root: Path, settings: Settings, embedder: Embedder, *,
                index: Index | None = None, progress: Progress | None = None) -> Freshened:
        """Refresh ``root`` before a search as the policy says; never raises for a failed
        refresh (``failure`` says why, and the last snapshot answers). ``embedder`` may be a
        ``WordsOnly`` stand-in (then nothing is embedded, nor deferred)."""
        from kenning.embedding import WordsOnly

        done = Freshened(root)
        state = self._project(root)
        if state.working:
            done.warnings.append(f"{root} is being indexed; results come from its last "
                                 "committed snapshot.")
            return done
        if not state.lock.acquire(timeout=self.policy.refresh_wait):
            done.warnings.append(f"{root} is being refreshed; results come from its last "
                                 "committed snapshot.")
            return done
        try:
            if time.monotonic() - state.last_refresh < self.policy.refresh_interval:
                return done
            state.last_refresh = time.monotonic()
            words_only = isinstance(embedder, WordsOnly)
            embed = not words_only and self.embedder_usable()
            self._run(done, settings, embedder, index, progress, embed=embed)
            result = done.result
            if result is not None:
                state.last = result.to_dict()
            busy = result is not None and result.busy
            if busy:
                if not state.busy_told:  # once while it lasts, not on every search
                    done.warnings.append(f"{root} is being indexed by another process; "
                                         "results come from its last snapshot until it is done.")
            elif result is not None and result.embedding_held and result.vectors_missing:
                done.warnings.append(
                    f"{root} is indexed by words and symbols only ({result.vectors_missing} "
                    f"chunks without a vector); `kenning index {root}` embeds them.")
            elif result is not None and (result.vectors_missing or result.files_pending
                                         ) and not words_only:
                done.deferred = True
            if result is not None and result.files_pending:
                done.warnings.append(still_to_chunk(root, result))
            state.busy_told = busy
        finally:
            state.lock.release()
        return done

    def reread(self, root: Path, paths: Collection[str], settings: Settings,
               embedder: Embedder) -> None:
        """Index ``paths`` of ``root`` again, whose bytes a search saw differ from the indexed
        ones while their size and mtime are the same (a stat pass cannot see such an edit);
        never raises: a failed or busy run leaves them to the next search that shows them."""
        from kenning.embedding import WordsOnly
        from kenning.indexing.indexer import refresh

        state = self._project(root)
        if state.working or not state.lock.acquire(timeout=self.policy.refresh_wait):
            return
        try:
            embed = not isinstance(embedder, WordsOnly) and self.embedder_usable()
            with suppress(IndexError_, EmbedderError):
                state.last = refresh(root, settings, embedder=embedder, graph=False,
                                     embed=embed, embed_limit=self.policy.sync_embed_limit,
                                     reread=paths).to_dict()
        finally:
            state.lock.release()

    def _run(self, done: Freshened, settings: Settings, embedder: Embedder, index: Index | None,
             progress: Progress | None, *, embed: bool) -> None:
        """One refresh; the chunks are committed before any embedding, so when the embedder
        fails the words and symbols are fresh all the same."""
        from kenning.indexing.indexer import refresh

        limit = self.policy.sync_embed_limit
        try:
            try:
                done.result = refresh(done.root, settings, embedder=embedder, index=index,
                                      graph=False, embed=embed, embed_limit=limit,
                                      progress=progress, chunk_for=self.policy.chunk_seconds,
                                      chunk_at_least=self.policy.chunk_floor_seconds)
            except EmbedderError as exc:
                self.embedder_failed(exc)
                done.embedder_error = exc
                done.warnings.append(f"The embedder failed while refreshing {done.root}; its "
                                     "new chunks are searchable by words and symbols only for "
                                     "now.")
                done.result = refresh(done.root, settings, embedder=embedder, index=index,
                                      graph=False, embed=False, progress=progress,
                                      chunk_for=self.policy.chunk_seconds,
                                      chunk_at_least=self.policy.chunk_floor_seconds)
            else:
                if embed and done.result.vectors_embedded:
                    self.embedder_answered()
        except IndexError_ as exc:  # a full disk, say: the last snapshot still answers
            done.failure = exc
            done.warnings.append(failed_refresh(done.root, exc.message, exc.hint))


def still_to_chunk(root: Path, result: RefreshResult) -> str:
    """How much of a first index is still to come after a refresh that stopped chunking."""
    return (f"{root} is still being chunked: results come from the {result.files:,} files "
            f"indexed so far (the project's own code and recent changes first); "
            f"{result.files_pending:,} files (about {result.chunks_pending:,} chunks) are still "
            "to come.")


def failed_refresh(root: Path, message: str, hint: str | None) -> str:
    return " ".join(filter(None, [f"Indexing {root} failed ({message.rstrip('.')}), so results "
                                  "come from its last snapshot.", hint]))


_shared: dict[tuple[object, ...], Freshness] = {}
_shared_lock = threading.Lock()


def for_settings(settings: Settings, **overrides: Any) -> Freshness:
    """The freshness of searches that bring none of their own (the CLI, the Python API): the
    policy ``settings`` configure (and ``overrides``, ``Policy`` fields), its state shared by
    every such search in this process with the same embedder (whose back-off it keeps)."""
    policy = Policy.from_settings(settings, **overrides)
    key = (policy, *(settings[k] for k in ("embedder.backend", "embedder.url",
                                           "embedder.model")))
    with _shared_lock:
        return _shared.setdefault(key, Freshness(policy))
