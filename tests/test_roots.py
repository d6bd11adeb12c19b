"""A home folder, a filesystem root or a large folder without a project marker is not indexed
by accident: by the CLI, the session-start hook or the MCP server, unless asked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from index_helpers import git, make_repo
from index_helpers import kenning_cli as kenning
from kenning import project
from kenning.agents.templates import hook_command


def indices() -> list[Path]:
    return sorted((Path(os.environ["KENNING_HOME"]) / "indices").glob("*/*"))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder with a few files of its own, set as HOME."""
    folder = tmp_path / "home"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "todo.py").write_text("def remember_milk():\n    return 'milk'\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.mark.parametrize("command", [["index"], ["index", "--dry-run"], ["search", "milk"]])
def test_the_cli_refuses_the_home_folder(home: Path, command: list[str],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = kenning(capsys, *command, str(home))
    assert code == 2 and "is your home folder, not a project" in err
    assert "--force-root" in err and "index.force_root" in err
    assert indices() == []


def test_the_cli_refuses_a_filesystem_root(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = kenning(capsys, "index", "/")
    assert code == 2 and "is a filesystem root" in err and indices() == []


def test_force_root_indexes_the_home_folder(home: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = kenning(capsys, "index", str(home), "--force-root", "--quiet")
    assert code == 0, err
    code, out, err = kenning(capsys, "search", "remember_milk", str(home), "--force-root")
    assert code == 0 and "notes/todo.py" in out, err
    monkeypatch.setenv("KENNING_INDEX_FORCE_ROOT", "true")  # the config key, as a variable
    assert kenning(capsys, "search", "remember_milk", str(home), "--json-output")[0] == 0


def test_a_large_folder_without_a_project_marker_is_refused_until_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(project, "MARKERLESS_LIMIT", 30)
    big = tmp_path / "downloads"
    for n in range(40):
        (big / f"d{n % 4}").mkdir(parents=True, exist_ok=True)
        (big / f"d{n % 4}" / f"f{n}.py").write_text(f"value_{n} = {n}\n")
    code, _, err = kenning(capsys, "index", str(big), "--quiet")
    assert code == 2 and "more than 30 files and no project marker" in err and indices() == []
    (big / "node_modules").mkdir()  # what every walk skips does not count
    small = tmp_path / "small"
    (small / "node_modules").mkdir(parents=True)
    for n in range(40):
        (small / "node_modules" / f"m{n}.js").write_text("x\n")
    assert kenning(capsys, "index", str(small), "--quiet")[0] == 0
    (big / "pyproject.toml").write_text("[project]\nname = 'big'\n")
    assert kenning(capsys, "index", str(big), "--quiet")[0] == 0
    (big / "pyproject.toml").unlink()  # once indexed, refreshes go on
    assert kenning(capsys, "index", str(big), "--quiet")[0] == 0


def test_the_session_start_hook_leaves_a_home_folder_alone(home: Path) -> None:
    make_repo(home, {"dotfiles/.bashrc": "export EDITOR=vi\n"})  # a home under git
    assert git(home, "rev-parse", "--show-toplevel") == str(home)
    hook = hook_command([sys.executable, "-m", "kenning"])
    foreground = hook.removesuffix("&").strip()  # the hook, waited for
    subprocess.run(["sh", "-c", foreground], cwd=home, env=os.environ, check=False,
                   timeout=120)
    assert indices() == []


def test_the_mcp_server_refuses_a_home_folder_given_as_a_project(home: Path) -> None:
    from kenning import config
    from kenning.errors import UsageError
    from kenning.mcpserver.projects import Registry

    registry = Registry(config.load(), [str(home)])
    assert registry.live() == []
    with pytest.raises(UsageError, match="home folder, not a project"):
        registry.select(str(home))
