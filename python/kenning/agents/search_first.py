"""The opt-in search-first hook: one kenning search before grep, find and glob on a task that
needs code discovery.

One command, ``kenning hook search-first``, answers every event it is registered for; the
payload on stdin names the event. Claude Code and Codex send the same JSON (Codex's PreToolUse
sees only Bash), Gemini CLI its own:

- a request (``UserPromptSubmit``; Gemini ``BeforeAgent``) is classified once: it needs discovery
  when it asks where or how something is done, or to add, fix or change behaviour, and names
  neither a file nor a symbol (see :func:`needs_discovery`); that starts the request's state;
- a tool call about to run (``PreToolUse``; ``BeforeTool``) that greps, finds or globs is refused,
  with a message that asks for one kenning search first, while the request needs discovery, no
  kenning search has run since it, and fewer than ``MAX_REFUSALS`` calls were refused for it;
  anything else runs;
- a tool call that ran (``PostToolUse``; ``AfterTool``) that is a kenning search or related
  lookup, through MCP (``code_search``, ``code_related``) or the shell (``kenning search``,
  ``kenning related``, ``kenning impact``), is recorded for the session, so either way counts.

The state is one small JSON file per session under ``$KENNING_HOME/agents/sessions/`` (named
by a hash of the session id), locked while read and written, so parallel tool calls never
refuse more than the limit; files untouched for a week are deleted. The hook never fails the
agent: a payload it cannot read, or a state it cannot write, lets the call through.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kenning.agents.launcher import is_kenning
from kenning.services.transcripts import shell

MAX_REFUSALS = 2
STATE_DAYS = 7
SUBCOMMAND = ("hook", "search-first")
HOOK_NAME = "kenning-search-first"

# Tool names, per client, of the calls that look for code by text or name.
_SEARCH_TOOLS = {"Grep", "Glob", "glob", "search_file_content", "grep_search"}
_SHELL_TOOLS = {"Bash", "run_shell_command", "shell", "exec_command"}
_MCP_LOOKUPS = {"code_search", "code_related"}

REFUSAL = (
    "kenning search-first: this request needs code discovery, so start with one semantic "
    "search: the kenning MCP tool code_search (or `kenning search \"<what you are looking "
    "for>\"` in the shell) with the request's own words, then read its best hit. Grep, find "
    "and glob run again right after that search (and after {left} more refusal{s} whatever "
    "happens)."
)


# -- the hook entries ----------------------------------------------------------------------

def command(launcher: Sequence[str], shell_word: str | None = None) -> str:
    return " ".join([shell_word or shlex.join(launcher), *SUBCOMMAND])


def claude_groups(launcher: Sequence[str], shell_word: str | None = None) -> dict[str, Any]:
    """The hook groups by event, for Claude Code and Codex (the same format)."""
    hook = [{"type": "command", "command": command(launcher, shell_word)}]
    return {
        "UserPromptSubmit": [{"hooks": hook}],
        "PreToolUse": [{"matcher": "Bash|Grep|Glob", "hooks": hook}],
        "PostToolUse": [{"matcher": "Bash|mcp__.*kenning.*", "hooks": hook}],
    }


def gemini_groups(launcher: Sequence[str]) -> dict[str, Any]:
    hook = [{"type": "command", "command": command(launcher), "name": HOOK_NAME}]
    return {
        "BeforeAgent": [{"hooks": hook}],
        "BeforeTool": [{"matcher": "run_shell_command|glob|search_file_content|grep_search",
                        "hooks": hook}],
        "AfterTool": [{"matcher": "run_shell_command|mcp__.*kenning.*", "hooks": hook}],
    }


_COMMAND = re.compile("(.+) " + re.escape(" ".join(SUBCOMMAND)))


def own_launcher(group: Any) -> list[str] | None:
    """The launcher of a hook group kenning's search-first setup wrote, None for any other."""
    try:
        match = _COMMAND.fullmatch(group["hooks"][0]["command"])
        launcher = shlex.split(match.group(1)) if match else []
    except (TypeError, KeyError, IndexError, ValueError):
        return None
    return launcher if is_kenning(launcher) else None


# -- what a request and a tool call are ---------------------------------------------------------

_FILE = re.compile(
    r"(?<![\w/])(?:[\w.-]+/)*[\w-]+\.(?:py|pyi|rs|go|ts|tsx|js|jsx|mjs|cjs|java|kt|kts|c|h|cc|"
    r"cpp|hpp|cxx|cs|rb|php|swift|scala|lua|sh|bash|zsh|ex|exs|md|rst|toml|json|ya?ml|ini|cfg|"
    r"sql|html|css|scss|vue|svelte|proto|gradle|xml|txt|lock|mk|cmake)\b"
    # a folder: ./x, ../x, x/, a/b/c, or one under a usual source root (src/auth); not and/or
    r"|(?<![\w/.])(?:\.\.?/[\w.-]+|[\w.-]+/(?=\s|$|[,;:)])|[\w.-]+/[\w.-]+/[\w.-]+"
    r"|(?:src|lib|libs|tests?|app|apps|pkg|cmd|internal|crates|packages|python|rust|docs)/[\w.-]+)",
    re.IGNORECASE)
_SYMBOL = re.compile(
    r"`[^`\s][^`]*`"  # anything quoted as code
    r"|\b[A-Za-z_]\w*\(\)"  # a call: name()
    r"|\b[a-z]+(?:_[a-z0-9]+)+\b"  # snake_case
    r"|\b[a-z]+[A-Z]\w*\b"  # camelCase
    r"|\b[A-Z][a-z0-9]+[A-Z]\w*\b"  # PascalCase with two humps
    r"|\b[A-Za-z_]\w+(?:::|->|\.)[A-Za-z_]\w+")  # qualified: a.b, a::b, a->b (not e.g.)
_DISCOVERY = re.compile(
    r"\b(?:where|which|how|find|locate|look(?:s|ing)? for|search|implement\w*|add\w*|fix\w*|"
    r"bug\w*|error\w*|fail\w*|crash\w*|why|explain\w*|understand\w*|refactor\w*|chang\w*|"
    r"support\w*|handl\w*|call(?:s|ed|ers?)?|used?|uses)\b", re.IGNORECASE)
_CHORES = {"commit", "push", "pull", "merge", "rebase", "checkout", "stash", "tag", "revert",
           "release", "publish", "deploy", "install", "format", "lint", "run", "build", "test",
           "bump", "undo", "continue", "yes", "no", "ok", "thanks", "stop"}


def needs_discovery(prompt: str) -> bool:
    """Whether a request needs code found first: it asks where or how, or to add, fix or change
    behaviour, and names no file, folder or symbol; chores (commit, run the tests, build, ...)
    and short replies never do."""
    words = prompt.split()
    if len(words) < 3 or words[0].lower().strip(".,:!") in _CHORES:
        return False
    if _FILE.search(prompt) or _SYMBOL.search(prompt):
        return False
    return _DISCOVERY.search(prompt) is not None


_FINDERS = {"find", "fd", "fdfind", "locate"}  # globs by name; ls and tree only list


def _shell_search(words: list[str]) -> bool:
    kind = shell.kind_of(words)
    return kind == "grep" or kind == "glob" and os.path.basename(words[0]) in _FINDERS


def _shell_text(tool_input: Any) -> str:
    value = tool_input.get("command") if isinstance(tool_input, dict) else None
    if isinstance(value, list):  # Codex's shell tool takes argv
        return shlex.join(str(v) for v in value)
    return value if isinstance(value, str) else ""


def is_lookup(tool: str, tool_input: Any) -> bool:
    """A kenning search or related lookup, through MCP or the shell."""
    parts = tool.split("__")
    if len(parts) >= 3 and parts[-1] in _MCP_LOOKUPS and "kenning" in "__".join(parts[:-1]):
        return True
    return tool in _SHELL_TOOLS and any(
        map(shell.is_kenning_lookup, shell.segments(_shell_text(tool_input))))


def is_text_search(tool: str, tool_input: Any) -> bool:
    """A grep, find or glob: the calls a semantic search should come before."""
    if tool in _SEARCH_TOOLS:
        return True
    if tool not in _SHELL_TOOLS:
        return False
    segments = shell.segments(_shell_text(tool_input))
    return any(map(_shell_search, segments)) and not any(map(shell.is_kenning_lookup, segments))


# -- the session's state ----------------------------------------------------------------------

def _state_dir() -> Path:
    from kenning.project import kenning_home

    return kenning_home() / "agents" / "sessions"


def state_path(session: str) -> Path:
    return _state_dir() / (hashlib.sha256(session.encode()).hexdigest()[:32] + ".json")


def _read(path: Path) -> dict[str, Any]:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _write(path: Path, state: dict[str, Any]) -> None:
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(state), encoding="utf-8")
    os.replace(temporary, path)


def _prune(folder: Path, now: float) -> None:
    for old in folder.glob("*.json"):
        try:
            if now - old.stat().st_mtime > STATE_DAYS * 86400:
                old.unlink()
                old.with_suffix(".lock").unlink(missing_ok=True)
        except OSError:
            continue


# -- the hook itself --------------------------------------------------------------------------

_PROMPT_EVENTS = {"UserPromptSubmit", "BeforeAgent"}
_BEFORE_EVENTS = {"PreToolUse", "BeforeTool"}
_AFTER_EVENTS = {"PostToolUse", "AfterTool"}


def _refusal(event: str, left: int) -> dict[str, Any]:
    reason = REFUSAL.format(left=left, s="" if left == 1 else "s")
    if event == "BeforeTool":  # Gemini CLI
        return {"decision": "deny", "reason": reason}
    return {"hookSpecificOutput": {"hookEventName": event, "permissionDecision": "deny",
                                   "permissionDecisionReason": reason}}


def answer(payload: Any) -> dict[str, Any] | None:
    """The hook's answer to one event (None: nothing to say, the call goes ahead)."""
    if not isinstance(payload, dict):
        return None
    event, session = payload.get("hook_event_name"), payload.get("session_id")
    if not isinstance(event, str) or not isinstance(session, str) or not session:
        return None
    tool = payload.get("tool_name")
    tool = tool if isinstance(tool, str) else ""
    tool_input = payload.get("tool_input")
    if event in _BEFORE_EVENTS and not is_text_search(tool, tool_input):
        return None  # the common case, decided without touching the state
    if event in _AFTER_EVENTS and not is_lookup(tool, tool_input):
        return None
    if event not in _PROMPT_EVENTS | _BEFORE_EVENTS | _AFTER_EVENTS:
        return None
    from filelock import FileLock

    path = state_path(session)
    path.parent.mkdir(parents=True, exist_ok=True)
    now = time.time()
    with FileLock(str(path.with_suffix(".lock")), timeout=5):
        state = _read(path)
        result = None
        if event in _PROMPT_EVENTS:
            prompt = payload.get("prompt")
            state = {"discovery": needs_discovery(prompt if isinstance(prompt, str) else ""),
                     "searched": False, "refused": 0}
            _prune(path.parent, now)
        elif event in _AFTER_EVENTS:
            state["searched"] = True
        elif (state.get("discovery") and not state.get("searched")
              and int(state.get("refused", 0)) < MAX_REFUSALS):
            state["refused"] = int(state.get("refused", 0)) + 1
            result = _refusal(event, MAX_REFUSALS - state["refused"])
        else:
            return None
        _write(path, state)
    return result


_GEMINI_EVENTS = {"BeforeAgent", "BeforeTool", "AfterTool"}


def run(stdin: str) -> str:
    """What the hook prints for the payload ``stdin``: a JSON answer, or nothing (Gemini CLI
    reads stdout as JSON, so it gets ``{}``; Claude Code would take ``{}`` after a request as
    context, so it gets nothing)."""
    try:
        payload = json.loads(stdin)
        result = answer(payload)
    except (ValueError, OSError, TimeoutError):
        return ""  # the hook never stands in the agent's way
    if result:
        return json.dumps(result)
    gemini = isinstance(payload, dict) and payload.get("hook_event_name") in _GEMINI_EVENTS
    return "{}" if gemini else ""
