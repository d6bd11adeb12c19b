"""A configured project id names a folder: one that could escape KENNING_HOME is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from index_helpers import git, make_repo
from index_helpers import kenning_cli as run
from kenning import config
from kenning.project import is_valid_id, project_id


@pytest.fixture
def kenning(capsys: pytest.CaptureFixture[str]):
    """``kenning(*args)`` -> (exit code, stdout + stderr), in-process through main()."""
    def call(*args: str) -> tuple[int, str]:
        code, out, err = run(capsys, *args)
        return code, out + err

    return call


def configure(root: Path, pid: str) -> Path:
    path = config.config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[[projects]]\nid = "{pid}"\nroot = "{root}"\n', encoding="utf-8")
    return path


@pytest.mark.parametrize("pid", ["../../../escaped", "a/b", "..", ".", "*", "API", "x y", ""])
def test_a_bad_id_is_refused_and_nothing_is_written(kenning, tmp_path: Path, pid: str) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": "def main():\n    return 1\n"})
    configure(repo, pid)
    home = Path(os.environ["KENNING_HOME"])
    code, output = kenning("index", str(repo), "--quiet")
    assert code == 2 and "is not valid" in output and "lower-case letters" in output, output
    assert not (tmp_path / "escaped").exists() and not (home.parent / "escaped").exists()
    assert not (home / "indices").exists()


def test_remove_index_never_globs_with_an_id(kenning, tmp_path: Path) -> None:
    first = make_repo(tmp_path / "first", {"a.py": "def alpha():\n    return 1\n"})
    second = make_repo(tmp_path / "second", {"b.py": "def beta():\n    return 2\n"})
    for root in (first, second):
        assert kenning("index", str(root), "--quiet")[0] == 0
    indices = Path(os.environ["KENNING_HOME"]) / "indices"
    before = sorted(indices.glob("*/*"))
    assert len(before) == 2
    configure(first, "*")
    code, output = kenning("remove-index", str(first))
    assert code == 2 and "is not valid" in output
    assert sorted(indices.glob("*/*")) == before  # the other project's index is still there


def test_config_set_never_writes_a_file_with_a_bad_id(kenning, tmp_path: Path) -> None:
    path = configure(tmp_path, "../up")
    text = path.read_text(encoding="utf-8")
    code, output = kenning("config", "set", "search.limit", "5")
    assert code == 2 and "../up" in output
    assert path.read_text(encoding="utf-8") == text


def test_good_ids_and_every_derived_id_are_accepted(kenning, tmp_path: Path) -> None:
    for name in ("My Project", ".dotfiles", "___", "ünïcode", "a.b_c-d"):
        root = tmp_path / name
        root.mkdir()
        assert is_valid_id(project_id(root)), name
    cloned = make_repo(tmp_path / "cloned", {"x.py": "x = 1\n"})
    git(cloned, "remote", "add", "origin", "git@GitHub.com:Some.Org/Repo_Name.git")
    assert is_valid_id(project_id(cloned))
    for pid in ("api", "web.v2", "github.com-owner-repo-1a2b3c4d", "a" * 200):
        assert is_valid_id(pid)
    configure(cloned, "api")
    assert kenning("index", str(cloned), "--quiet")[0] == 0
    assert list((Path(os.environ["KENNING_HOME"]) / "indices").glob("*/api"))
