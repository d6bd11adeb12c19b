"""Plan, then apply: the file edits for setting kenning up in an agent, or taking it out.

A plan is computed in full before anything is written: every file it would touch, with its
exact new content. Any refusal (an unparsable file, a file that is not kenning's) therefore
happens before the first write. Applying a plan backs up each file it edits into one folder
per run, ``$KENNING_HOME/backups/agents/<UTC time>-<action>/`` (the file under its absolute
path, plus ``manifest.json``), then replaces each file atomically (temporary file +
``os.replace``), keeping its permission bits and writing through symlinks.

Folders that setup creates for its files are recorded in
``$KENNING_HOME/agents/created-folders.json``; removal deletes a folder only when it is
recorded there and left empty, so a folder that existed before setup (an empty ``~/.codex``,
say) stays. Likewise the JSON containers setup creates in a file (``"hooks"`` and its
``"SessionStart"`` array) are recorded per file in ``created-containers.json``, and removal
deletes only those, so a user's own empty ``"hooks": {}`` stays, byte for byte.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from kenning.agents import jsonedit, launcher, locations
from kenning.agents.components import edits
from kenning.agents.templates import REVIEW_SKILL_NAME, SKILL_NAME
from kenning.errors import AgentSetupError
from kenning.project import kenning_home

AGENTS = ("claude", "codex", "gemini", "cursor", "junie")
COMPONENTS = ("mcp", "instructions", "skill", "review", "subagent", "hooks", "search-first")
# Everything but the search-first hook, which refuses tool calls and so is asked for: the
# session-start hook starts a first index in the background when a session opens, so the
# agent's first search finds an index instead of waiting for one.
RECOMMENDED = tuple(c for c in COMPONENTS if c != "search-first")


@dataclass
class FileChange:
    path: Path
    shown: str  # the path as the user reads it (~/... or relative to the project)
    agent: str
    components: list[str]
    old: str | None
    new: str | None
    stop: Path  # empty folders are pruned up to, never including, this one
    # JSON containers setup created in this file (kept from earlier setups); None: not JSON
    created: set[tuple[str, ...]] | None = None

    @property
    def action(self) -> str:
        if self.old == self.new:
            return "unchanged"
        if self.old is None:
            return "create"
        return "delete" if self.new is None else "update"

    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            (self.old or "").splitlines(keepends=True), (self.new or "").splitlines(keepends=True),
            fromfile=f"{self.shown} (now)", tofile=f"{self.shown} (after)",
        ))


@dataclass
class Plan:
    action: str  # "setup" | "remove"
    scope: str
    agents: tuple[str, ...]
    components: tuple[str, ...]
    changes: list[FileChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> list[FileChange]:
        return [c for c in self.changes if c.action != "unchanged"]


def read_text(path: Path, shown: str) -> str | None:
    """A file's text, None when absent; refuses folders and files that are not UTF-8."""
    if not path.exists():
        return None
    if not path.is_file():
        raise AgentSetupError(f"{shown} is not a regular file, so kenning leaves it.")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise AgentSetupError(f"{shown} is not UTF-8 text, so kenning leaves it.") from None
    except OSError as exc:
        raise AgentSetupError(f"{shown} cannot be read ({exc.strerror}).") from None


def _shown(path: Path, place: locations.Place) -> str:
    try:
        rel = path.relative_to(place.base)
    except ValueError:
        return str(path)
    return f"~/{rel.as_posix()}" if place.label == "~" else rel.as_posix()


def make_plan(
    action: str, agents: tuple[str, ...], components: tuple[str, ...], scope: str, project: Path,
    *, explicit: bool = True,
) -> Plan:
    """The plan for ``action`` ("setup" or "remove"); ``explicit`` is False when the components
    are the default set, which silences notes about components an agent lacks."""
    plan = Plan(action, scope, agents, components)
    # The user's own files start this install by its path; a project's files, shared with a
    # team, start whatever kenning is on PATH.
    command = launcher.running() if scope == "user" else launcher.BARE
    by_path: dict[Path, FileChange] = {}
    containers = _read_containers()
    for agent in agents:
        place = locations.PLACES[agent](scope, project)
        for component in components:
            path = place.files.get(component)
            recorded = containers.get(str(path))
            pair = edits(agent, component, command,
                         None if recorded is None else frozenset(recorded))
            if pair is None or path is None:
                if component in place.absent and action == "setup":
                    plan.notes.append(place.absent[component])
                elif explicit:
                    plan.notes.append(f"{agent}: kenning has no {component} for this agent.")
                continue
            change = by_path.get(path)
            if change is None:
                shown = _shown(path, place)
                text = read_text(path, shown)
                change = FileChange(path, shown, agent, [], text, text, place.base)
                by_path[path] = change
                plan.changes.append(change)
            outcome = pair[0 if action == "setup" else 1](change.new, change.shown)
            change.new = outcome.text
            if outcome.created is not None:
                change.created = {*(recorded or ()), *(change.created or ()), *outcome.created}
            if component not in change.components:  # a file two agents share lists it once
                change.components.append(component)
            if outcome.note:
                plan.notes.append(outcome.note)
    return plan


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".kenning-tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _missing_folders(folder: Path) -> list[Path]:
    """``folder`` and its ancestors that do not exist yet."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    return missing


def _kenning_folder(folder: Path, created: set[str]) -> bool:
    """Recorded as made by setup, or the skill's own folder (named after kenning), which
    setups from before the record also made."""
    return str(folder) in created or (folder.name in (SKILL_NAME, REVIEW_SKILL_NAME)
                                      and folder.parent.name == "skills")


def _prune(folder: Path, stop: Path, created: set[str]) -> None:
    """Remove kenning's folders that a deletion left empty, from ``folder`` up to ``stop``."""
    while (folder != stop and stop in folder.parents and _kenning_folder(folder, created)
           and not any(folder.iterdir())):
        folder.rmdir()
        created.discard(str(folder))
        folder = folder.parent


def _created_record() -> Path:
    return kenning_home() / "agents" / "created-folders.json"


def _read_created() -> set[str]:
    """The folders setup recorded as created; unreadable means none, which only ever keeps a
    folder."""
    try:
        folders = json.loads(_created_record().read_text())
    except (OSError, ValueError):
        return set()
    return {f for f in folders if isinstance(f, str)} if isinstance(folders, list) else set()


def _containers_record() -> Path:
    return kenning_home() / "agents" / "created-containers.json"


def _read_containers() -> dict[str, list[tuple[str, ...]]]:
    """Per file, the JSON containers setup recorded as created; unreadable means no record,
    where removal deletes what it leaves empty, as before the record."""
    try:
        files = json.loads(_containers_record().read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(files, dict):
        return {}
    return {path: [tuple(c) for c in found if isinstance(c, list)]
            for path, found in files.items() if isinstance(found, list)}


def _record_containers(action: str, written: list[FileChange]) -> None:
    """Keep, per file, the containers setup created that are still there."""
    before = _read_containers()
    files = dict(before)
    for change in written:
        path = str(change.path)
        if change.new is None:
            files.pop(path, None)
        elif action == "setup" and change.created is not None:
            files[path] = sorted(change.created)
        elif path in files:
            files[path] = [c for c in files[path] if not jsonedit.missing(change.new, c)]
    if files != before:
        _write_atomic(_containers_record(), json.dumps(files, indent=2, sort_keys=True) + "\n")


def _backup_name(path: Path) -> Path:
    drive = path.drive.replace(":", "") or "root"
    return Path(drive, *path.parts[1:])


def apply(plan: Plan) -> Path | None:
    """Write the plan; returns the backup folder (None when no existing file was edited)."""
    changes = plan.changed
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    backups = kenning_home() / "backups" / "agents" / f"{stamp}-{plan.action}"
    targets = []
    for change in changes:  # check every file before writing any
        # A symlinked dotfile is edited where it points, so the link stays intact.
        target = change.path.resolve() if change.path.is_symlink() else change.path
        if read_text(target, change.shown) != change.old:
            raise AgentSetupError(
                f"{change.shown} changed while kenning was preparing its edit; nothing was "
                "written.",
                hint="Run the command again.",
            )
        targets.append(target)
    manifest: list[dict[str, str | None]] = []
    recorded = _read_created()
    # A recorded folder deleted since, and made again by someone else, is not kenning's.
    created = {folder for folder in recorded if os.path.isdir(folder)}
    try:
        for change, target in zip(changes, targets, strict=True):
            entry: dict[str, str | None] = {"path": str(change.path), "action": change.action,
                                            "backup": None}
            if change.old is not None:
                copy = backups / _backup_name(target.absolute())
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(target, copy)
                entry["backup"] = str(copy)
            if change.new is not None:
                new_folders = _missing_folders(target.parent.absolute())
                _write_atomic(target, change.new)
                created.update(map(str, new_folders))
            elif change.path.is_symlink():
                _write_atomic(target, "")  # never delete through a link: empty the file instead
            else:
                target.unlink()
                _prune(target.parent.absolute(), change.stop.absolute(), created)
            manifest.append(entry)
    finally:
        if created != recorded:
            _write_atomic(_created_record(), json.dumps(sorted(created), indent=2) + "\n")
        _record_containers(plan.action, changes[: len(manifest)])
    if not any(entry["backup"] for entry in manifest):
        return None
    (backups / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return backups
