"""The opt-in search-first hook: real hook payloads of Claude Code, Codex and Gemini CLI (as
their hooks references give them) fed to `kenning hook search-first` as a subprocess, and its
setup and byte-for-byte removal by `kenning setup-agent --search-first` / `remove-agent`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from kenning.agents import launcher, search_first
from kenning.cli import cli

HOOK = [sys.executable, "-m", "kenning", "hook", "search-first"]


@pytest.fixture
def home(user_home: Path) -> Path:
    return user_home


class Session:
    """One agent session whose events go to the hook, each as its own process."""

    def __init__(self, tmp_path: Path, client: str, session_id: str = "5f1c2b9e-session") -> None:
        self.client, self.cwd = client, tmp_path
        self.base: dict[str, Any] = {"session_id": session_id, "cwd": str(tmp_path)}
        if client == "gemini":
            self.base |= {"transcript_path": str(tmp_path / "chat.json"),
                          "timestamp": "2026-12-07T10:00:00.000Z"}
        else:
            self.base |= {"transcript_path": str(tmp_path / "t.jsonl"),
                          "permission_mode": "default"}
            if client == "codex":
                self.base |= {"model": "gpt-5-codex"}
        self.tmp = tmp_path / "tmp"
        self.tmp.mkdir(exist_ok=True)

    def send(self, payload: dict[str, Any]) -> str:
        done = subprocess.run(HOOK, input=json.dumps({**self.base, **payload}),
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "TMPDIR": str(self.tmp)})
        assert done.returncode == 0 and done.stderr == "", done.stderr
        return done.stdout.strip()

    def prompt(self, text: str) -> str:
        if self.client == "gemini":
            return self.send({"hook_event_name": "BeforeAgent", "prompt": text})
        extra = {"turn_id": "turn-1"} if self.client == "codex" else {}
        return self.send({"hook_event_name": "UserPromptSubmit", "prompt": text, **extra})

    def before(self, tool: str, tool_input: dict[str, Any]) -> str:
        event = "BeforeTool" if self.client == "gemini" else "PreToolUse"
        extra = {} if self.client == "gemini" else {"tool_use_id": "toolu_01ABC"}
        return self.send({"hook_event_name": event, "tool_name": tool,
                          "tool_input": tool_input, **extra})

    def after(self, tool: str, tool_input: dict[str, Any]) -> str:
        if self.client == "gemini":
            return self.send({"hook_event_name": "AfterTool", "tool_name": tool,
                              "tool_input": tool_input,
                              "tool_response": {"llmContent": "1 result", "returnDisplay": ""}})
        extra = {"turn_id": "turn-1"} if self.client == "codex" else {}
        return self.send({"hook_event_name": "PostToolUse", "tool_name": tool,
                          "tool_input": tool_input, "tool_use_id": "toolu_02DEF",
                          "tool_response": {"stdout": "src/upload.py:12", "stderr": ""},
                          **extra})


def refused(answer: str) -> bool:
    if not answer or answer == "{}":
        return False
    decoded = json.loads(answer)
    if "decision" in decoded:  # Gemini CLI
        assert decoded["decision"] == "deny" and "kenning search" in decoded["reason"]
        return True
    output = decoded["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse" and output["permissionDecision"] == "deny"
    assert "code_search" in output["permissionDecisionReason"]
    return True


def test_claude_code_grep_waits_for_one_search_made_through_mcp(tmp_path: Path) -> None:
    claude = Session(tmp_path, "claude")
    assert claude.prompt("Where are failed uploads retried, and with what backoff?") == ""
    assert refused(claude.before("Grep", {"pattern": "retry", "output_mode": "content"}))
    assert not refused(claude.before("Read", {"file_path": str(tmp_path / "a.py")}))
    claude.after("mcp__plugin_kenning_kenning__code_search", {"query": "upload retries"})
    assert not refused(claude.before("Grep", {"pattern": "retry"}))
    assert not refused(claude.before("Glob", {"pattern": "**/*.py"}))
    # the next request that needs discovery asks again
    claude.prompt("How is the session token refreshed when it expires?")
    assert refused(claude.before("Bash", {"command": "rg -n refresh | head", "timeout": 1000}))
    # no state outside KENNING_HOME, none in the temporary folder
    assert not any(claude.tmp.iterdir())
    states = list((Path(os.environ["KENNING_HOME"]) / "agents" / "sessions").glob("*.json"))
    assert len(states) == 1


def test_a_search_through_the_cli_counts_and_refusals_are_capped(tmp_path: Path) -> None:
    claude = Session(tmp_path, "claude")
    claude.prompt("Find where the rate limiter decides to reject a request")
    answers = [claude.before("Bash", {"command": command}) for command in
               ("grep -rn limit .", "find . -name '*.py'", "git grep reject", "ag reject")]
    assert [refused(a) for a in answers] == [True] * search_first.MAX_REFUSALS + [False] * (
        4 - search_first.MAX_REFUSALS)
    claude.prompt("where else is a request rejected?")
    assert not refused(claude.before("Bash", {"command": "kenning search 'reject request'"}))
    claude.after("Bash", {"command": "kenning search 'reject request' --limit 5"})
    assert not refused(claude.before("Grep", {"pattern": "reject"}))


def test_requests_naming_a_file_or_symbol_or_not_about_code_pass_at_once() -> None:
    """In process (the subprocess tests above run the same ``run``): only the verdicts."""
    base = {"session_id": "other-session", "cwd": "/p", "transcript_path": "/p/t.jsonl",
            "permission_mode": "default"}

    def send(payload: dict[str, Any]) -> str:
        return search_first.run(json.dumps({**base, **payload}))

    grep = {"hook_event_name": "PreToolUse", "tool_name": "Grep", "tool_input": {"pattern": "x"},
            "tool_use_id": "t"}
    for request in ("Fix the retry loop in src/net/client.py", "Why does parse_header fail?",
                    "How does `Client.send` choose a timeout?", "commit and push this",
                    "run the tests", "ok"):
        assert send({"hook_event_name": "UserPromptSubmit", "prompt": request}) == ""
        assert not refused(send(grep)), request
    send({"hook_event_name": "UserPromptSubmit", "prompt": "How are retries handled?"})
    for command in ("pytest -q tests", "echo find me", "ls -la src"):
        assert not refused(send({**grep, "tool_name": "Bash",
                                 "tool_input": {"command": command}})), command
    assert refused(send(grep))


def test_codex_payloads_steer_its_shell_and_see_mcp_searches(tmp_path: Path) -> None:
    codex = Session(tmp_path, "codex")
    codex.prompt("where do we validate the uploaded file size?")
    assert refused(codex.before("Bash", {"command": "rg -n 'max_size' src"}))
    codex.after("mcp__kenning__code_related", {"location": "src/upload.py:12"})
    assert not refused(codex.before("Bash", {"command": "rg -n 'max_size' src"}))


def test_gemini_cli_payloads_are_answered_in_its_format(tmp_path: Path) -> None:
    gemini = Session(tmp_path, "gemini")
    assert gemini.prompt("how are search results ranked?") == "{}"
    assert refused(gemini.before("search_file_content", {"pattern": "rank"}))
    assert refused(gemini.before("run_shell_command", {"command": "grep -rn rank python"}))
    assert not refused(gemini.before("glob", {"pattern": "**/*.py"}))  # the cap is two
    gemini.prompt("how does the ranking treat tests?")
    assert gemini.after("mcp__kenning__code_search", {"query": "ranking of tests"}) == "{}"
    assert gemini.before("glob", {"pattern": "**/*.py"}) == "{}"


def test_bad_payloads_let_everything_through(tmp_path: Path) -> None:
    for stdin in ("", "not json", "[1, 2]", '{"hook_event_name": "PreToolUse"}',
                  '{"session_id": 3, "hook_event_name": "UserPromptSubmit"}'):
        done = subprocess.run(HOOK, input=stdin, capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stdout) == (0, ""), stdin


def test_requests_are_classified_by_what_they_name() -> None:
    assert search_first.needs_discovery("Where is the config file parsed?")
    assert search_first.needs_discovery("add a retry with backoff to the http client")
    assert search_first.needs_discovery("why does indexing fail on big repos, e.g. linux?")
    assert search_first.needs_discovery("explain input/output handling")  # and/or is no path
    for named in ("look at python/kenning/cli", "fix tests/test_x.py", "what calls load_settings",
                  "how does HttpClient retry", "what does `search` return", "is Foo.bar used?",
                  "change the signature of parse()"):
        assert not search_first.needs_discovery(named), named


# -- setup and removal --------------------------------------------------------------------

def _user_files(home: Path) -> dict[str, Path]:
    return {"claude": home / ".claude" / "settings.json",
            "codex": home / ".codex" / "hooks.json",
            "gemini": home / ".gemini" / "settings.json"}


def test_setup_adds_the_hook_only_when_asked_and_removal_restores_every_byte(
        home: Path) -> None:
    files = _user_files(home)
    for path in files.values():
        path.parent.mkdir(parents=True)
    mine: dict[str, Any] = {"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [
        {"type": "command", "command": "./check.sh"}]}]}, "theme": "dark"}
    files["claude"].write_text(json.dumps(mine, indent=4) + "\n")
    files["gemini"].write_text('{\n  "mcpServers": {}\n}\n')
    before = {name: path.read_bytes() for name, path in files.items() if path.exists()}

    default = CliRunner().invoke(cli, ["setup-agent", "--agent", "all", "--dry-run"])
    assert default.exit_code == 0 and "search-first" not in default.output

    done = CliRunner().invoke(cli, ["setup-agent", "--agent", "all", "--search-first"])
    assert done.exit_code == 0, done.output
    command = search_first.command(launcher.running())
    claude = json.loads(files["claude"].read_text())["hooks"]
    assert claude["PreToolUse"][0] == mine["hooks"]["PreToolUse"][0]
    assert claude["PreToolUse"][1]["hooks"][0]["command"] == command
    assert set(claude) == {"PreToolUse", "PostToolUse", "UserPromptSubmit"}
    codex = json.loads(files["codex"].read_text())["hooks"]
    assert codex == search_first.claude_groups(launcher.running())
    gemini = json.loads(files["gemini"].read_text())
    assert gemini["hooks"] == search_first.gemini_groups(launcher.running())
    again = CliRunner().invoke(cli, ["setup-agent", "--agent", "all", "--search-first"])
    assert "Nothing to change" in again.output

    removed = CliRunner().invoke(cli, ["remove-agent", "--agent", "all"])
    assert removed.exit_code == 0, removed.output
    assert {name: path.read_bytes() for name, path in files.items() if path.exists()} == before
    assert not files["codex"].exists()


def test_the_installed_hook_command_runs_in_a_shell(home: Path, tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, ["setup-agent", "--agent", "claude", "--search-first"])
    assert done.exit_code == 0, done.output
    settings = json.loads(_user_files(home)["claude"].read_text())["hooks"]
    command = settings["PreToolUse"][0]["hooks"][0]["command"]
    base = {"session_id": "shell-session", "cwd": str(tmp_path), "permission_mode": "default",
            "transcript_path": str(tmp_path / "t.jsonl")}
    for payload in ({**base, "hook_event_name": "UserPromptSubmit",
                     "prompt": "where is the cache evicted?"},
                    {**base, "hook_event_name": "PreToolUse", "tool_name": "Grep",
                     "tool_input": {"pattern": "evict"}, "tool_use_id": "t1"}):
        answer = subprocess.run(["/bin/sh", "-c", command], input=json.dumps(payload),
                                capture_output=True, text=True, timeout=60)
    assert refused(answer.stdout.strip())
