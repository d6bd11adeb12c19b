"""Where the transcripts are, and what they add up to: tokens and tool calls by phase, per
project and per session, how kenning was used and what followed it, and a savings estimate
whose method goes with it.

It only reads: no file is written, nothing is sent.
"""

from __future__ import annotations

import hashlib
import os
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kenning.services.transcripts import readers
from kenning.services.transcripts.calls import PHASES, Call, Session

CLIENTS = ("claude", "codex", "gemini")
FOLLOW_WINDOW = 5  # calls after a kenning lookup that count as what followed it
MIN_TASKS = 5  # tasks each side needs before the savings are estimated

METHOD = {
    "tokens": "Estimated from characters at 3 a token: each tool call's input and the result "
              "the transcript holds, the agent's own text (other) and the reasoning it shows "
              "(thinking; where Codex or Gemini CLI report more reasoning tokens, those). "
              "reported_usage is what each client recorded for its model calls, as recorded.",
    "phases": "exploring: kenning searches, grep, glob (find, ls) and reads; editing: edits, "
              "writes and patches; running: other shell commands; thinking: reasoning; other: "
              "the agent's text and every other tool.",
    "follow_ups": f"After each kenning search or related lookup, the next {FOLLOW_WINDOW} tool "
                  "calls of the same request (up to the next lookup): a read of a file the "
                  "lookup named, and any grep or glob.",
    "savings": "Requests (the calls between two user messages) with at least one exploring "
               "call are split into those with a kenning lookup and those without; the "
               "estimate is (mean exploring tokens without - mean with) x requests with, not "
               "below zero, given only when each side has at least "
               f"{MIN_TASKS} requests. It compares different requests of these transcripts, "
               "not the same request done both ways: an observation, not a measurement.",
}


@dataclass(frozen=True)
class Source:
    client: str
    root: Path
    pattern: str

    def files(self) -> list[Path]:
        return sorted(p for p in self.root.glob(self.pattern) if p.is_file())


def sources(home: Path | None = None) -> list[Source]:
    """Where each client keeps its transcripts (honouring CLAUDE_CONFIG_DIR and CODEX_HOME)."""
    home = home or Path.home()
    claude = os.environ.get("CLAUDE_CONFIG_DIR")
    codex = os.environ.get("CODEX_HOME")
    return [
        Source("claude", (Path(claude).expanduser() if claude else home / ".claude") / "projects",
               "**/*.jsonl"),
        Source("codex", (Path(codex).expanduser() if codex else home / ".codex") / "sessions",
               "**/*.jsonl"),
        Source("gemini", home / ".gemini" / "tmp", "*/chats/*.json"),
    ]


_READERS: dict[str, Callable[[Path], Session]] = {
    "claude": readers.claude, "codex": readers.codex, "gemini": readers.gemini}


def _in_project(session: Session, project: Path) -> bool:
    if session.project.startswith("gemini:"):
        return session.project == "gemini:" + hashlib.sha256(str(project).encode()).hexdigest()
    try:
        return Path(session.project).resolve().is_relative_to(project)
    except (OSError, ValueError):
        return False


@dataclass
class Totals:
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PHASES, 0))
    calls: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PHASES, 0))
    kinds: dict[str, int] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)
    lookups: int = 0
    read_hit: int = 0
    grep_after: int = 0
    sessions: int = 0
    with_kenning: int = 0

    def add(self, other: Totals) -> None:
        for mine, theirs in ((self.tokens, other.tokens), (self.calls, other.calls),
                             (self.kinds, other.kinds), (self.usage, other.usage)):
            for key, value in theirs.items():
                mine[key] = mine.get(key, 0) + value
        self.lookups += other.lookups
        self.read_hit += other.read_hit
        self.grep_after += other.grep_after
        self.sessions += other.sessions
        self.with_kenning += other.with_kenning

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "calls": self.calls, "calls_by_kind": self.kinds,
                "reported_usage": self.usage,
                "kenning": {"lookups": self.lookups, "sessions_with": self.with_kenning,
                            "followed_by_read_of_hit": self.read_hit,
                            "followed_by_grep_or_glob": self.grep_after}}


def _read_a_hit(call: Call, lookup: Call) -> bool:
    if call.kind == "read" and call.name.endswith("code_get_chunk"):
        return True
    return call.kind == "read" and any(
        path == hit or path.endswith("/" + hit) for path in call.paths for hit in lookup.hits)


def _follow_ups(task: list[Call]) -> tuple[int, int, int]:
    lookups = read_hit = grep_after = 0
    for i, call in enumerate(task):
        if not call.lookup:
            continue
        lookups += 1
        after: list[Call] = []
        for later in task[i + 1 : i + 1 + FOLLOW_WINDOW]:
            if later.lookup:
                break
            after.append(later)
        read_hit += any(_read_a_hit(c, call) for c in after)
        grep_after += any(c.kind in ("grep", "glob") for c in after)
    return lookups, read_hit, grep_after


def totals(session: Session) -> Totals:
    found = Totals(sessions=1, usage=dict(session.usage))
    for task in session.tasks:
        for call in task:
            found.tokens[call.phase] += call.tokens
            found.calls[call.phase] += 1
            found.kinds[call.kind] = found.kinds.get(call.kind, 0) + 1
        lookups, read_hit, grep_after = _follow_ups(task)
        found.lookups += lookups
        found.read_hit += read_hit
        found.grep_after += grep_after
    found.tokens["thinking"] += session.thinking
    found.tokens["other"] += session.text
    found.with_kenning = int(found.lookups > 0)
    return found


@dataclass
class Savings:
    with_kenning: list[int] = field(default_factory=list)  # exploring tokens per request
    without: list[int] = field(default_factory=list)

    def add(self, session: Session) -> None:
        for task in session.tasks:
            exploring = [c for c in task if c.phase == "exploring"]
            if exploring:
                side = self.with_kenning if any(c.lookup for c in task) else self.without
                side.append(sum(c.tokens for c in exploring))

    def to_dict(self) -> dict[str, Any]:
        enough = min(len(self.with_kenning), len(self.without)) >= MIN_TASKS
        mean_with = statistics.fmean(self.with_kenning) if self.with_kenning else None
        mean_without = statistics.fmean(self.without) if self.without else None
        estimate = None
        if enough and mean_with is not None and mean_without is not None:
            estimate = max(0, round((mean_without - mean_with) * len(self.with_kenning)))
        return {"tokens_saved": estimate, "requests_with_kenning": len(self.with_kenning),
                "requests_without": len(self.without),
                "mean_exploring_tokens_with": None if mean_with is None else round(mean_with),
                "mean_exploring_tokens_without":
                    None if mean_without is None else round(mean_without),
                "method": METHOD["savings"]}


Progress = Callable[[int, int], None]


@dataclass
class _Entry:
    """One session's record; a session's subagent files (Claude Code) add to it."""

    client: str
    id: str
    project: str
    started: datetime | None
    ended: datetime | None
    requests: int
    totals: Totals

    def to_dict(self) -> dict[str, Any]:
        return {"client": self.client, "id": self.id, "project": self.project,
                "started": self.started.isoformat() if self.started else None,
                "ended": self.ended.isoformat() if self.ended else None,
                "requests": self.requests, **self.totals.to_dict()}


@dataclass
class Analysis:
    since: datetime | None
    project: Path | None
    files: int = 0
    malformed: int = 0
    all: Totals = field(default_factory=Totals)
    clients: dict[str, int] = field(default_factory=dict)
    projects: dict[str, Totals] = field(default_factory=dict)
    sessions: dict[tuple[str, str], _Entry] = field(default_factory=dict)
    savings: Savings = field(default_factory=Savings)

    def add(self, session: Session) -> None:
        found = totals(session)
        requests = sum(1 for task in session.tasks if task)
        entry = self.sessions.get((session.client, session.id))
        if entry is None:
            self.sessions[(session.client, session.id)] = _Entry(
                session.client, session.id, session.project, session.started, session.ended,
                requests, found)
            self.clients[session.client] = self.clients.get(session.client, 0) + 1
        else:  # another file of a session already counted
            found.sessions, found.with_kenning = 0, int(found.lookups > 0 and not
                                                        entry.totals.lookups)
            entry.totals.add(found)
            entry.started = min(filter(None, (entry.started, session.started)), default=None)
            entry.ended = max(filter(None, (entry.ended, session.ended)), default=None)
        self.all.add(found)
        self.projects.setdefault(entry.project if entry else session.project,
                                 Totals()).add(found)
        self.savings.add(session)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "analyze_result",
            "since": self.since.isoformat() if self.since else None,
            "project": str(self.project) if self.project else None,
            "files_read": self.files, "malformed_lines_skipped": self.malformed,
            "sessions_count": self.all.sessions, "sessions_by_client": self.clients,
            **self.all.to_dict(),
            "savings": self.savings.to_dict(),
            "projects": [{"project": name, "sessions": t.sessions, **t.to_dict()}
                         for name, t in sorted(self.projects.items(),
                                               key=lambda kv: -sum(kv[1].tokens.values()))],
            "sessions": [entry.to_dict() for entry in self.sessions.values()],
            "method": METHOD,
        }


def analyze(found: Iterable[Source], *, since: datetime | None = None,
            project: Path | None = None, progress: Progress | None = None) -> Analysis:
    """Read every transcript of ``found`` (those changed since ``since``, of ``project``)."""
    result = Analysis(since, project)
    files = [(source.client, path) for source in found for path in source.files()]
    if since is not None:
        stamp = since.timestamp()
        files = [(c, p) for c, p in files if _mtime(p) >= stamp]
    for done, (client, path) in enumerate(files, 1):
        session = _READERS[client](path)
        result.files += 1
        result.malformed += session.malformed
        if progress is not None:
            progress(done, len(files))
        if project is not None and not _in_project(session, project):
            continue
        if since is not None and (session.ended is None or session.ended < since):
            continue
        if any(session.tasks) or session.usage:
            result.add(session)
    return result


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
