"""Gemini CLI, Cursor and Junie: the MCP server and the instruction block, with the same
reversible machinery as Claude Code and Codex, against a temporary HOME and project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kenning.agents import launcher, templates
from kenning.agents.markdown import END, START
from test_agents import front_matter, home, project, run, snapshot

__all__ = ["home", "project"]  # the fixtures, shared with test_agents

CASES = [(agent, scope) for agent in ("gemini", "cursor", "junie")
         for scope in ("user", "project")]


def files_of(agent: str, scope: str, home: Path, project: Path) -> dict[str, Path]:
    root = home if scope == "user" else project
    return {
        ("gemini", "user"): {"mcp": root / ".gemini" / "settings.json",
                             "instructions": root / ".gemini" / "GEMINI.md"},
        ("gemini", "project"): {"mcp": root / ".gemini" / "settings.json",
                                "instructions": root / "GEMINI.md"},
        ("cursor", "user"): {"mcp": root / ".cursor" / "mcp.json"},
        ("cursor", "project"): {"mcp": root / ".cursor" / "mcp.json",
                                "instructions": root / ".cursor" / "rules" / "kenning.mdc"},
        ("junie", "user"): {"mcp": root / ".junie" / "mcp" / "mcp.json",
                            "instructions": root / ".junie" / "AGENTS.md"},
        ("junie", "project"): {"mcp": root / ".junie" / "mcp" / "mcp.json",
                               "instructions": root / ".junie" / "AGENTS.md"},
    }[(agent, scope)]


def args_of(agent: str, scope: str, project: Path) -> list[str]:
    return ["--agent", agent, "--scope", scope, "--project", str(project)]


def assert_block(path: Path) -> None:
    text = path.read_text()
    if path.suffix == ".mdc":  # a Cursor rule: front matter first, applied to every request
        fields = front_matter(text)
        assert fields["alwaysApply"] == "true" and "kenning" in fields["description"]
        assert templates.FILE_MARKER in text and templates.instructions() in text
    else:
        assert text.count(START) == 1 and text.count(END) == 1 and "code_search" in text


@pytest.mark.parametrize(("agent", "scope"), CASES)
def test_fresh_setup_dry_run_second_setup_and_removal(
    home: Path, project: Path, agent: str, scope: str
) -> None:
    files = files_of(agent, scope, home, project)
    args = args_of(agent, scope, project)
    before = snapshot(home, project)

    planned = json.loads(run("setup-agent", *args, "--dry-run", "--json-output").output)
    assert snapshot(home, project) == before
    assert {Path(f["path"]) for f in planned["files"]} == set(files.values())
    shown = run("setup-agent", *args, "--dry-run")
    assert "nothing was written" in shown.output and snapshot(home, project) == before

    result = run("setup-agent", *args)
    assert result.exit_code == 0, result.output
    for entry in planned["files"]:  # the dry run showed exactly what was then written
        assert Path(entry["path"]).read_text() == entry["content"]
    command = launcher.running() if scope == "user" else launcher.BARE
    servers = json.loads(files["mcp"].read_text())["mcpServers"]
    assert servers == {"kenning": templates.mcp_entry(command)}
    if "instructions" in files:
        assert_block(files["instructions"])

    installed = snapshot(home, project)
    again = run("setup-agent", *args)
    assert again.output.startswith("Nothing to change") and snapshot(home, project) == installed

    removed = run("remove-agent", *args)
    assert removed.exit_code == 0, removed.output
    assert snapshot(home, project) == before  # files and the folders made for them are gone
    assert run("remove-agent", *args).output.startswith("Nothing to change")


USER_MCP = ('{\n    "theme": "dark",\n    "mcpServers": {\n        "docs": {"command": "docs-mcp",'
            ' "args": []}\n    },\n    "general": {"vimMode": true}\n}')  # no final newline
USER_TEXT = "# Mine\r\n\r\nAnswer in French.\r\n"  # CRLF


@pytest.mark.parametrize(("agent", "scope"), CASES)
def test_users_own_content_is_kept_and_restored_byte_for_byte(
    home: Path, project: Path, agent: str, scope: str
) -> None:
    files = files_of(agent, scope, home, project)
    files["mcp"].parent.mkdir(parents=True)
    files["mcp"].write_text(USER_MCP)
    if agent == "cursor":  # a rule of the user's own, next to where kenning's goes
        mine = (home if scope == "user" else project) / ".cursor" / "rules" / "style.mdc"
        mine.parent.mkdir(parents=True)
        mine.write_text("---\nalwaysApply: true\n---\nUse tabs.\n")
    elif "instructions" in files:
        files["instructions"].parent.mkdir(parents=True, exist_ok=True)
        files["instructions"].write_bytes(USER_TEXT.encode())
    before = snapshot(home, project)
    args = args_of(agent, scope, project)

    result = run("setup-agent", *args)
    assert result.exit_code == 0, result.output
    settings = json.loads(files["mcp"].read_text())
    assert settings["theme"] == "dark" and settings["general"] == {"vimMode": True}
    assert set(settings["mcpServers"]) == {"docs", "kenning"}
    assert '\n        "kenning": {\n            "command"' in files["mcp"].read_text()  # 4 spaces
    if "instructions" in files:
        assert_block(files["instructions"])
        if agent != "cursor":
            assert files["instructions"].read_bytes().startswith(USER_TEXT.encode())
            assert b"\n" not in files["instructions"].read_bytes().replace(b"\r\n", b"")

    removed = run("remove-agent", *args)
    assert removed.exit_code == 0, removed.output
    assert snapshot(home, project) == before


@pytest.mark.parametrize(("existing", "chosen"), [
    ([".junie/guidelines.md"], ".junie/guidelines.md"),
    (["AGENTS.md", ".junie/guidelines.md"], "AGENTS.md"),
    ([".junie/AGENTS.md", "AGENTS.md"], ".junie/AGENTS.md"),
])
def test_junie_block_goes_into_the_guidelines_file_junie_reads(
    home: Path, project: Path, existing: list[str], chosen: str
) -> None:
    """Junie reads only the first of .junie/AGENTS.md, AGENTS.md, .junie/guidelines.md; a new
    .junie/AGENTS.md would hide the user's guidelines from it."""
    for name in existing:
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(f"# {name}\n")
    before = snapshot(home, project)
    args = args_of("junie", "project", project)
    assert run("setup-agent", *args, "--instructions").exit_code == 0
    for name in existing:
        assert (START in (project / name).read_text()) is (name == chosen)
    assert (project / ".junie" / "AGENTS.md").exists() is (".junie/AGENTS.md" in existing)
    assert run("setup-agent", *args, "--instructions").output.startswith("Nothing to change")
    assert run("remove-agent", *args).exit_code == 0
    assert snapshot(home, project) == before


def test_a_root_agents_md_shared_with_codex_gets_one_block(home: Path, project: Path) -> None:
    (project / "AGENTS.md").write_text("# Team\n")
    before = snapshot(home, project)
    args = ["--scope", "project", "--project", str(project), "--instructions"]
    report = json.loads(run("setup-agent", "--agent", "all", "--json-output", *args).output)
    shared = [f for f in report["files"] if f["path"] == str(project / "AGENTS.md")]
    assert len(shared) == 1 and shared[0]["components"] == ["instructions"]
    assert (project / "AGENTS.md").read_text().count(START) == 1
    assert not (project / ".junie").exists()
    assert run("remove-agent", "--agent", "junie", *args).exit_code == 0
    assert (project / "AGENTS.md").read_text() == "# Team\n"  # one block served both agents
    assert run("remove-agent", *args).exit_code == 0
    assert snapshot(home, project) == before


def test_cursor_user_scope_explains_where_its_rules_live(home: Path) -> None:
    result = run("setup-agent", "--agent", "cursor")
    assert result.exit_code == 0, result.output
    assert "Cursor keeps user rules in its settings" in result.output
    assert [p.name for p in (home / ".cursor").iterdir()] == ["mcp.json"]
    assert "Cursor keeps" not in run("remove-agent", "--agent", "cursor").output


def test_junie_home_moves_the_user_files(home: Path, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUNIE_HOME", str(tmp_path / "junie-home"))
    assert run("setup-agent", "--agent", "junie").exit_code == 0
    assert (tmp_path / "junie-home" / "mcp" / "mcp.json").exists()
    assert (tmp_path / "junie-home" / "AGENTS.md").exists() and not (home / ".junie").exists()


@pytest.mark.parametrize(("folder", "agent"), [(".gemini", "gemini"), (".cursor", "cursor"),
                                               (".junie", "junie")])
def test_installed_agents_are_detected(home: Path, tmp_path: Path, folder: str, agent: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    (home / folder).mkdir()
    result = run("setup-agent", "--json-output")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["agents"] == [agent]
