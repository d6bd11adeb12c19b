"""``impact``: the declarations a diff changes, each with its callers, callees, tests and the
code most like it, for a review.

The diff is git's: the work tree (staged or not, and untracked files) against ``HEAD`` by
default, against a revision (``main``: what this branch changed), or between two (``A..B``,
``A...B``; their lines are read as the work tree has them, so a file that differs from ``B``
is named in a warning). A hunk marks the lines it adds or changes in the new version; a hunk
that only deletes marks the lines on either side. Each declaration of the index (a function,
a class, a method inside a class that is one chunk) that holds a marked line is changed. Its
callers and callees come from the calls the index read (``retrieval.calls``, linked by name),
its tests and similar code from ``related`` restricted to tests and to code.
"""

from __future__ import annotations

import codecs
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kenning.config import Settings
from kenning.errors import UsageError
from kenning.retrieval import calls
from kenning.retrieval.projects import ProjectRef
from kenning.services.related import refreshed
from kenning.services.related import related as run_related

MAX_DECLARATIONS = 40  # each costs two related lookups
_HUNK = re.compile(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_RANGE = re.compile(r"[^.]+(\.\.\.?)[^.]+")


@dataclass
class FileChange:
    path: str  # in the new version, relative to the root
    status: str  # added, modified, renamed, deleted
    old_path: str | None = None
    lines: list[tuple[int, int]] = field(default_factory=list)  # marked, in the new version


def _unquoted(path: str) -> str:
    """A path as git prints it: C-quoted when it has unusual characters."""
    if path.startswith('"') and path.endswith('"'):
        raw = codecs.escape_decode(path[1:-1].encode())[0]
        return raw.decode("utf-8", errors="surrogateescape") if isinstance(raw, bytes) else path
    return path


def _side(line: str, prefix: str) -> str | None:
    name = _unquoted(line[4:].rstrip("\n").split("\t")[0])
    return None if name == "/dev/null" else name.removeprefix(prefix)


def parse_diff(text: str) -> list[FileChange]:
    """The files of a unified diff (``git diff -U0``) with the lines its hunks mark (a pure
    rename has no hunks, and nothing in it changed)."""
    changes: list[FileChange] = []
    old: str | None = None
    current: FileChange | None = None
    for line in text.splitlines():
        if line.startswith("diff --git "):
            current, old = None, None
        elif line.startswith("--- "):
            old = _side(line, "a/")
        elif line.startswith("+++ "):
            new = _side(line, "b/")
            if new is None:
                changes.append(FileChange(old or "", "deleted"))
                current = None
                continue
            status = "added" if old is None else "modified" if old == new else "renamed"
            current = FileChange(new, status, old if status == "renamed" else None)
            changes.append(current)
        elif line.startswith("@@") and current is not None:
            found = _HUNK.match(line)
            if found is None:
                continue
            start, count = int(found.group(1)), int(found.group(2) or "1")
            current.lines.append((start, start + count - 1) if count else
                                 (max(start, 1), start + 1))
    return changes


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(root), "-c", "core.quotePath=false", *args],
                              capture_output=True, text=True, errors="surrogateescape",
                              timeout=120)
    except FileNotFoundError:
        raise UsageError("git is not installed, and impact reads git's diff.") from None
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["git failed"])[0]
        raise UsageError(f"git diff failed in {root}: {reason}",
                         hint="Give revisions git knows (a branch, a tag, a commit, A..B), in "
                              "a git work tree.")
    return done.stdout


def diff(root: Path, revisions: list[str]) -> tuple[list[FileChange], list[str]]:
    """The changes of ``revisions`` (none: the work tree against HEAD, untracked files too)
    and warnings."""
    for revision in revisions:
        if revision.startswith("-") or not revision.strip():
            raise UsageError(f"{revision!r} is not a revision.",
                             hint="Give a branch, a tag, a commit or A..B.")
    if len(revisions) > 2:
        raise UsageError("Give at most two revisions (or one A..B range).")
    args = ["diff", "--no-color", "--no-ext-diff", "-U0", "-M"]
    changes = parse_diff(_git(root, *args, *(revisions or ["HEAD"]), "--"))
    warnings = []
    ends_in_tree = len(revisions) < 2 and not any(_RANGE.fullmatch(r) for r in revisions)
    if ends_in_tree:  # the work tree's new files are changes too
        for path in _git(root, "ls-files", "--others", "--exclude-standard", "-z").split("\0"):
            if path:
                changes.append(FileChange(path, "added", lines=[(1, 1 << 30)]))
    else:
        moved = {c.path for c in parse_diff(_git(root, *args, _target(revisions), "--"))}
        for change in changes:
            if change.path in moved:
                warnings.append(f"{change.path} differs in the work tree from the range's end; "
                                "its lines are read as the work tree has them.")
    for change in changes:
        if change.status == "added" and not change.lines:
            change.lines = [(1, 1 << 30)]  # an empty new file, or one git shows whole
    return changes, warnings


def _target(revisions: list[str]) -> str:
    last = revisions[-1]
    found = _RANGE.fullmatch(last)
    return last.split(found.group(1))[-1] if found else last


def _short(record: dict[str, Any]) -> dict[str, Any]:
    return {key: record[key] for key in ("id", "path", "start_line", "end_line", "kind",
                                         "symbol", "score")}


def _overlap(lines: list[tuple[int, int]], start: int, end: int) -> list[list[int]]:
    return [[max(a, start), min(b, end)] for a, b in lines if a <= end and b >= start]


def _declarations(snap: Any, project: str, change: FileChange,
                  rows: list[Any]) -> list[dict[str, Any]]:
    """The declarations of one file that hold a marked line, in file order."""
    hit = [row for row in rows if row.symbol and _overlap(change.lines, row.start_line,
                                                          row.end_line)]
    named = calls.subjects(snap, [row.id for row in hit])
    members = snap.members_of([row.id for row in hit])
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in hit:
        subject = named[row.id]
        spans = [(m.start_line, m.end_line, m.kind, m.symbol) for m in members.get(row.id, [])
                 if len(subject.parts) == 1
                 and _overlap(change.lines, m.start_line, m.end_line)]
        innermost = [s for s in spans if not any(
            o is not s and s[0] <= o[0] and o[1] <= s[1] for o in spans)]
        if innermost:  # the methods that changed, not their whole class
            targets = [(row.id, *span) for span in innermost]
        else:
            parts = snap.declaration_parts([row.id]).get(row.id) or []
            start = parts[0].start_line if parts else row.start_line
            end = parts[-1].end_line if parts else row.end_line
            first = parts[0].id if parts else row.id
            targets = [(first, start, end, row.kind, row.symbol)]
        for chunk_id, start, end, kind, symbol in targets:
            key = (chunk_id, start, end)
            if key in found:
                continue
            found[key] = {"id": snap.chunk_id(project, chunk_id), "_chunk": chunk_id,
                          "path": change.path, "start_line": start, "end_line": end,
                          "kind": kind, "symbol": symbol,
                          "changed_lines": _overlap(change.lines, start, end)}
    return sorted(found.values(), key=lambda d: (d["start_line"], d["end_line"]))


def impact(ref: ProjectRef, settings: Settings, revisions: list[str], *, limit: int = 3,
           refresh: bool = True) -> dict[str, Any]:
    """An ``impact_result``: each changed declaration with ``limit`` callers, callees, tests
    and similar declarations."""
    from kenning.store import Index

    if limit < 1:
        raise UsageError(f"The limit must be at least 1, got {limit}.")
    changes, warnings = diff(ref.root, revisions)
    deferred: list[str] = []
    if refresh:
        found, deferred = refreshed(ref, settings)
        warnings += found
    index = Index.open(ref.root, settings)
    declarations: list[dict[str, Any]] = []
    files, not_indexed, removed = [], [], []
    with index.snapshot() as snap:
        live = [c for c in changes if c.status != "deleted"]
        indexed = snap.file_states([c.path for c in live])
        rows = snap.file_chunks([c.path for c in live if c.path in indexed])
        for change in changes:
            if change.status == "deleted":
                removed.append(change.path)
                continue
            if change.path not in indexed:
                not_indexed.append(change.path)
                continue
            found_here = _declarations(snap, index.project_id, change, rows.get(change.path, []))
            declarations += found_here
            files.append({"path": change.path, "status": change.status,
                          "old_path": change.old_path,
                          "changed_lines": [list(r) for r in change.lines if r[1] < 1 << 30]
                          if change.status != "added" else None,
                          "declarations": len(found_here)})
        if len(declarations) > MAX_DECLARATIONS:
            warnings.append(f"{len(declarations)} declarations changed; the first "
                            f"{MAX_DECLARATIONS} are shown (give a narrower range).")
            declarations = declarations[:MAX_DECLARATIONS]
        links = calls.linked(snap, index.project_id,
                             [(d["_chunk"], d["symbol"]) for d in declarations], limit)
        revision = snap.revision
    for declaration in declarations:
        chunk = declaration.pop("_chunk")
        declaration.update(links.get(chunk, {"callers": [], "callees": []}))
        location = f"{declaration['path']}:{declaration['start_line']}"
        shown = {declaration["id"]} | {link["id"] for key in ("callers", "callees")
                                       for link in declaration[key]}
        tests = run_related(location, [ref], settings=settings, kind="test", limit=limit,
                            refresh=False, cwd=ref.root)
        similar = run_related(location, [ref], settings=settings, kind="code",
                              limit=limit + len(shown), refresh=False, cwd=ref.root)
        declaration["tests"] = [_short(r) for r in tests["results"]]
        declaration["similar"] = [_short(r) for r in similar["results"]
                                  if r["id"] not in shown][:limit]
    return {"type": "impact_result", "project": index.project_id, "root": str(ref.root),
            "revisions": revisions or ["HEAD"], "revision": revision, "files": files,
            "declarations": declarations, "not_indexed": not_indexed, "removed": removed,
            "warnings": list(dict.fromkeys(warnings)), "vectors_deferred": deferred}
