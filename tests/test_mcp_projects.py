"""Which projects an MCP server serves, and how it refuses the others (no server process)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kenning import config
from kenning.errors import UsageError
from kenning.mcpserver.projects import Registry


def _project(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    return path


def _configure(home: Path, **roots: Path) -> None:
    (home / "config.toml").write_text("".join(
        f'[[projects]]\nid = "{pid}"\nroot = "{root}"\n\n' for pid, root in roots.items()))


def test_configured_projects_and_a_missing_root(tmp_path: Path, isolated_state: Path) -> None:
    one, two = _project(tmp_path / "one"), tmp_path / "two"
    _configure(isolated_state, one=one, two=two)
    registry = Registry(config.load(), [])
    assert registry.ids() == ["one", "two"]
    assert [p.id for p in registry.live()] == ["one"]
    [missing] = registry.missing()
    assert missing.error is not None and "does not exist" in missing.error.message
    with pytest.raises(UsageError, match="does not exist"):
        registry.select("two")
    _project(two)  # the root comes back: served again without a restart
    assert [p.id for p in registry.select(None)] == ["one", "two"]
    assert registry.select(str(two / "src" / "..")) == registry.select("two")


def test_unknown_and_outside_projects_are_refused(tmp_path: Path, isolated_state: Path) -> None:
    one = _project(tmp_path / "one")
    (one / "sub").mkdir()
    outside = _project(tmp_path / "elsewhere")
    _configure(isolated_state, one=one)
    registry = Registry(config.load(), [])
    assert registry.select(str(one / "sub"))[0].id == "one"  # a path inside a root
    with pytest.raises(UsageError, match="Unknown project") as unknown:
        registry.select("nope")
    assert unknown.value.hint == "Served projects: one."
    for path in (outside, tmp_path, Path("/")):
        with pytest.raises(UsageError, match="outside the projects"):
            registry.select(str(path))


def test_flags_override_the_config(tmp_path: Path, isolated_state: Path) -> None:
    one, other = _project(tmp_path / "one"), _project(tmp_path / "other")
    _configure(isolated_state, one=one)
    registry = Registry(config.load(), [str(other)])
    assert [p.ref.root for p in registry.live() if p.ref] == [other.resolve()]
    assert Registry(config.load(), ["one"]).ids() == ["one"]
    bad = Registry(config.load(), ["no-such-id"])
    assert bad.live() == [] and "neither a directory" in str(bad.missing()[0].error)


def test_the_working_directory_is_served_unless_it_is_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path / "repo")
    (root / "pkg").mkdir()
    monkeypatch.chdir(root / "pkg")
    [served] = Registry(config.load(), []).live()
    assert served.ref is not None and served.ref.root == root.resolve()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    registry = Registry(config.load(), [])
    assert registry.live() == []
    with pytest.raises(UsageError, match="not a project"):
        registry.select(registry.ids()[0])
