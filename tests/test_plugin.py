"""The Claude Code marketplace and plugins in the repository: what the generator writes, valid
against the documented formats, and a launcher that finds kenning or says how to install it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from kenning.agents import plugin, search_first, templates

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = Path(__file__).parent / "data" / "claude"
PLUGINS = [ROOT / plugin.FOLDER / plugin.MAIN, ROOT / plugin.FOLDER / plugin.SEARCH_FIRST]


def _schema(name: str) -> dict[str, object]:
    schema: dict[str, object] = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def _validate(path: Path, schema: str) -> dict[str, object]:
    document: dict[str, object] = json.loads(path.read_text())
    jsonschema.validate(document, _schema(schema), cls=jsonschema.Draft202012Validator)
    return document


def test_committed_files_are_what_the_generator_writes_now() -> None:
    for relative, text in plugin.files().items():
        path = ROOT / relative
        assert path.is_file(), f"{relative} is missing: run python .ci/write_plugins.py"
        assert path.read_text() == text, f"{relative} is stale: run python .ci/write_plugins.py"
    launchers = [ROOT / p for p in plugin.files() if p.endswith("/bin/kenning")]
    assert launchers and all(os.access(p, os.X_OK) for p in launchers)


def test_marketplace_and_plugins_follow_the_documented_schemas() -> None:
    market = _validate(ROOT / ".claude-plugin" / "marketplace.json", "marketplace")
    entries = market["plugins"]
    assert isinstance(entries, list)
    assert [e["name"] for e in entries] == [plugin.MAIN, plugin.SEARCH_FIRST]
    for entry, folder in zip(entries, PLUGINS, strict=True):
        assert (ROOT / entry["source"]).resolve() == folder
        manifest = _validate(folder / ".claude-plugin" / "plugin.json", "plugin")
        assert manifest["name"] == entry["name"]
        hooks = _validate(folder / "hooks" / "hooks.json", "hooks")["hooks"]
        assert isinstance(hooks, dict)
        for groups in hooks.values():
            for group in groups:
                re.compile(group.get("matcher", ""))
    servers = _validate(PLUGINS[0] / ".mcp.json", "mcp")["mcpServers"]
    assert servers == {"kenning": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/kenning",
                                   "args": ["mcp"]}}


def test_the_schemas_refuse_what_the_docs_refuse() -> None:
    bad_plugins = [{"name": "Kenning Search"}, {"name": "kenning", "hooks": "hooks/hooks.json"},
                   {"name": "kenning", "skills": "../skills"}, {"name": "kenning", "versoin": "1"}]
    for document in bad_plugins:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(document, _schema("plugin"))
    bad_markets = [{"name": "kenning", "plugins": []},  # no owner
                   {"name": "claude-plugins-official", "owner": {"name": "x"}, "plugins": []},
                   {"name": "kenning", "owner": {"name": "x"},
                    "plugins": [{"name": "kenning", "source": "plugins/kenning"}]}]
    for market in bad_markets:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(market, _schema("marketplace"))


def _front_matter(path: Path) -> dict[str, str]:
    text = path.read_text()
    assert text.startswith("---\n")
    matter: dict[str, str] = yaml.safe_load(text.split("---\n")[1])
    return matter


def test_skill_and_subagent_are_setup_agents_texts_with_the_plugins_tool_names() -> None:
    skill = PLUGINS[0] / "skills" / templates.SKILL_NAME / "SKILL.md"
    assert _front_matter(skill) == {"name": templates.SKILL_NAME,
                                    "description": templates.SKILL_DESCRIPTION}
    assert skill.read_text() == templates.skill(plugin.MARKER)
    review = PLUGINS[0] / "skills" / templates.REVIEW_SKILL_NAME / "SKILL.md"
    assert _front_matter(review) == {"name": templates.REVIEW_SKILL_NAME,
                                     "description": templates.REVIEW_SKILL_DESCRIPTION}
    agent = _front_matter(PLUGINS[0] / "agents" / f"{templates.SUBAGENT_NAME}.md")
    assert agent["name"] == templates.SUBAGENT_NAME
    tools = agent["tools"].split(", ")
    # Claude Code names a plugin's MCP tools mcp__plugin_<plugin>_<server>__<tool>
    assert "mcp__plugin_kenning_kenning__code_search" in tools
    assert not {"Edit", "Write", "Bash"} & set(tools)


def _kenning_wrapper(folder: Path) -> Path:
    """An executable named kenning that starts this test's kenning."""
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / "kenning"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m kenning "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def _tools_only(tmp_path: Path) -> Path:
    """A PATH folder with the few tools the launcher uses, and no Python."""
    bin_dir = tmp_path / "tools"
    bin_dir.mkdir()
    for tool in ("grep", "cat"):
        found = shutil.which(tool)
        assert found
        (bin_dir / tool).symlink_to(found)
    return bin_dir


def _launch(launcher: Path, path: str, home: Path, *args: str,
            **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", str(launcher), *args], capture_output=True, text=True,
                          env={"PATH": path, "HOME": str(home), **env}, timeout=60)


def test_launcher_finds_kenning_on_path_past_other_launchers(tmp_path: Path) -> None:
    launcher = PLUGINS[0] / "bin" / "kenning"
    other_plugin = tmp_path / "other-plugin"
    other_plugin.mkdir()
    shutil.copy(launcher, other_plugin / "kenning")  # another plugin's launcher comes first
    real = _kenning_wrapper(tmp_path / "venv" / "bin")
    tools = _tools_only(tmp_path)
    done = _launch(launcher, f"{other_plugin}:{real.parent}:{tools}", tmp_path, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("kenning, version")


def test_launcher_prefers_kenning_bin_and_knows_pipx(tmp_path: Path) -> None:
    launcher = PLUGINS[1] / "bin" / "kenning"
    tools = _tools_only(tmp_path)
    chosen = _kenning_wrapper(tmp_path / "elsewhere")
    done = _launch(launcher, str(tools), tmp_path, "--version", KENNING_BIN=str(chosen))
    assert done.stdout.startswith("kenning, version"), done.stderr
    _kenning_wrapper(tmp_path / ".local" / "pipx" / "venvs" / "kenning" / "bin")
    done = _launch(launcher, str(tools), tmp_path, "--version")
    assert done.stdout.startswith("kenning, version"), done.stderr


def test_launcher_without_kenning_says_how_to_install_it(tmp_path: Path) -> None:
    done = _launch(PLUGINS[0] / "bin" / "kenning", str(_tools_only(tmp_path)), tmp_path, "mcp")
    assert done.returncode == 127
    assert "kenning is not installed" in done.stderr and "pipx install ." in done.stderr
    assert done.stdout == ""


def test_plugin_hook_commands_run_through_the_launcher(tmp_path: Path) -> None:
    """The search-first plugin's hook, run as Claude Code runs it (a shell, with
    CLAUDE_PLUGIN_ROOT set), refuses a grep after a discovery request."""
    hooks = json.loads((PLUGINS[1] / "hooks" / "hooks.json").read_text())["hooks"]
    command = hooks["PreToolUse"][0]["hooks"][0]["command"]
    assert command == search_first.command((), '"${CLAUDE_PLUGIN_ROOT}/bin/kenning"')
    env = {"PATH": f"{_kenning_wrapper(tmp_path / 'bin').parent}:{os.environ['PATH']}",
           "HOME": str(tmp_path), "CLAUDE_PLUGIN_ROOT": str(PLUGINS[1]),
           "KENNING_HOME": os.environ["KENNING_HOME"]}
    base = {"session_id": "plugin-session", "transcript_path": str(tmp_path / "t.jsonl"),
            "cwd": str(tmp_path), "permission_mode": "default"}
    events = [{**base, "hook_event_name": "UserPromptSubmit",
               "prompt": "Where are failed uploads retried?"},
              {**base, "hook_event_name": "PreToolUse", "tool_name": "Grep",
               "tool_input": {"pattern": "retry"}, "tool_use_id": "toolu_01"}]
    answers = [subprocess.run(["/bin/sh", "-c", command], input=json.dumps(event), env=env,
                              capture_output=True, text=True, timeout=60) for event in events]
    assert [a.returncode for a in answers] == [0, 0], answers[-1].stderr
    assert answers[0].stdout == ""
    decision = json.loads(answers[1].stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
