"""What the tools do, as plain calls returning the CLI's JSON shapes; no MCP types here.

Freshness is the library's policy (``kenning.services.freshness``), configured with
``mcp.refresh_interval``: before a search each project is refreshed at most once per interval,
a few missing vectors are embedded at once and a larger backlog on a worker thread of this
server (as the CLI leaves it to a background `kenning index`). Long work (a first index's
embedding, ``code_reindex``) runs on that thread while searches keep answering from the last
snapshot.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kenning.config import Settings
from kenning.errors import EmbedderError, KenningError, UsageError
from kenning.indexing.state import pace
from kenning.mcpserver.projects import Job, Registry, Served
from kenning.services.freshness import Freshness, Policy
from kenning.store.ids import ChunkId

if TYPE_CHECKING:
    from kenning.embedding import Embedder
    from kenning.retrieval.budget import Frame

log = logging.getLogger("kenning.mcp")


class Service:
    """The served projects, one embedder, the library's freshness policy as this server
    configures it, and the worker threads that compute what a search leaves to them."""

    def __init__(self, settings: Settings, registry: Registry, embedder: Embedder) -> None:
        self.settings = settings
        self.registry = registry
        self.embedder = embedder
        self._jobs_lock = threading.Lock()
        # one indexing job at a time per process, so reindexing many projects does not flood
        # the embedder; the others wait their turn
        self._job_slot = threading.Semaphore(1)
        self.freshness = Freshness(Policy.from_settings(
            settings, refresh_interval=settings["mcp.refresh_interval"]))

    # -- search ---------------------------------------------------------------------------

    def search(self, query: str, *, path_filter: str | None = None, limit: int = 10,
               kind: str | None = None, language: str | None = None,
               project: str | None = None, calls: bool = False,
               budget_tokens: int | None = None,
               budget_frame: Frame | None = None) -> dict[str, Any]:
        """A search whose refreshes and query wait for the embedder at most search.timeout
        seconds in all; past it the answer comes from words and symbols, with a warning."""
        from kenning.embedding import deadline

        with deadline.within(self.settings["search.timeout"]):
            return self._search(query, path_filter=path_filter, limit=limit, kind=kind,
                                language=language, project=project, calls=calls,
                                budget_tokens=budget_tokens, budget_frame=budget_frame)

    def _search(self, query: str, *, path_filter: str | None, limit: int, kind: str | None,
                language: str | None, project: str | None, calls: bool,
                budget_tokens: int | None, budget_frame: Frame | None) -> dict[str, Any]:
        from kenning.retrieval.filters import normalize_path_filter
        from kenning.services.search import execute, request

        asked = request(query, limit, path_filter, language, kind, budget_tokens)
        if project is None and path_filter and Path(path_filter).expanduser().is_absolute():
            project = path_filter  # an absolute filter names the project it lies in
        if project is not None and self._published_only(project):
            return execute(asked, [], settings=self._shared_settings(), refresh=False,
                           embedder=self.embedder, freshness=self.freshness,
                           shared_projects=[project], budget_frame=budget_frame)
        targets = self.registry.select(project)
        warnings: list[str] = []
        if project is None:
            warnings += [f"Project {p.id} skipped: {p.error.message}"
                         for p in self.registry.missing() if p.error]
        if not targets:
            raise UsageError("None of the served projects is available.",
                             hint=" ".join(warnings) or None)
        if path_filter is not None:  # refuse a filter that escapes a root before any work
            for served in targets:
                if served.ref is not None:
                    normalize_path_filter(path_filter, served.ref.root)
        refs = [served.ref for served in targets if served.ref is not None]
        result = execute(asked, refs, settings=self.settings, embedder=self.embedder,
                         freshness=self.freshness, calls=calls, budget_frame=budget_frame)
        for root in result["vectors_deferred"]:  # computed here, on a worker thread
            self.start_job(next(s for s in targets if s.ref and str(s.ref.root) == root),
                           full=False)
        result["warnings"] = warnings + list(result.get("warnings") or [])
        return result

    def related(self, location: str, *, path_filter: str | None = None, limit: int = 10,
                kind: str | None = None, language: str | None = None,
                project: str | None = None, calls: bool = False) -> dict[str, Any]:
        """``related`` over the served projects: the one whose root holds the location."""
        from kenning.embedding import deadline
        from kenning.services.related import related

        targets = [served for served in self.registry.select(project) if served.ref]
        if not targets:
            raise UsageError("None of the served projects is available.")
        with deadline.within(self.settings["search.timeout"]):
            result = related(location, [served.ref for served in targets if served.ref],
                             settings=self.settings, limit=limit, path_filter=path_filter,
                             language=language, kind=kind, embedder=self.embedder,
                             freshness=self.freshness, with_calls=calls)
        for root in result["vectors_deferred"]:  # computed here, on a worker thread
            self.start_job(next(s for s in targets if s.ref and str(s.ref.root) == root),
                           full=False)
        return result

    def _published_only(self, project: str) -> bool:
        """A project id this server does not serve, searched in the shared index."""
        return (self.settings["search.backend"] != "local" and not Path(project).is_absolute()
                and all(project not in (p.id, p.name) for p in self.registry.projects))

    def _shared_settings(self) -> Settings:
        from dataclasses import replace

        return replace(self.settings, values={**self.settings.values,
                                              "search.backend": "shared"})

    def get_chunk(self, chunk_id: str, *, scope: str = "declaration", context_lines: int = 0,
                  expect_hash: str | None = None) -> dict[str, Any]:
        from kenning.services.chunks import get_chunk

        wanted = ChunkId.parse(chunk_id)
        if self._published_only(wanted.project):  # a result of the shared index
            return get_chunk(str(wanted), [], settings=self._shared_settings(),
                             embedder=self.embedder, scope=scope, context_lines=context_lines,
                             expect_hash=expect_hash)
        served = self.registry.select(wanted.project)
        return get_chunk(str(wanted), [p.ref for p in served if p.ref],
                         settings=self.settings, scope=scope, context_lines=context_lines,
                         expect_hash=expect_hash)

    def find_repositories(self, query: str, *, limit: int = 10) -> dict[str, Any]:
        """Served projects ranked by their best hit for ``query``."""
        found = self.search(query, limit=max(limit, 5 * len(self.registry.projects)))
        best: dict[str, dict[str, Any]] = {}
        for hit in found["results"]:
            entry = best.setdefault(hit["project"], {"project": hit["project"],
                                                     "score": hit["score"], "hits": 0,
                                                     "top_paths": []})
            entry["hits"] += 1
            if hit["path"] not in entry["top_paths"] and len(entry["top_paths"]) < 3:
                entry["top_paths"].append(hit["path"])
        ranked = sorted(best.values(), key=lambda e: -e["score"])
        roots = {p.id: str(p.ref.root) for p in self.registry.projects if p.ref}
        for entry in ranked:
            entry["root"] = roots.get(entry["project"])
        without = [p.id for p in self.registry.live() if p.id not in best]
        return {"type": "repositories", "query": query, "repositories": ranked[:limit],
                "without_hits": without, "warnings": found["warnings"]}

    def _refresh(self, served: Served, *, full: bool,
                 progress: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """A whole refresh of ``served`` (every vector, the ANN graph) on a worker thread."""
        from kenning.indexing.indexer import refresh

        assert served.ref is not None
        with self.freshness.working(served.ref.root):
            try:
                result = refresh(served.ref.root, self.settings, embedder=self.embedder,
                                 full=full, wait=False, progress=progress)
            except EmbedderError as exc:
                self.freshness.embedder_failed(exc)
                raise
        self.freshness.remember(served.ref.root, result)
        return result.to_dict()

    # -- background indexing --------------------------------------------------------------

    def start_job(self, served: Served, *, full: bool) -> Job:
        """Start a refresh of ``served`` on a worker thread, or return the one running."""
        with self._jobs_lock:
            if served.job is not None and served.job.running:
                return served.job
            job = served.job = Job(full=full)
        threading.Thread(target=self._run_job, args=(served, job), daemon=True,
                         name=f"kenning-index-{served.id}").start()
        return job

    def _run_job(self, served: Served, job: Job) -> None:
        def progress(event: dict[str, Any]) -> None:
            if job.progress is None or job.progress.get("type") != event.get("type"):
                job.phase_started = time.monotonic()
            job.progress = event

        job.progress = {"type": "queued"}
        try:
            with self._job_slot:
                job.result = self._refresh(served, full=job.full, progress=progress)
            served.last_error = None
        except KenningError as exc:
            job.error = served.last_error = exc
        except Exception as exc:  # a bug must not kill the server: report it instead
            log.exception("indexing %s failed", served.id)
            job.error = served.last_error = KenningError(
                f"Indexing {served.id} failed unexpectedly: {exc!r}.")
        finally:
            job.done.set()

    def indexing(self) -> bool:
        """Whether a worker thread is indexing right now."""
        return any(p.job is not None and p.job.running for p in self.registry.projects)

    def start_reindex(self, project: str | None, *, full: bool) -> list[Started]:
        """Start (or join) an indexing job for ``project``, or for every live project."""
        targets = self.registry.select(project)
        if not targets:
            raise UsageError("None of the served projects is available.")
        started = []
        for served in targets:
            joined = served.job is not None and served.job.running
            started.append(Started(served, self.start_job(served, full=full), joined))
        return started

    # -- status ---------------------------------------------------------------------------

    def status(self, project: str | None) -> dict[str, Any]:
        from kenning.embedding import deadline

        targets = self.registry.select(project)
        # a hung embedder must not hold the report longer than it would hold a search
        with deadline.within(self.settings["search.timeout"]):
            reports = [self._project_status(p) for p in targets]
            if project is None:
                reports += [self._missing_status(p) for p in self.registry.missing()]
            return {"type": "index_status", "embedder": self._embedder_status(),
                    "projects": reports}

    def _embedder_status(self) -> dict[str, Any]:
        report: dict[str, Any] = {"backend": self.settings["embedder.backend"],
                                  "model": self.embedder.model}
        try:
            self.embedder.check()
            report["dims"] = self.embedder.dims  # a remote server may be asked for them
        except EmbedderError as exc:
            self.freshness.embedder_failed(exc)
            report.update(ok=False, problem=exc.to_dict())
        else:
            self.freshness.embedder_answered()
            report["ok"] = True
        return report

    def _missing_status(self, served: Served) -> dict[str, Any]:
        """The library's record of a served project whose root cannot be looked at now."""
        from kenning.services.index_admin import unreadable_status

        assert served.error is not None
        root = served.ref.root if served.ref is not None else Path(served.name)
        return dict(unreadable_status(root, self.settings, served.error, project=served.id))

    def _project_status(self, served: Served) -> dict[str, Any]:
        """The library's status record, with what this server knows besides: its indexing
        job's progress, its last refresh and the last error it met."""
        from kenning.services.index_admin import project_status

        assert served.ref is not None
        report: dict[str, Any] = dict(project_status(served.ref.root, self.settings))
        if report["state"] == "not indexed":
            report["problems"][0]["hint"] = ("code_reindex indexes it; so does the first "
                                             "code_search.")
        report["project"] = served.id
        if served.job is not None and served.job.running:
            report["state"] = "indexing"
            report["progress"] = served.job.progress
        last = self.freshness.last(served.ref.root)
        if last is not None:
            report["last_refresh"] = last
        if served.last_error is not None:
            report["problems"].append(served.last_error.to_dict())
            report["healthy"] = False
        return report


@dataclass
class Started:
    """An indexing job a ``code_reindex`` call started, or joined when one was running."""

    served: Served
    job: Job
    joined: bool


def reindex_report(started: list[Started]) -> dict[str, Any]:
    reports = []
    for item in started:
        job = item.job
        report: dict[str, Any] = {"project": item.served.id, "full": job.full}
        if item.joined:
            report["note"] = "An indexing run was already under way; this reports on it."
        if job.running:
            report["state"] = "running"
            report["progress"] = job.progress
        elif job.error is not None:
            report["state"] = "failed"
            report["error"] = job.error.to_dict()
        elif (job.result or {}).get("busy"):
            report["state"] = "busy"
            report["note"] = ("Another process is indexing this project; searches are "
                              "answered from its last snapshot meanwhile.")
        else:
            report["state"] = "finished"
            report["result"] = job.result
        reports.append(report)
    return {"type": "reindex", "projects": reports}


def progress_message(started: list[Started]) -> str:
    """One line on where the running jobs are, for MCP progress notifications."""
    parts = []
    for item in started:
        event = item.job.progress or {}
        if event.get("type") in ("embedding", "chunking"):
            done, total = int(event.get("done") or 0), int(event.get("total") or 0)
            rate = pace(done, total, time.monotonic() - item.job.phase_started)
        if not item.job.running:
            parts.append(f"{item.served.id}: done")
        elif event.get("type") == "embedding":
            parts.append(f"{item.served.id}: embedding {done}/{total}{rate}")
        elif event.get("type") == "chunking":
            parts.append(f"{item.served.id}: chunking {done}/{total} files{rate}")
        else:
            parts.append(f"{item.served.id}: {event.get('type') or 'starting'}")
    return "; ".join(parts)
