"""Which projects a search covers: explicit roots or configured ids, else the configured list,
else the project of the working directory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kenning import project
from kenning.config import Settings
from kenning.errors import UsageError


@dataclass(frozen=True)
class ProjectRef:
    id: str
    root: Path


def _configured(settings: Settings) -> list[ProjectRef]:
    refs = []
    for entry in settings.projects:
        if isinstance(entry, Mapping) and entry.get("root"):
            root = project.find_root(Path(str(entry["root"])).expanduser())
            refs.append(ProjectRef(str(entry.get("id") or project.project_id(root)), root))
    return refs


def _ref_for_root(root: Path, configured: list[ProjectRef]) -> ProjectRef:
    for ref in configured:
        if ref.root == root:
            return ref
    return ProjectRef(project.project_id(root), root)


def _exists(path: str | Path) -> bool:
    try:
        return Path(path).expanduser().exists()
    except (OSError, RuntimeError):  # a name too long, a ~user this machine does not know
        return False


def resolve_projects(settings: Settings,
                     roots_or_ids: Sequence[str | Path] | None = None) -> list[ProjectRef]:
    """Project refs for roots or configured ids; de-duplicated, in the order given."""
    configured = _configured(settings)
    if not roots_or_ids:
        return configured or [_ref_for_root(project.find_root(Path.cwd()), configured)]
    by_id = {ref.id: ref for ref in configured}
    refs: list[ProjectRef] = []
    for item in roots_or_ids:
        if isinstance(item, str) and item in by_id:
            ref = by_id[item]
        elif _exists(item):
            ref = _ref_for_root(project.find_root(item), configured)
        else:
            known = ", ".join(sorted(by_id)) or "none configured"
            raise UsageError(f"{item} is not a directory, nor a configured project id.",
                             hint=f"Configured project ids: {known}.")
        if ref not in refs:
            refs.append(ref)
    return refs
