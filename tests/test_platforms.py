"""The platforms kenning claims are the ones it builds and tests on: Linux and macOS."""

from __future__ import annotations

from pathlib import Path

import tomlkit
import yaml

REPO = Path(__file__).resolve().parent.parent


def _runners(workflow: str) -> set[str]:
    jobs = yaml.safe_load((REPO / ".github" / "workflows" / workflow).read_text())["jobs"]
    found = set()
    for job in jobs.values():
        matrix = job.get("strategy", {}).get("matrix", {})
        found.update(matrix.get("os", []))
        found.update(row["os"] for row in matrix.get("include", []))
    return found


def test_ci_and_wheels_build_only_linux_and_macos() -> None:
    for workflow in ("ci.yml", "wheels.yml"):
        runners = _runners(workflow)
        assert runners, workflow
        assert all(r.startswith(("ubuntu-", "macos-")) for r in runners), (workflow, runners)


def test_classifiers_and_readme_say_linux_and_macos() -> None:
    project = tomlkit.parse((REPO / "pyproject.toml").read_text())["project"]
    systems = {c for c in project["classifiers"] if c.startswith("Operating System")}
    assert systems == {"Operating System :: POSIX :: Linux", "Operating System :: MacOS"}
    assert "runs on Linux and macOS" in (REPO / "README.md").read_text()
