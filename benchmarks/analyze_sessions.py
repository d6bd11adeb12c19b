"""`kenning analyze` on a generated home folder of agent transcripts: time and peak memory.

The folder (regenerated only when missing) holds ``--sessions`` sessions, 60% Claude Code,
25% Codex and 15% Gemini CLI, each in its client's format (as tests/test_analyze.py writes
them), with ``--requests`` requests of ``--calls`` tool calls each (a kenning search in one
request of three, then reads, greps, edits and test runs) whose results are ``--result-bytes``
long. `kenning analyze --json-output` then runs in a fresh process with HOME pointing there;
the script prints its wall and CPU time, its peak resident memory and what it counted.

    python benchmarks/analyze_sessions.py [--sessions 1000] [--requests 6] [--calls 10] \
        [--result-bytes 3000] [--home /tmp/kenning-analyze-home]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TOOLS = [("Grep", {"pattern": "retry"}), ("Read", {"file_path": "/src/app/{n}.py"}),
         ("Edit", {"file_path": "/src/app/{n}.py", "old_string": "a", "new_string": "b"}),
         ("Bash", {"command": "pytest -q tests/test_{n}.py"}), ("Glob", {"pattern": "**/*.py"})]
CODEX_TOOLS = ["rg -n retry src", "sed -n 1,80p src/app/{n}.py", "pytest -q", "ls src"]
GEMINI_TOOLS = [("search_file_content", {"pattern": "retry"}),
                ("read_file", {"absolute_path": "/src/app/{n}.py"}),
                ("replace", {"file_path": "/src/app/{n}.py"}),
                ("run_shell_command", {"command": "npm test"})]


def _fill(value: dict[str, str], n: int) -> dict[str, str]:
    return {k: v.replace("{n}", str(n)) for k, v in value.items()}


def claude(path: Path, index: int, requests: int, calls: int, body: str) -> None:
    sid = f"claude-{index:05d}"
    lines: list[dict[str, Any]] = []

    def add(kind: str, message: dict[str, Any]) -> None:
        lines.append({"type": kind, "sessionId": sid, "cwd": f"/work/project{index % 20}",
                      "timestamp": f"2026-11-{1 + index % 28:02d}T10:00:{len(lines) % 60:02d}Z",
                      "uuid": f"{sid}-{len(lines)}", "message": message})

    for r in range(requests):
        add("user", {"role": "user", "content": f"where is feature {r} of {index} handled?"})
        for c in range(calls):
            tool_id = f"toolu_{r}_{c}"
            if c == 0 and r % 3 == 0:
                name, args = "mcp__kenning__code_search", {"query": f"feature {r}"}
                result = f"src/app/{r}.py:10-40 handler\n" + body
            else:
                name, args = TOOLS[c % len(TOOLS)]
                args, result = _fill(args, r), body
            add("assistant", {"id": f"msg_{r}_{c}", "role": "assistant", "content": [
                {"type": "thinking", "thinking": "checking " * 20},
                {"type": "tool_use", "id": tool_id, "name": name, "input": args}],
                "usage": {"input_tokens": 20, "output_tokens": 90,
                          "cache_read_input_tokens": 15000}})
            add("user", {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tool_id, "content": result}]})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(map(json.dumps, lines)) + "\n")


def codex(path: Path, index: int, requests: int, calls: int, body: str) -> None:
    def item(payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": "2026-11-20T10:00:00Z", "type": "response_item", "payload": payload}

    lines = [{"timestamp": "2026-11-20T10:00:00Z", "type": "session_meta",
              "payload": {"id": f"codex-{index:05d}", "cwd": f"/work/project{index % 20}"}}]
    for r in range(requests):
        lines.append(item({"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": f"how does {r} work?"}]}))
        for c in range(calls):
            command = CODEX_TOOLS[c % len(CODEX_TOOLS)].replace("{n}", str(r))
            lines.append(item({"type": "function_call", "name": "shell", "call_id": f"c{r}_{c}",
                               "arguments": json.dumps({"command": ["bash", "-lc", command]})}))
            lines.append(item({"type": "function_call_output", "call_id": f"c{r}_{c}",
                               "output": json.dumps({"output": body})}))
        lines.append({"timestamp": "2026-11-20T10:00:00Z", "type": "event_msg", "payload": {
            "type": "token_count", "info": {"total_token_usage": {
                "input_tokens": 1000 * r, "output_tokens": 100 * r}}}})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(map(json.dumps, lines)) + "\n")


def gemini(home: Path, index: int, requests: int, calls: int, body: str) -> None:
    project = f"/work/project{index % 20}"
    digest = hashlib.sha256(project.encode()).hexdigest()
    messages: list[dict[str, Any]] = []
    for r in range(requests):
        messages.append({"id": f"u{r}", "type": "user", "content": f"where is {r}?",
                         "timestamp": "2026-11-25T10:00:00Z"})
        messages.append({"id": f"g{r}", "type": "gemini", "content": "Looking.",
                         "timestamp": "2026-11-25T10:00:00Z",
                         "tokens": {"input": 3000, "output": 80, "thoughts": 40},
                         "toolCalls": [{"id": f"t{r}_{c}", "name": name, "args": _fill(args, r),
                                        "result": [{"functionResponse": {
                                            "response": {"output": body}}}]}
                                       for c, (name, args) in
                                       ((c, GEMINI_TOOLS[c % len(GEMINI_TOOLS)])
                                        for c in range(calls))]})
    folder = home / ".gemini" / "tmp" / digest / "chats"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"session-{index:05d}.json").write_text(json.dumps({
        "sessionId": f"gemini-{index:05d}", "projectHash": digest,
        "startTime": "2026-11-25T10:00:00Z", "lastUpdated": "2026-11-25T10:05:00Z",
        "messages": messages}))


def generate(home: Path, sessions: int, requests: int, calls: int, result_bytes: int) -> None:
    marker = home / f".generated-{sessions}-{requests}-{calls}-{result_bytes}"
    if marker.exists():
        return
    body = ("    return retry(request, attempts=3)  # line of code\n" * (result_bytes // 50 + 1))
    body = body[:result_bytes]
    for i in range(sessions):
        share = i % 20
        if share < 12:
            claude(home / ".claude" / "projects" / f"-work-project{i % 20}"
                   / f"claude-{i:05d}.jsonl", i, requests, calls, body)
        elif share < 17:
            codex(home / ".codex" / "sessions" / "2026" / "11" / "20"
                  / f"rollout-2026-11-20T10-00-00-{i:05d}.jsonl", i, requests, calls, body)
        else:
            gemini(home, i, requests, calls, body)
    marker.touch()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=6)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--result-bytes", type=int, default=3000)
    parser.add_argument("--home", type=Path, default=Path("/tmp/kenning-analyze-home"))
    args = parser.parse_args()
    started = time.perf_counter()
    generate(args.home, args.sessions, args.requests, args.calls, args.result_bytes)
    size = sum(p.stat().st_size for p in args.home.rglob("*") if p.is_file())
    print(f"generated in {time.perf_counter() - started:.1f} s: {args.sessions} sessions, "
          f"{size / 1e6:.0f} MB", file=sys.stderr)
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "HOME": str(args.home), "KENNING_HOME": state,
               "KENNING_CONFIG": f"{state}/config.toml"}
        env.pop("CLAUDE_CONFIG_DIR", None)
        env.pop("CODEX_HOME", None)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "kenning", "analyze", "--json-output"],
                              env=env, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    found = json.loads(done.stdout)
    assert found["sessions_count"] == args.sessions, found["sessions_count"]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(json.dumps({"sessions": found["sessions_count"], "files": found["files_read"],
                      "megabytes": round(size / 1e6), "wall_s": round(wall, 2),
                      "cpu_s": round(cpu, 2), "peak_rss_mb": round(after.ru_maxrss / 1024),
                      "lookups": found["kenning"]["lookups"], "tokens": found["tokens"]}))


if __name__ == "__main__":
    main()
