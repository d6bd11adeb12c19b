"""The projects one server may touch, and the per-project state that keeps them fresh.

Only the projects named at start (``--project``, else the config's ``[[projects]]``, else the
working directory's project) are served; a tool argument naming anything else is refused. A
root that is missing is kept as a placeholder that reports its error, so the other projects
keep working, and is looked up again on each call in case it reappears.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kenning.config import Settings
from kenning.errors import KenningError, UsageError
from kenning.project import check_root, find_root

if TYPE_CHECKING:
    from kenning.retrieval import ProjectRef


@dataclass
class Served:
    """One served project: ``ref`` once its root resolves, else the ``error`` that says why not."""

    name: str  # as configured or given: an id or a root path
    ref: ProjectRef | None = None
    error: KenningError | None = None
    retry: bool = True  # look the root up again on each call (False: the error is final)
    last_error: KenningError | None = None  # of this server's last indexing job
    job: Job | None = None

    @property
    def id(self) -> str:
        return self.ref.id if self.ref else self.name


@dataclass
class Job:
    """A refresh running on a worker thread (``code_reindex`` or a first index's embedding)."""

    full: bool
    done: threading.Event = field(default_factory=threading.Event)
    progress: dict[str, Any] | None = None
    phase_started: float = 0.0  # monotonic time the phase of ``progress`` began
    result: dict[str, Any] | None = None
    error: KenningError | None = None

    @property
    def running(self) -> bool:
        return not self.done.is_set()


def _is_path(name: str) -> bool:
    """Whether a project argument is meant as a path (a bare word is meant as an id)."""
    return "/" in name or name.startswith(("~", "."))


def _lexical(path: str) -> Path:
    """``path`` made absolute and normalised as text: no symlink or file is looked at."""
    return Path(os.path.abspath(os.path.expanduser(path)))


def _resolve(settings: Settings, name: str) -> ProjectRef:
    """The project a configured id or a root path names. Each entry is resolved on its own (not
    with ``resolve_projects``, which needs every configured root present), and the id is the
    one its index records, so it matches the ids in search results."""
    from kenning.retrieval import ProjectRef
    from kenning.store import project_id_for

    entry = next((p for p in settings.projects if str(p.get("id")) == name), None)
    path = Path(str(entry["root"]) if entry and entry.get("root") else name).expanduser()
    if not path.exists():
        if entry is None and not any(str(p.get("root")) == name for p in settings.projects):
            known = ", ".join(str(p.get("id") or p.get("root")) for p in settings.projects)
            raise UsageError(f"{name} is neither a directory nor a configured project id.",
                             hint=f"Configured projects: {known or 'none'}.")
        raise UsageError(f"The root of project {name}, {path}, does not exist.",
                         hint="Restore it, or remove the project from the kenning config.")
    root = find_root(path)
    check_root(root, force=settings["index.force_root"], first_index=False)
    return ProjectRef(project_id_for(root, settings), root)


class Registry:
    """The served projects, looked up by id or by a path inside one of their roots."""

    def __init__(self, settings: Settings, names: Sequence[str]) -> None:
        self.settings = settings
        self.projects: list[Served] = []
        if names:
            wanted = list(names)
        elif settings.projects:
            wanted = [str(p.get("id") or p.get("root")) for p in settings.projects]
        else:
            wanted = []
        if not wanted:  # the working directory's project
            try:  # an agent started outside any project: never index a whole home or disk
                ref = _resolve(settings, str(Path.cwd()))
            except UsageError as error:
                self.projects = [Served(str(Path.cwd()), error=error, retry=False)]
            else:
                self.projects = [Served(ref.id, ref=ref)]
            return
        for name in dict.fromkeys(wanted):
            self.projects.append(self._served(name))

    def _served(self, name: str) -> Served:
        served = Served(name)
        self._retry(served)
        return served

    def _retry(self, served: Served) -> None:
        """Check ``served``'s root again: a root may vanish, or reappear, while serving."""
        if not served.retry:
            return
        if served.ref is not None:
            served.error = None if served.ref.root.is_dir() else UsageError(
                f"The root of project {served.id}, {served.ref.root}, no longer exists.",
                hint="Restore it, or remove the project from the kenning config.")
            return
        try:
            served.ref, served.error = _resolve(self.settings, served.name), None
        except KenningError as exc:
            served.error = exc

    def ids(self) -> list[str]:
        return [p.id for p in self.projects]

    def live(self) -> list[Served]:
        """The projects whose root exists right now."""
        for served in self.projects:
            self._retry(served)
        return [p for p in self.projects if p.error is None and p.ref is not None]

    def missing(self) -> list[Served]:
        return [p for p in self.projects if p.error is not None]

    def select(self, project: str | None) -> list[Served]:
        """All live projects, or the one ``project`` names (an id, or a path inside a root).

        A path is matched by its text alone, never looked up on disk, and anything that names
        no served project gets the same answer, so no call tells whether a path outside the
        served roots exists."""
        live = self.live()
        if project is None:
            return live
        for served in self.projects:
            if project in (served.id, served.name):
                return [self._usable(served)]
        if "\0" in project:
            raise UsageError(f"The project {project!r} contains a NUL character, which no id "
                             "or path does.", hint=self._served_hint())
        if _is_path(project):
            target = _lexical(project)
            for served in live:
                assert served.ref is not None
                for root in {served.ref.root, _lexical(served.name)}:
                    if target == root or root in target.parents:
                        return [served]
        raise UsageError(f"Unknown project {project!r}: not a served project's id, and outside "
                         "the projects this server serves.", hint=self._served_hint())

    def _usable(self, served: Served) -> Served:
        self._retry(served)
        if served.error is not None:
            raise served.error
        return served

    def _served_hint(self) -> str:
        return "Served projects: " + ", ".join(self.ids()) + "."
