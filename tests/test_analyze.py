"""`kenning analyze` on transcripts written in each client's format, as their documentation
and their recorders describe it: Claude Code's project JSONL, Codex's rollout JSONL and Gemini
CLI's chat JSON."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from kenning.cli import analyze_cmd, cli
from kenning.services.transcripts import report
from kenning.services.transcripts.calls import Session, make_call

PROJECT = "/home/dev/shop"
RETRY = f"{PROJECT}/src/payments/retry.py"


def _jsonl(path: Path, records: list[Any], garbage: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in records]
    if garbage is not None:
        lines.insert(2, garbage)
    path.write_text("\n".join(lines) + "\n")
    return path


def _claude_line(kind: str, message: dict[str, Any], n: int, **extra: Any) -> dict[str, Any]:
    return {"parentUuid": None if n == 0 else f"u{n - 1}", "isSidechain": False,
            "userType": "external", "cwd": PROJECT, "sessionId": "0b6c-claude",
            "version": "2.0.14", "gitBranch": "main", "type": kind, "message": message,
            "uuid": f"u{n}", "timestamp": f"2026-11-30T10:{n:02d}:00.000Z", **extra}


def _assistant(msg_id: str, block: dict[str, Any]) -> dict[str, Any]:
    return {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [block], "stop_reason": None,
            "usage": {"input_tokens": 12, "cache_creation_input_tokens": 300,
                      "cache_read_input_tokens": 9000, "output_tokens": 80}}


def _result(tool_id: str, text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"tool_use_id": tool_id, "type": "tool_result",
                                         "content": text}]}


def claude_session(home: Path) -> Path:
    hit = "src/payments/retry.py:12-40  function RetryPolicy.backoff\n" + "x" * 300
    records: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("user", {"role": "user", "content": "Where are failed payments retried?"}, {}),
        # one API message written as two lines (thinking, then the call): usage counted once
        ("assistant", _assistant("msg_1", {"type": "thinking", "thinking": "t" * 90,
                                           "signature": "sig"}), {}),
        ("assistant", _assistant("msg_1", {
            "type": "tool_use", "id": "toolu_1", "name": "mcp__kenning__code_search",
            "input": {"query": "retry failed payments"}}), {}),
        ("user", _result("toolu_1", hit), {"toolUseResult": {}}),
        ("assistant", _assistant("msg_2", {"type": "tool_use", "id": "toolu_2", "name": "Read",
                                           "input": {"file_path": RETRY}}), {}),
        ("user", _result("toolu_2", "def backoff():\n" * 30), {}),
        ("assistant", _assistant("msg_3", {"type": "tool_use", "id": "toolu_3", "name": "Edit",
                                           "input": {"file_path": RETRY, "old_string": "a",
                                                     "new_string": "b"}}), {}),
        ("user", _result("toolu_3", "ok"), {}),
        ("assistant", _assistant("msg_4", {"type": "tool_use", "id": "toolu_4", "name": "Bash",
                                           "input": {"command": "pytest -q tests/payments",
                                                     "description": "Run the tests"}}), {}),
        ("user", _result("toolu_4", "3 passed"), {}),
        ("assistant", _assistant("msg_5", {"type": "text", "text": "Done: " + "y" * 60}), {}),
        ("user", {"role": "user", "content": [{"type": "text", "text": "and who calls it?"}]}, {}),
        ("assistant", _assistant("msg_6", {"type": "tool_use", "id": "toolu_5", "name": "Grep",
                                           "input": {"pattern": "backoff("}}), {}),
        ("user", _result("toolu_5", "src/a.py:3"), {}),
        # a subagent's call belongs to the session but starts no request
        ("user", {"role": "user", "content": "Find the callers"}, {"isSidechain": True}),
        ("assistant", _assistant("msg_7", {"type": "tool_use", "id": "toolu_6", "name": "Glob",
                                           "input": {"pattern": "**/*.py"}}),
         {"isSidechain": True}),
    ]
    lines = [_claude_line(kind, message, n, **extra)
             for n, (kind, message, extra) in enumerate(records)]
    lines.append({"type": "summary", "summary": "Payment retries", "leafUuid": "u15"})
    return _jsonl(home / ".claude" / "projects" / "-home-dev-shop" / "0b6c-claude.jsonl", lines,
                  garbage='{"type": "user", "message": ')


def codex_session(home: Path) -> Path:
    def item(payload: dict[str, Any], n: int) -> dict[str, Any]:
        return {"timestamp": f"2026-11-30T11:{n:02d}:00.000Z", "type": "response_item",
                "payload": payload}

    shell = {"type": "function_call", "name": "shell", "call_id": "call_1",
             "arguments": json.dumps({"command": ["bash", "-lc", "rg -n 'refund' src"],
                                      "workdir": PROJECT})}
    records = [
        {"timestamp": "2026-11-30T11:00:00.000Z", "type": "session_meta",
         "payload": {"id": "0199-codex", "timestamp": "2026-11-30T11:00:00.000Z", "cwd": PROJECT,
                     "originator": "codex_cli_rs", "cli_version": "0.46.0", "source": "cli"}},
        {"timestamp": "2026-11-30T11:00:01.000Z", "type": "turn_context",
         "payload": {"cwd": PROJECT, "approval_policy": "on-request", "model": "gpt-5-codex"}},
        item({"type": "message", "role": "user", "content": [
            {"type": "input_text",
             "text": "<environment_context>\n  <cwd>/home/dev/shop</cwd>"}]}, 1),
        item({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "how are refunds computed?"}]}, 2),
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Looking**"}],
              "content": None, "encrypted_content": "gAAAA"}, 3),
        item(shell, 4),
        item({"type": "function_call_output", "call_id": "call_1",
              "output": json.dumps({"output": "src/refund.py:9: def refund()",
                                    "metadata": {"exit_code": 0}})}, 5),
        item({"type": "function_call", "name": "mcp__kenning__code_search", "call_id": "call_2",
              "arguments": json.dumps({"query": "refund amount"})}, 6),
        item({"type": "function_call_output", "call_id": "call_2",
              "output": "src/refund.py:1-30 refund"}, 7),
        item({"type": "function_call", "name": "shell", "call_id": "call_3",
              "arguments": json.dumps({"command": ["bash", "-lc",
                                                   "sed -n 1,40p src/refund.py"]})}, 8),
        item({"type": "function_call_output", "call_id": "call_3",
              "output": "def refund(): ..."}, 9),
        item({"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_4",
              "input": "*** Begin Patch\n*** Update File: src/refund.py\n*** End Patch"}, 10),
        item({"type": "custom_tool_call_output", "call_id": "call_4", "output": "Success."}, 11),
        item({"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Refunds are computed in src/refund.py."}]}, 12),
        {"timestamp": "2026-11-30T11:13:00.000Z", "type": "event_msg",
         "payload": {"type": "token_count", "info": {
             "total_token_usage": {"input_tokens": 5000, "cached_input_tokens": 4000,
                                   "output_tokens": 700, "reasoning_output_tokens": 450,
                                   "total_tokens": 5700},
             "last_token_usage": {"input_tokens": 900}, "model_context_window": 272000}}},
    ]
    return _jsonl(home / ".codex" / "sessions" / "2026" / "11" / "30"
                  / "rollout-2026-11-30T11-00-00-0199-codex.jsonl", records, garbage="garbage")


def gemini_session(home: Path, project: str = PROJECT, started: str = "2026-11-30T12") -> Path:
    project_hash = hashlib.sha256(project.encode()).hexdigest()
    document = {
        "sessionId": f"gem-{started}", "projectHash": project_hash,
        "startTime": f"{started}:00:00.000Z", "lastUpdated": f"{started}:05:00.000Z",
        "messages": [
            {"id": "m1", "timestamp": f"{started}:00:00.000Z", "type": "user",
             "content": "Where is the cart total computed?"},
            {"id": "m2", "timestamp": f"{started}:01:00.000Z", "type": "gemini",
             "content": "Let me look.", "model": "gemini-2.5-pro",
             "thoughts": [{"subject": "Searching", "description": "for the cart total",
                           "timestamp": f"{started}:01:00.000Z"}],
             "tokens": {"input": 2000, "output": 100, "cached": 0, "thoughts": 250, "tool": 0,
                        "total": 2350},
             "toolCalls": [
                 {"id": "c1", "name": "search_file_content", "args": {"pattern": "total"},
                  "result": [{"functionResponse": {"id": "c1", "name": "search_file_content",
                                                   "response": {"output": "src/cart.py:4"}}}],
                  "status": "success", "timestamp": f"{started}:01:10.000Z"},
                 {"id": "c2", "name": "read_file",
                  "args": {"absolute_path": f"{project}/src/cart.py"},
                  "result": [{"functionResponse": {"response": {"output": "def total(): ..."}}}],
                  "status": "success", "timestamp": f"{started}:01:20.000Z"},
                 {"id": "c3", "name": "replace", "args": {"file_path": f"{project}/src/cart.py",
                                                          "old_string": "a", "new_string": "b"},
                  "status": "success", "timestamp": f"{started}:01:30.000Z"},
                 {"id": "c4", "name": "run_shell_command", "args": {"command": "npm test"},
                  "status": "success", "timestamp": f"{started}:01:40.000Z"}]},
            "not a message",
        ]}
    path = home / ".gemini" / "tmp" / project_hash / "chats" / f"session-{started}-abc.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


@pytest.fixture
def home(user_home: Path) -> Path:
    claude_session(user_home)
    codex_session(user_home)
    gemini_session(user_home)
    return user_home


def _files(*roots: Path) -> dict[str, tuple[int, float]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime)
            for root in roots for p in root.rglob("*")}


def _analyze(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["analyze", "--json-output", *args])
    assert result.exit_code == 0, result.output
    decoded: dict[str, Any] = json.loads(result.stdout)
    return decoded


def test_each_clients_transcript_is_read_by_phase_and_nothing_is_written(home: Path) -> None:
    kenning_home = Path(os.environ["KENNING_HOME"])
    before = _files(home, kenning_home)
    found = _analyze()
    assert _files(home, kenning_home) == before
    assert found["sessions_by_client"] == {"claude": 1, "codex": 1, "gemini": 1}
    assert found["files_read"] == 3 and found["malformed_lines_skipped"] == 3
    sessions = {s["client"]: s for s in found["sessions"]}
    claude = sessions["claude"]
    assert claude["id"] == "0b6c-claude" and claude["project"] == PROJECT
    assert claude["requests"] == 2  # the subagent's prompt is no request
    assert claude["calls_by_kind"] == {"kenning": 1, "read": 1, "edit": 1, "run": 1,
                                       "grep": 1, "glob": 1}
    assert claude["calls"] == {"exploring": 4, "editing": 1, "running": 1, "thinking": 0,
                               "other": 0}
    assert claude["tokens"]["thinking"] == 30  # 90 characters of thinking
    # seven API messages, each counted once although msg_1 spans two lines
    assert claude["reported_usage"] == {"input": 84, "output": 560, "cache_read": 63000,
                                        "cache_write": 2100}
    assert claude["kenning"] == {"lookups": 1, "sessions_with": 1,
                                 "followed_by_read_of_hit": 1, "followed_by_grep_or_glob": 0}
    codex = sessions["codex"]
    assert codex["requests"] == 1 and codex["project"] == PROJECT
    assert codex["calls_by_kind"] == {"grep": 1, "kenning": 1, "read": 1, "edit": 1}
    assert codex["tokens"]["thinking"] == 450  # reported reasoning beats the summary shown
    assert codex["reported_usage"] == {"input": 5000, "output": 700, "cache_read": 4000,
                                       "reasoning": 450}
    assert codex["kenning"]["followed_by_read_of_hit"] == 1
    gemini = sessions["gemini"]
    assert gemini["calls_by_kind"] == {"grep": 1, "read": 1, "edit": 1, "run": 1}
    assert gemini["project"].startswith("gemini:")
    assert found["kenning"]["lookups"] == 2 and found["kenning"]["sessions_with"] == 2
    assert set(found["method"]) == {"tokens", "phases", "follow_ups", "savings"}
    assert found["savings"]["tokens_saved"] is None  # too few requests to compare


def test_project_and_since_narrow_the_sessions(home: Path) -> None:
    other = gemini_session(home, project="/home/dev/blog", started="2026-10-01T09")
    os.utime(other, (1759309200, 1759309200))  # written on 2025-10-01
    assert _analyze("--project", PROJECT)["sessions_by_client"] == {
        "claude": 1, "codex": 1, "gemini": 1}  # Gemini's by the hash of the folder
    assert _analyze("--project", "/home/dev/blog")["sessions_count"] == 1
    recent = _analyze("--since", "2026-11-30")
    assert recent["sessions_count"] == 3 and recent["files_read"] == 3
    assert _analyze("--since", "2026-11-30T11:30")["sessions_by_client"] == {"gemini": 1}
    assert _analyze("--client", "codex")["sessions_by_client"] == {"codex": 1}


def test_human_output_states_the_method_and_a_bad_since_is_one_line(home: Path) -> None:
    shown = CliRunner().invoke(cli, ["analyze", "--sessions"])
    assert shown.exit_code == 0, shown.output
    assert "exploring" in shown.stdout and "method:" in shown.stdout
    assert "0b6c-claude" in shown.stdout and "3 malformed lines skipped" in shown.stdout
    bad = CliRunner().invoke(cli, ["analyze", "--since", "last tuesday"])
    assert bad.exit_code == 2 and "'last tuesday' is neither a date" in bad.stderr


def test_progress_goes_to_stderr_off_a_terminal(home: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(analyze_cmd._Progress, "EVERY", 0.0)
    done = CliRunner().invoke(cli, ["analyze", "--json-output"])
    assert json.loads(done.stdout)["files_read"] == 3
    assert "kenning analyze: 3/3 transcripts read" in done.stderr


def _task(session: Session, exploring: int, kenning: bool) -> None:
    session.request()
    if kenning:
        session.add(make_call("mcp__kenning__code_search", {"query": "q"}))
    session.add(make_call("Grep", "x" * (3 * exploring)))


def test_savings_compare_requests_with_and_without_kenning() -> None:
    session = Session("claude", "s")
    for _ in range(5):
        _task(session, 100, kenning=True)
        _task(session, 1000, kenning=False)
    savings = report.Savings()
    savings.add(session)
    found = savings.to_dict()
    with_kenning = found["mean_exploring_tokens_with"]
    assert found["mean_exploring_tokens_without"] > with_kenning
    assert found["tokens_saved"] == round((found["mean_exploring_tokens_without"]
                                           - with_kenning) * 5)
    few = report.Savings()
    few.with_kenning, few.without = [10] * 4, [100] * 9
    assert few.to_dict()["tokens_saved"] is None
