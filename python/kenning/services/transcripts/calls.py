"""One agent session as the analysis sees it: its requests (tasks), the tool calls of each
with their kind and size, its thinking and its text, whatever client wrote it.

Sizes are estimated from characters (the call's input and its result as the transcript holds
them), at the three characters a token kenning's budgets use; the usage a client reports for
its model calls is kept beside them, as reported.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kenning.retrieval.budget import context_tokens
from kenning.services.transcripts import shell

PHASES = ("exploring", "editing", "running", "thinking", "other")
PHASE_OF = {"kenning": "exploring", "grep": "exploring", "glob": "exploring",
            "read": "exploring", "edit": "editing", "run": "running", "other": "other"}

# Tool names of the three clients, by kind (shell tools are told apart by their command).
_KINDS = {
    "grep": {"Grep", "grep_search", "search_file_content"},
    "glob": {"Glob", "LS", "glob", "list_directory"},
    "read": {"Read", "NotebookRead", "read_file", "read_many_files", "view_image"},
    "edit": {"Edit", "MultiEdit", "Write", "NotebookEdit", "write_file", "replace", "edit",
             "apply_patch"},
}
SHELL_TOOLS = {"Bash", "run_shell_command", "shell", "exec_command", "local_shell",
               "container.exec"}
_KENNING_LOOKUPS = {"code_search", "code_related"}
_KENNING_READS = {"code_get_chunk"}
_PATH_KEYS = ("file_path", "absolute_path", "path", "notebook_path")
# a path in a search's answer: folders and a file with an extension
_HIT = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.[A-Za-z][\w]{0,7})(?=[:\s\"',)]|$)")
MAX_HITS = 50


def tokens(value: Any) -> int:
    """The estimated tokens of a value as it enters a model's context."""
    if value is None:
        return 0
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return context_tokens(text)


def text_of(value: Any) -> str:
    """The text in a tool result: a string, content blocks, or a JSON value."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(text_of(v) for v in value)
    if isinstance(value, dict):
        for key in ("text", "output", "content", "llmContent", "stdout"):
            if key in value:
                return text_of(value[key])
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def _kenning_tool(name: str) -> str | None:
    """``lookup`` or ``read`` for kenning's MCP tools under any server or plugin name."""
    parts = name.split("__")
    if len(parts) < 2 or "kenning" not in "__".join(parts[:-1]).lower():
        return None
    if parts[-1] in _KENNING_LOOKUPS:
        return "lookup"
    return "read" if parts[-1] in _KENNING_READS else "other"


def shell_line(tool_input: Any) -> str:
    value = tool_input.get("command", tool_input.get("cmd")) if isinstance(
        tool_input, dict) else tool_input
    if isinstance(value, list):  # Codex passes argv: ["bash", "-lc", "rg x"]
        words = [str(v) for v in value]
        return words[-1] if len(words) >= 3 and words[1] in ("-lc", "-c") else " ".join(words)
    return value if isinstance(value, str) else ""


@dataclass
class Call:
    name: str
    kind: str  # kenning, grep, glob, read, edit, run, other
    tokens: int = 0
    paths: tuple[str, ...] = ()  # what a read read
    hits: tuple[str, ...] = ()  # what a kenning lookup answered with
    lookup: bool = False  # a kenning search or related lookup (not its get or status)

    @property
    def phase(self) -> str:
        return PHASE_OF[self.kind]

    def add_result(self, result: Any) -> None:
        text = text_of(result)
        self.tokens += context_tokens(text) if text else 0
        if self.lookup:
            self.hits = tuple(dict.fromkeys(_HIT.findall(text)))[:MAX_HITS]


def make_call(name: str, tool_input: Any) -> Call:
    """A tool call, its kind told by its name (and, for a shell, its command)."""
    size = tokens(tool_input)
    kenning = _kenning_tool(name)
    if kenning == "lookup":
        return Call(name, "kenning", size, lookup=True)
    if kenning == "read":
        return Call(name, "read", size)
    if name in SHELL_TOOLS or kenning is None and name.endswith("shell"):
        line = shell_line(tool_input)
        kind = shell.line_kind(line)
        return Call(name, kind, size, paths=tuple(shell.read_paths(line)),
                    lookup=kind == "kenning")
    for kind, names in _KINDS.items():
        if name in names:
            paths: tuple[str, ...] = ()
            if kind == "read" and isinstance(tool_input, dict):
                paths = tuple(str(tool_input[k]) for k in _PATH_KEYS if k in tool_input)
            return Call(name, kind, size, paths=paths)
    return Call(name, "other", size)


@dataclass
class Session:
    client: str  # claude, codex, gemini
    id: str
    project: str = ""  # the folder it ran in
    started: datetime | None = None
    ended: datetime | None = None
    tasks: list[list[Call]] = field(default_factory=lambda: [[]])  # calls per request
    thinking: int = 0  # estimated tokens of reasoning the transcript shows
    text: int = 0  # estimated tokens of the agent's own text
    usage: dict[str, int] = field(default_factory=dict)  # as the client reports it
    malformed: int = 0  # lines (or records) skipped

    def request(self) -> None:
        """A new request from the user starts a new task."""
        if self.tasks[-1]:
            self.tasks.append([])

    def add(self, call: Call) -> Call:
        self.tasks[-1].append(call)
        return call

    def seen(self, value: Any) -> None:
        """A record's time widens the session's span."""
        when = timestamp(value)
        if when is not None:
            self.started = min(self.started or when, when)
            self.ended = max(self.ended or when, when)

    def report(self, key: str, value: Any) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            self.usage[key] = self.usage.get(key, 0) + value


def timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        found = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return found if found.tzinfo else None
