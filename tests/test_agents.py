"""`kenning setup-agent` / `kenning remove-agent` against a temporary HOME and project."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomlkit
from click.testing import CliRunner, Result
from kenning.agents import launcher, templates
from kenning.agents.markdown import END, START
from kenning.cli import cli, main
from kenning.errors import AgentSetupError

EVERYTHING_NAMES = ("mcp", "instructions", "skill", "subagent", "hooks")
EVERYTHING = [f"--{name}" for name in EVERYTHING_NAMES]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "main.py").write_text("print('hi')\n")
    return root


def run(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=True)
    if result.exception and not isinstance(result.exception, (SystemExit, AgentSetupError)):
        raise result.exception
    return result


def snapshot(*roots: Path) -> dict[str, bytes]:
    """Every file under ``roots`` with its bytes (folders show up through their files)."""
    files = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and ".git" not in path.parts:
                files[str(path)] = path.read_bytes()
            elif path.is_dir() and not any(path.iterdir()):
                files[str(path) + "/"] = b""
    return files


def user_files(home: Path) -> dict[str, Path]:
    return {
        "claude_json": home / ".claude.json",
        "claude_md": home / ".claude" / "CLAUDE.md",
        "skill": home / ".claude" / "skills" / "kenning-search" / "SKILL.md",
        "subagent": home / ".claude" / "agents" / "code-explorer.md",
        "claude_settings": home / ".claude" / "settings.json",
        "codex_toml": home / ".codex" / "config.toml",
        "agents_md": home / ".codex" / "AGENTS.md",
        "codex_hooks": home / ".codex" / "hooks.json",
    }


def project_files(root: Path) -> dict[str, Path]:
    return {
        "claude_json": root / ".mcp.json",
        "claude_md": root / "CLAUDE.md",
        "skill": root / ".claude" / "skills" / "kenning-search" / "SKILL.md",
        "subagent": root / ".claude" / "agents" / "code-explorer.md",
        "claude_settings": root / ".claude" / "settings.json",
        "codex_toml": root / ".codex" / "config.toml",
        "agents_md": root / "AGENTS.md",
        "codex_hooks": root / ".codex" / "hooks.json",
    }


def front_matter(text: str) -> dict[str, str]:
    """The `key: value` lines between the leading `---` fences, checked to be plain YAML."""
    lines = text.splitlines()
    assert lines[0] == "---"
    end = lines.index("---", 1)
    fields = {}
    for line in lines[1:end]:
        key, sep, value = line.partition(": ")
        assert sep and ": " not in value and not value.startswith(("'", '"', "[", "{"))
        fields[key] = value
    return fields


def assert_installed(files: dict[str, Path], command: tuple[str, ...]) -> None:
    entry = {"command": command[0], "args": [*command[1:], "mcp"]}
    servers = json.loads(files["claude_json"].read_text())["mcpServers"]
    assert servers["kenning"] == entry
    codex = tomlkit.parse(files["codex_toml"].read_text()).unwrap()
    assert codex["mcp_servers"]["kenning"] == entry
    for key in ("claude_md", "agents_md"):
        text = files[key].read_text()
        assert text.count(START) == 1 and text.count(END) == 1
        assert "code_search" in text and "MANDATORY" not in text.upper()
    skill = front_matter(files["skill"].read_text())
    assert skill["name"] == "kenning-search" and "semantic search" in skill["description"]
    agent = front_matter(files["subagent"].read_text())
    assert agent["name"] == "code-explorer"
    tools = agent["tools"].split(", ")
    assert "mcp__kenning__code_search" in tools and {"Read", "Grep", "Glob"} <= set(tools)
    assert not {"Edit", "Write", "Bash", "NotebookEdit"} & set(tools)  # read-only
    for key in ("claude_settings", "codex_hooks"):
        groups = json.loads(files[key].read_text())["hooks"]["SessionStart"]
        assert groups == [templates.hook_group(command)]


@pytest.mark.parametrize("scope", ["user", "project"])
def test_fresh_install_second_install_and_remove(home: Path, project: Path, scope: str) -> None:
    before = snapshot(home, project)
    args = ["--agent", "all", "--scope", scope, "--project", str(project)]
    first = run("setup-agent", *args, *EVERYTHING)
    assert first.exit_code == 0, first.output
    files = user_files(home) if scope == "user" else project_files(project)
    # the user's own files name this install; a project's, shared, the kenning on PATH
    assert_installed(files, launcher.running() if scope == "user" else ("kenning",))
    assert "created" in first.output

    installed = snapshot(home, project)
    second = run("setup-agent", *args, *EVERYTHING)
    assert second.exit_code == 0
    assert "Nothing to change" in second.output
    assert snapshot(home, project) == installed

    removed = run("remove-agent", *args)
    assert removed.exit_code == 0, removed.output
    assert "deleted" in removed.output
    assert snapshot(home, project) == before  # created files and their folders are gone

    again = run("remove-agent", *args)
    assert "Nothing to change" in again.output
    assert snapshot(home, project) == before


def test_default_set_is_everything_and_codex_only_gets_its_files(home: Path) -> None:
    result = run("setup-agent", "--agent", "codex")
    assert result.exit_code == 0, result.output
    files = user_files(home)
    assert files["codex_toml"].exists() and files["agents_md"].exists()
    assert files["codex_hooks"].exists()
    assert not (home / ".claude").exists() and not files["claude_json"].exists()


def _user_content(files: dict[str, Path]) -> None:
    """A user's own configuration in every file kenning edits, in varied styles."""
    contents = {
        "claude_json": '{\n  "numStartups": 12,\n  "mcpServers": {\n    "github": {\n'
        '      "command": "gh-mcp",\n      "args": []\n    }\n  },\n'
        '  "projects": {"/w": {"allowedTools": ["Bash"]}}\n}\n',
        "claude_settings": '{\n    "permissions": {\n        "allow": ["Bash(ls:*)"]\n    },\n'
        '    "hooks": {\n        "SessionStart": [\n            {\n'
        '                "hooks": [{"type": "command", "command": "echo hi"}]\n'
        "            }\n        ]\n    }\n}",
        "claude_md": "# My rules\n\n- Use tabs.\n- Écrire des tests.",  # no final newline
        "codex_toml": '# personal settings\nmodel = "o3"  # fast enough\n\n[mcp_servers.docs]\n'
        'command = "docs-mcp"\nargs = ["--port", "0"]\n\n[profiles.deep]\n'
        'model_reasoning_effort = "high"\n',
        "agents_md": "# Team notes\r\n\r\nRun `make test` before pushing.\r\n",  # CRLF
        "codex_hooks": '{\n\t"hooks": {\n\t\t"Stop": [\n\t\t\t{\n\t\t\t\t"hooks": [\n'
        '\t\t\t\t\t{"type": "command", "command": "notify-send done"}\n\t\t\t\t]\n'
        "\t\t\t}\n\t\t]\n\t}\n}\n",
    }
    for key, text in contents.items():
        files[key].parent.mkdir(parents=True, exist_ok=True)
        files[key].write_bytes(text.encode())
    # a sibling skill and agent of the user's own, untouched by kenning
    (files["skill"].parent.parent / "mine").mkdir(parents=True)
    (files["skill"].parent.parent / "mine" / "SKILL.md").write_text("---\nname: mine\n---\n")
    files["subagent"].parent.mkdir(parents=True)
    (files["subagent"].parent / "reviewer.md").write_text("---\nname: reviewer\n---\n")


@pytest.mark.parametrize("scope", ["user", "project"])
def test_install_over_user_content_and_remove_byte_for_byte(
    home: Path, project: Path, scope: str
) -> None:
    files = user_files(home) if scope == "user" else project_files(project)
    _user_content(files)
    before = snapshot(home, project)
    args = ["--agent", "all", "--scope", scope, "--project", str(project)]

    result = run("setup-agent", *args, *EVERYTHING)
    assert result.exit_code == 0, result.output
    # the user's entries are all still there, next to kenning's
    claude = json.loads(files["claude_json"].read_text())
    assert claude["numStartups"] == 12 and set(claude["mcpServers"]) == {"github", "kenning"}
    settings = json.loads(files["claude_settings"].read_text())
    assert settings["permissions"] == {"allow": ["Bash(ls:*)"]}
    assert settings["hooks"]["SessionStart"][0]["hooks"][0]["command"] == "echo hi"
    command = launcher.running() if scope == "user" else launcher.BARE
    assert settings["hooks"]["SessionStart"][1] == templates.hook_group(command)
    assert files["claude_settings"].read_text().startswith('{\n    "permissions"')  # 4 spaces kept
    assert '\n        "SessionStart": [\n            {\n                "hooks"' in (
        files["claude_settings"].read_text())
    codex_text = files["codex_toml"].read_text()
    assert codex_text.startswith('# personal settings\nmodel = "o3"  # fast enough\n')
    codex = tomlkit.parse(codex_text).unwrap()
    assert set(codex["mcp_servers"]) == {"docs", "kenning"}
    assert codex["profiles"]["deep"]["model_reasoning_effort"] == "high"
    assert files["claude_md"].read_text().startswith("# My rules\n\n- Use tabs.\n- Écrire")
    agents_md = files["agents_md"].read_bytes()
    assert agents_md.startswith(b"# Team notes\r\n\r\nRun `make test`")
    assert b"\n" not in agents_md.replace(b"\r\n", b"")  # CRLF kept throughout
    hooks = json.loads(files["codex_hooks"].read_text())["hooks"]
    assert set(hooks) == {"Stop", "SessionStart"}
    assert '\n\t\t"SessionStart": [\n\t\t\t{' in files["codex_hooks"].read_text()  # tabs kept

    assert run("setup-agent", *args, *EVERYTHING).output.startswith("Nothing to change")

    removed = run("remove-agent", *args)
    assert removed.exit_code == 0, removed.output
    assert snapshot(home, project) == before


def test_backups_hold_the_previous_bytes(home: Path) -> None:
    files = user_files(home)
    _user_content(files)
    originals = {key: path.read_bytes() for key, path in files.items() if path.exists()}
    result = run("setup-agent", "--agent", "all", "--json-output", *EVERYTHING)
    report = json.loads(result.output)
    backup_dir = Path(report["backup_dir"])
    assert backup_dir.is_relative_to(Path(os.environ["KENNING_HOME"]))
    manifest = json.loads((backup_dir / "manifest.json").read_text())
    backed = {Path(entry["path"]): Path(entry["backup"]) for entry in manifest if entry["backup"]}
    for key, data in originals.items():
        assert backed[files[key]].read_bytes() == data
    created = {Path(e["path"]) for e in manifest if e["action"] == "create"}
    assert created & set(files.values()) == {files["skill"], files["subagent"]}


def test_dry_run_prints_every_file_and_writes_nothing(home: Path) -> None:
    files = user_files(home)
    files["claude_json"].write_text('{\n  "numStartups": 1\n}\n')
    before = snapshot(home)
    result = run("setup-agent", "--agent", "all", "--dry-run", *EVERYTHING)
    assert result.exit_code == 0, result.output
    assert snapshot(home) == before
    for shown in ("~/.claude.json", "~/.claude/CLAUDE.md", "~/.claude/skills/kenning-search/"
                  "SKILL.md", "~/.claude/agents/code-explorer.md", "~/.claude/settings.json",
                  "~/.codex/config.toml", "~/.codex/AGENTS.md", "~/.codex/hooks.json"):
        assert shown in result.output
    assert '+  "mcpServers": {' in result.output  # the edit of an existing file, as a diff
    assert templates.skill() in result.output  # new files in full
    assert templates.subagent() in result.output
    assert "[mcp_servers.kenning]" in result.output
    assert "nothing was written" in result.output

    planned = json.loads(run("setup-agent", "--agent", "all", "--dry-run", "--json-output",
                             *EVERYTHING).output)
    assert planned["dry_run"] and snapshot(home) == before
    run("setup-agent", "--agent", "all", *EVERYTHING)
    for entry in planned["files"]:  # the dry run showed exactly what was then written
        assert Path(entry["path"]).read_text() == entry["content"]

    removal = json.loads(run("remove-agent", "--dry-run", "--json-output").output)
    assert {e["action"] for e in removal["files"]} == {"update", "delete"}
    assert files["skill"].exists()


@pytest.mark.parametrize(
    ("key", "text", "words", "removal_refused"),
    [
        ("claude_json", '{"numStartups": 3,\n', "not valid JSON", True),
        ("claude_settings", '["not", "an", "object"]', "does not hold a JSON object", True),
        ("claude_settings", '{"hooks": {"SessionStart": {"hooks": []}}}', "not a JSON array",
         True),
        ("codex_toml", 'model = "o3\n[mcp_servers\n', "not valid TOML", True),
        # valid TOML that kenning cannot extend without rewriting; there is nothing to remove
        ("codex_toml", 'mcp_servers = { docs = { command = "d" } }\n', "without rewriting",
         False),
        ("claude_md", f"# Rules\n{START}\nhalf a block\n", "unmatched or repeated", True),
    ],
)
def test_unparsable_or_unsafe_files_are_refused_without_changes(
    home: Path, key: str, text: str, words: str, removal_refused: bool
) -> None:
    path = user_files(home)[key]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    before = snapshot(home)
    result = run("setup-agent", "--agent", "all", *EVERYTHING)
    assert isinstance(result.exception, AgentSetupError)
    assert words in result.exception.message
    assert snapshot(home) == before  # refused before the first write, other files included
    removal = run("remove-agent")
    assert isinstance(removal.exception, AgentSetupError) is removal_refused
    assert snapshot(home) == before


def test_refusal_is_one_line_and_exit_code(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / ".claude.json").write_text("{oops")
    with pytest.raises(SystemExit) as exit_info:
        main(["setup-agent", "--agent", "claude"])
    assert exit_info.value.code == AgentSetupError.exit_code
    err = capsys.readouterr().err
    assert err.startswith("Error: ~/.claude.json is not valid JSON")
    assert "Traceback" not in err and "Hint:" in err


def test_entries_and_files_of_the_users_own_are_kept(home: Path) -> None:
    files = user_files(home)
    own = {"command": "/opt/venv/bin/kenning", "args": ["mcp", "--project", "/w"]}
    files["claude_json"].write_text(json.dumps({"mcpServers": {"kenning": own}}, indent=2))
    files["codex_toml"].parent.mkdir()
    files["codex_toml"].write_text('[mcp_servers.kenning]\ncommand = "/opt/kenning"\n')
    before = snapshot(home)
    results = [run("setup-agent", "--agent", agent, "--mcp") for agent in ("claude", "codex")]
    assert all(result.exit_code == 0 for result in results)
    assert sum(result.output.count("already has its own") for result in results) == 2
    assert snapshot(home) == before
    assert run("remove-agent", "--mcp").output.count("already has its own") == 2
    assert snapshot(home) == before

    files["skill"].parent.mkdir(parents=True)
    files["skill"].write_text("---\nname: kenning-search\ndescription: mine\n---\n")
    refused = run("setup-agent", "--agent", "claude", "--skill")
    assert isinstance(refused.exception, AgentSetupError)
    assert "was not written by kenning" in refused.exception.message
    kept = run("remove-agent", "--skill")
    assert "was not written by kenning" in kept.output and files["skill"].exists()


def test_updated_block_replaces_the_old_one_in_place(home: Path) -> None:
    path = user_files(home)["claude_md"]
    path.parent.mkdir()
    path.write_text(f"# Top\n\n{START}\nold kenning text\n{END}\n\n# Bottom\n")
    run("setup-agent", "--agent", "claude", "--instructions")
    text = path.read_text()
    assert text.startswith(f"# Top\n\n{START}\n## Code search with kenning")
    assert text.endswith(f"{END}\n\n# Bottom\n") and "old kenning text" not in text
    run("remove-agent", "--instructions")
    assert path.read_text() == "# Top\n\n# Bottom\n"


def test_symlinked_instruction_file_is_edited_where_it_points(home: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "CLAUDE.md").write_text("# Mine\n")
    link = user_files(home)["claude_md"]
    link.parent.mkdir()
    link.symlink_to(dotfiles / "CLAUDE.md")
    run("setup-agent", "--agent", "claude", "--instructions")
    assert link.is_symlink() and START in (dotfiles / "CLAUDE.md").read_text()
    run("remove-agent", "--instructions")
    assert link.is_symlink() and (dotfiles / "CLAUDE.md").read_text() == "# Mine\n"


def test_config_dir_overrides_are_honoured(home: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-cfg"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    result = run("setup-agent", "--agent", "all", "--mcp", "--instructions")
    assert result.exit_code == 0, result.output
    assert "kenning" in json.loads((tmp_path / "claude-cfg" / ".claude.json").read_text())[
        "mcpServers"]
    assert (tmp_path / "claude-cfg" / "CLAUDE.md").exists()
    assert (tmp_path / "codex-home" / "config.toml").exists()
    assert not (home / ".claude").exists() and not (home / ".codex").exists()


def test_agents_are_detected_when_not_named(home: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    nothing = run("setup-agent")
    assert isinstance(nothing.exception, AgentSetupError)
    assert "--agent" in (nothing.exception.hint or "")
    (home / ".codex").mkdir()
    result = run("setup-agent")
    assert result.exit_code == 0, result.output
    assert (home / ".codex" / "AGENTS.md").exists() and not (home / ".claude").exists()
    assert "not on PATH" not in result.output  # user scope names this install by its path
    shared = run("setup-agent", "--scope", "project", "--project", str(tmp_path))
    assert "not on PATH" in shared.output  # a project's files start kenning from PATH


@pytest.mark.parametrize("by_path", [False, True])
def test_hook_command_passes_on_what_index_hook_says_and_never_fails(
    tmp_path: Path, by_path: bool
) -> None:
    """The hook runs `kenning index --hook` (which starts the index in the background and says
    what it started: test_embed_budget.py) and passes its one line on to the agent; errors stay
    out of the session. Named by its path, kenning runs with no PATH entry for it; bare, it is
    found on PATH."""
    bin_dir, repo = tmp_path / "bin dir", tmp_path / "repo"
    bin_dir.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    seen = tmp_path / "seen"
    (bin_dir / "kenning").write_text(
        f'#!/bin/sh\necho "$@" > "{seen}"\necho "kenning: indexing"\necho oops >&2\nexit 3\n')
    (bin_dir / "kenning").chmod(0o755)
    command = templates.hook_command((str(bin_dir / "kenning"),) if by_path else ("kenning",))
    path = os.environ["PATH"] if by_path else f"{bin_dir}:{os.environ['PATH']}"
    env = {**os.environ, "PATH": path}
    hook = subprocess.run(["/bin/sh", "-c", command], cwd=repo, env=env,
                          capture_output=True, timeout=60)
    assert hook.returncode == 0 and hook.stdout == b"kenning: indexing\n"
    assert hook.stderr == b""
    assert seen.read_text().split() == ["index", "--hook"]

    seen.unlink()
    outside = subprocess.run(["/bin/sh", "-c", command], cwd=bin_dir,
                             env={**env, "GIT_CEILING_DIRECTORIES": str(tmp_path)},
                             capture_output=True, timeout=60)
    assert outside.returncode == 0  # outside a git work tree it does nothing, and never fails
    assert outside.stdout == b"" and not seen.exists()
    broken = subprocess.run(["/bin/sh", "-c", templates.hook_command(("kenning",))], cwd=repo,
                            env={**os.environ, "PATH": "/nonexistent"}, capture_output=True,
                            timeout=60)
    assert broken.returncode == 0 and broken.stderr == b""


def test_an_earlier_releases_hook_is_kenning_s_to_replace() -> None:
    old = {"matcher": "startup|resume", "hooks": [{"type": "command", "command":
           "(git rev-parse --is-inside-work-tree && kenning index --quiet) "
           "</dev/null >/dev/null 2>&1 &"}]}
    assert templates.is_own_hook_group(old)
    assert templates.is_own_hook_group(templates.hook_group(("kenning",)))
    assert not templates.is_own_hook_group({**old, "matcher": "startup"})


@pytest.mark.parametrize(("command", "words", "foreign"), [
    ("setup-agent", ("Register", "Add"), ("Unregister", "Delete", "Take")),
    ("remove-agent", ("Unregister", "Take", "Delete"), ("Register ", "Add ")),
])
def test_each_command_describes_its_own_component_flags(
    command: str, words: tuple[str, ...], foreign: tuple[str, ...]
) -> None:
    result = CliRunner().invoke(cli, [command, "-h"], terminal_width=200)
    flags = [line.strip() for line in result.output.splitlines()
             if line.strip().startswith(tuple(f"--{c} " for c in EVERYTHING_NAMES))]
    assert len(flags) == len(EVERYTHING_NAMES)
    for line in flags:
        description = line.split(maxsplit=1)[1]
        assert description.startswith(words), line
        assert not any(word in description for word in foreign), line


def _without_kenning_on_path() -> dict[str, str]:
    return {**os.environ, "PATH": "/nonexistent"}


def test_user_scope_starts_this_install_by_its_path(home: Path, project: Path) -> None:
    """Agents started without the virtualenv active still start kenning: the written command
    runs with no PATH at all. A project's shared files keep the bare command."""
    result = run("setup-agent", "--agent", "all", "--mcp", "--hooks")
    assert result.exit_code == 0, result.output
    files = user_files(home)
    entry = json.loads(files["claude_json"].read_text())["mcpServers"]["kenning"]
    assert os.path.isabs(entry["command"]) and entry["args"][-1] == "mcp"
    assert tomlkit.parse(files["codex_toml"].read_text()).unwrap()["mcp_servers"]["kenning"] == (
        entry)
    started = subprocess.run([entry["command"], *entry["args"][:-1], "--version"],
                             env=_without_kenning_on_path(), capture_output=True, text=True,
                             timeout=120)
    assert started.returncode == 0 and "kenning" in started.stdout, started.stderr
    hook = json.loads(files["claude_settings"].read_text())["hooks"]["SessionStart"][0]
    assert hook == templates.hook_group([entry["command"], *entry["args"][:-1]])

    shared = run("setup-agent", "--agent", "claude", "--mcp", "--scope", "project",
                 "--project", str(project))
    assert shared.exit_code == 0, shared.output
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["kenning"] == {
        "command": "kenning", "args": ["mcp"]}


def test_launcher_is_the_started_executable_else_a_script_else_the_interpreter(
    tmp_path: Path,
) -> None:
    started = tmp_path / "venv" / "bin" / "kenning"
    started.parent.mkdir(parents=True)
    started.write_text("#!/bin/sh\n")
    started.chmod(0o755)
    assert launcher.running(argv0=str(started), script_dirs=[]) == (str(started),)
    # started as `python -m kenning`: the install's own executable, when it has one
    main = str(tmp_path / "kenning" / "__main__.py")
    assert launcher.running(argv0=main, script_dirs=[str(started.parent)]) == (str(started),)
    # none: this interpreter with -m kenning, which starts without kenning on PATH too
    fallback = launcher.running(argv0=main, script_dirs=[str(tmp_path / "empty")])
    assert fallback == (sys.executable, "-m", "kenning")
    version = subprocess.run([*fallback, "--version"], env=_without_kenning_on_path(),
                             capture_output=True, text=True, timeout=120)
    assert version.returncode == 0 and "kenning" in version.stdout, version.stderr
    for argv in (fallback, (str(started),), ("kenning",)):
        assert launcher.is_kenning(argv)
    for other in (("/usr/bin/env", "kenning"), ("kenning", "mcp"), ("bin/kenning",),
                  ("/usr/bin/node", "-m", "kenning"), ()):
        assert not launcher.is_kenning(other)


# What the previous release wrote (a bare `kenning`) over _user_content, byte for byte.
_LEGACY_HOOK = ('"command": "(git rev-parse --is-inside-work-tree && kenning index --quiet) '
                '</dev/null >/dev/null 2>&1 &"')
LEGACY = {
    "claude_json": '{\n  "numStartups": 12,\n  "mcpServers": {\n    "github": {\n'
    '      "command": "gh-mcp",\n      "args": []\n    },\n    "kenning": {\n'
    '      "command": "kenning",\n      "args": [\n        "mcp"\n      ]\n    }\n  },\n'
    '  "projects": {"/w": {"allowedTools": ["Bash"]}}\n}\n',
    "claude_settings": '{\n    "permissions": {\n        "allow": ["Bash(ls:*)"]\n    },\n'
    '    "hooks": {\n        "SessionStart": [\n            {\n'
    '                "hooks": [{"type": "command", "command": "echo hi"}]\n            },\n'
    '            {\n                "matcher": "startup|resume",\n                "hooks": [\n'
    '                    {\n                        "type": "command",\n'
    f'                        {_LEGACY_HOOK}\n                    }}\n                ]\n'
    '            }\n        ]\n    }\n}',
    "codex_toml": '# personal settings\nmodel = "o3"  # fast enough\n\n[mcp_servers.docs]\n'
    'command = "docs-mcp"\nargs = ["--port", "0"]\n\n[profiles.deep]\n'
    'model_reasoning_effort = "high"\n\n[mcp_servers.kenning]\ncommand = "kenning"\n'
    'args = ["mcp"]\n',
    "codex_hooks": '{\n\t"hooks": {\n\t\t"Stop": [\n\t\t\t{\n\t\t\t\t"hooks": [\n'
    '\t\t\t\t\t{"type": "command", "command": "notify-send done"}\n\t\t\t\t]\n\t\t\t}\n'
    '\t\t],\n\t\t"SessionStart": [\n\t\t\t{\n\t\t\t\t"matcher": "startup|resume",\n'
    '\t\t\t\t"hooks": [\n\t\t\t\t\t{\n\t\t\t\t\t\t"type": "command",\n'
    f'\t\t\t\t\t\t{_LEGACY_HOOK}\n\t\t\t\t\t}}\n\t\t\t\t]\n\t\t\t}}\n\t\t]\n\t}}\n}}\n',
}


@pytest.mark.parametrize("upgrade_first", [False, True])
def test_setups_of_the_previous_release_are_updated_and_removed_byte_for_byte(
    home: Path, upgrade_first: bool
) -> None:
    files = user_files(home)
    _user_content(files)
    before = snapshot(home)
    for key, text in LEGACY.items():
        files[key].write_bytes(text.encode())
    if upgrade_first:  # setup-agent again: kenning's bare entries become this install's path
        result = run("setup-agent", "--agent", "all", "--mcp", "--hooks")
        assert result.exit_code == 0, result.output
        assert result.output.count("updated") == 4 and "already has its own" not in result.output
        servers = json.loads(files["claude_json"].read_text())["mcpServers"]
        assert templates.is_entry(servers["kenning"], launcher.running())
        groups = json.loads(files["codex_hooks"].read_text())["hooks"]["SessionStart"]
        assert groups == [templates.hook_group(launcher.running())]
        again = run("setup-agent", "--agent", "all", "--mcp", "--hooks")
        assert again.output.startswith("Nothing to change")
    removed = run("remove-agent", "--mcp", "--hooks")
    assert removed.exit_code == 0, removed.output
    assert snapshot(home) == before


@pytest.mark.parametrize("scope", ["user", "project"])
def test_folders_that_existed_before_setup_stay_after_removal(
    home: Path, project: Path, scope: str
) -> None:
    """Removal deletes only the folders setup created, never an (empty) one that was there."""
    base = home if scope == "user" else project
    for folder in (".claude", ".codex", ".claude/agents"):
        (base / folder).mkdir(parents=True)
    before = snapshot(home, project)
    args = ["--agent", "all", "--scope", scope, "--project", str(project)]
    assert run("setup-agent", *args, *EVERYTHING).exit_code == 0
    assert (base / ".claude" / "skills" / "kenning-search" / "SKILL.md").exists()
    removed = run("remove-agent", *args)
    assert removed.exit_code == 0, removed.output
    assert snapshot(home, project) == before  # the empty folders are back, the skill's are gone
    assert not (Path(os.environ["KENNING_HOME"]) / "agents" / "created-folders.json").read_text(
        ).strip("[]\n")  # nothing left recorded


@pytest.mark.parametrize("scope", ["user", "project"])
def test_empty_json_objects_the_user_had_come_back_byte_for_byte(
    home: Path, project: Path, scope: str
) -> None:
    """Removal deletes only the containers setup created: the user's empty "hooks": {} and
    "mcpServers": {} stay, while those setup made in a file it edits go again."""
    files = user_files(home) if scope == "user" else project_files(project)
    files["claude_settings"].parent.mkdir(parents=True)
    files["claude_settings"].write_text('{\n  "model": "opus",\n  "hooks": {}\n}\n')
    files["codex_hooks"].parent.mkdir(parents=True)
    files["codex_hooks"].write_text('{\n  "hooks": {},\n  "mcpServers": {}\n}\n')
    files["claude_json"].write_text('{"mcpServers": {}, "theme": "dark"}')
    before = snapshot(home, project)
    args = ["--agent", "all", "--scope", scope, "--project", str(project)]
    assert run("setup-agent", *args, "--mcp", "--hooks").exit_code == 0
    assert "kenning" in json.loads(files["claude_json"].read_text())["mcpServers"]
    assert json.loads(files["codex_hooks"].read_text())["hooks"]["SessionStart"]
    removed = run("remove-agent", *args, "--mcp", "--hooks")
    assert removed.exit_code == 0, removed.output
    assert snapshot(home, project) == before


def test_containers_setup_created_in_a_file_go_with_its_entry(home: Path) -> None:
    settings = user_files(home)["claude_settings"]
    settings.parent.mkdir(parents=True)
    settings.write_text('{\n  "model": "opus"\n}\n')
    assert run("setup-agent", "--agent", "claude", "--hooks").exit_code == 0
    assert run("setup-agent", "--agent", "claude", "--hooks").output.startswith("Nothing")
    assert run("remove-agent", "--agent", "claude", "--hooks").exit_code == 0
    assert settings.read_text() == '{\n  "model": "opus"\n}\n'


def test_a_created_folder_the_user_filled_stays(home: Path) -> None:
    assert run("setup-agent", "--agent", "claude", "--instructions").exit_code == 0
    (home / ".claude" / "notes.md").write_text("mine\n")
    run("remove-agent", "--instructions")
    assert not (home / ".claude" / "CLAUDE.md").exists()
    assert (home / ".claude" / "notes.md").read_text() == "mine\n"


def test_a_created_folder_deleted_and_made_again_by_the_user_is_theirs(home: Path) -> None:
    assert run("setup-agent", "--agent", "codex", "--instructions").exit_code == 0
    run("remove-agent", "--agent", "codex", "--instructions")  # ~/.codex was kenning's: gone
    assert not (home / ".codex").exists()
    assert run("setup-agent", "--agent", "codex", "--instructions").exit_code == 0
    shutil.rmtree(home / ".codex")  # the user clears it out, then makes the folder their own
    assert run("setup-agent", "--agent", "claude", "--instructions").exit_code == 0
    (home / ".codex").mkdir()
    (home / ".codex" / "AGENTS.md").write_text("# Mine\n")
    assert run("setup-agent", "--agent", "codex", "--instructions").exit_code == 0
    assert run("remove-agent", "--agent", "codex", "--instructions").exit_code == 0
    assert (home / ".codex" / "AGENTS.md").read_text() == "# Mine\n"
    (home / ".codex" / "AGENTS.md").unlink()
    assert run("setup-agent", "--agent", "codex", "--instructions").exit_code == 0
    assert run("remove-agent", "--agent", "codex", "--instructions").exit_code == 0
    assert (home / ".codex").is_dir()  # the folder is the user's, so it stays


def test_removing_a_setup_made_before_folders_were_recorded(home: Path) -> None:
    """Such a setup made its folders unrecorded: removal deletes the skill's own folder (named
    after kenning) and leaves the others, which it cannot tell from the user's."""
    assert run("setup-agent", "--agent", "claude", "--skill", "--subagent").exit_code == 0
    (Path(os.environ["KENNING_HOME"]) / "agents" / "created-folders.json").unlink()
    assert run("remove-agent", "--skill", "--subagent").exit_code == 0
    assert snapshot(home) == {f"{home}/.claude/agents/": b"", f"{home}/.claude/skills/": b""}


def test_review_skill_is_set_up_by_default_and_removed(home: Path) -> None:
    path = home / ".claude" / "skills" / templates.REVIEW_SKILL_NAME / "SKILL.md"
    assert run("setup-agent", "--agent", "claude").exit_code == 0
    assert path.read_text() == templates.review_skill()
    assert front_matter(path.read_text())["name"] == templates.REVIEW_SKILL_NAME
    assert "kenning impact" in path.read_text()
    assert run("remove-agent", "--agent", "claude", "--review").exit_code == 0
    assert not path.parent.exists()


def test_every_clients_user_files_lie_in_the_users_home_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # each client keeps its user files under the user's home folder on every system (on
    # Windows %USERPROFILE%\.claude, \.codex, ..., which Path.home() names there), so no
    # system's folder for settings (%APPDATA%, ~/Library) may appear in a place
    from kenning.agents.locations import PLACES

    profile = tmp_path / "profile"
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: profile))
    for variable in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "JUNIE_HOME"):
        monkeypatch.delenv(variable, raising=False)
    for name, place_of in PLACES.items():
        place = place_of("user", tmp_path / "project")
        assert place.base == profile and place.label == "~", name
        for component, path in place.files.items():
            assert path.is_relative_to(profile), (name, component, path)
