"""The three transcript formats, each file read line by line (Gemini CLI's, one JSON document)
into a :class:`~kenning.services.transcripts.calls.Session`; a line that is not a JSON object
is skipped and counted.

- Claude Code, ``<config>/projects/<project>/<session>.jsonl``: records of ``type`` ``user`` and
  ``assistant`` with ``sessionId``, ``cwd``, ``timestamp`` and the API ``message``; assistant
  content blocks ``text``, ``thinking`` and ``tool_use`` (one block a line, the message's
  ``usage`` repeated on each), user content a request or ``tool_result`` blocks; subagent
  records carry ``isSidechain``.
- Codex, ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``: ``{timestamp, type, payload}``
  with ``session_meta`` (id, cwd), ``turn_context``, ``response_item`` (``message``,
  ``reasoning``, ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` and their
  outputs by ``call_id``) and ``event_msg`` ``token_count`` (the running ``total_token_usage``).
- Gemini CLI, ``~/.gemini/tmp/<project>/chats/session-*.json``: ``{sessionId, projectHash,
  startTime, lastUpdated, messages}``, each message ``user`` or ``gemini`` with ``content``,
  ``thoughts``, ``tokens`` and ``toolCalls`` (``name``, ``args``, ``result``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kenning.services.transcripts.calls import Call, Session, make_call, text_of, tokens


def _records(path: Path, session: Session) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if isinstance(record, dict):
                yield record
            else:
                session.malformed += 1


def _blocks(value: Any) -> list[dict[str, Any]]:
    return [b for b in value if isinstance(b, dict)] if isinstance(value, list) else []


# -- Claude Code ---------------------------------------------------------------------------

_CLAUDE_USAGE = {"input_tokens": "input", "output_tokens": "output",
                 "cache_read_input_tokens": "cache_read",
                 "cache_creation_input_tokens": "cache_write"}


def claude(path: Path) -> Session:
    session = Session("claude", path.stem)
    pending: dict[str, Call] = {}
    usage: dict[str, dict[str, Any]] = {}  # per API message: its lines repeat it
    named = False
    for record in _records(path, session):
        if not named and isinstance(record.get("sessionId"), str):
            session.id, named = record["sessionId"], True
        if not session.project and isinstance(record.get("cwd"), str):
            session.project = record["cwd"]
        session.seen(record.get("timestamp"))
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if record.get("type") == "user":
            side = record.get("isSidechain") or record.get("isMeta")
            if isinstance(content, str) and not side:
                session.request()
            for block in _blocks(content):
                if block.get("type") == "tool_result":
                    call = pending.pop(str(block.get("tool_use_id")), None)
                    if call is not None:
                        call.add_result(block.get("content"))
                elif block.get("type") == "text" and not side:
                    session.request()
        elif record.get("type") == "assistant":
            if isinstance(message.get("id"), str) and isinstance(message.get("usage"), dict):
                usage[message["id"]] = message["usage"]
            for block in _blocks(content):
                kind = block.get("type")
                if kind == "thinking":
                    session.thinking += tokens(block.get("thinking"))
                elif kind == "text":
                    session.text += tokens(block.get("text"))
                elif kind == "tool_use" and isinstance(block.get("name"), str):
                    call = session.add(make_call(block["name"], block.get("input")))
                    pending[str(block.get("id"))] = call
    for reported in usage.values():
        for key, name in _CLAUDE_USAGE.items():
            session.report(name, reported.get(key))
    return session


# -- Codex ---------------------------------------------------------------------------------

_CODEX_USAGE = {"input_tokens": "input", "output_tokens": "output",
                "cached_input_tokens": "cache_read", "reasoning_output_tokens": "reasoning"}
_CALLS = {"function_call", "custom_tool_call", "local_shell_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}


def _arguments(payload: dict[str, Any]) -> Any:
    if payload.get("type") == "local_shell_call":
        return payload.get("action")
    if payload.get("type") == "custom_tool_call":
        return {"input": payload.get("input")}
    raw = payload.get("arguments")
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return raw


def _codex_item(session: Session, item: dict[str, Any], pending: dict[str, Call]) -> None:
    kind = item.get("type")
    if kind == "message":
        text = "\n".join(text_of(b.get("text")) for b in _blocks(item.get("content")))
        if item.get("role") == "user" and not text.lstrip().startswith("<"):
            session.request()  # not the environment or instructions Codex sends itself
        elif item.get("role") == "assistant":
            session.text += tokens(text)
    elif kind == "reasoning":
        shown = _blocks(item.get("summary")) + _blocks(item.get("content"))
        session.thinking += sum(tokens(b.get("text")) for b in shown)
    elif kind in _CALLS:
        name = "local_shell" if kind == "local_shell_call" else str(item.get("name", ""))
        call = session.add(make_call(name, _arguments(item)))
        pending[str(item.get("call_id"))] = call
    elif kind in _OUTPUTS:
        done = pending.pop(str(item.get("call_id")), None)
        if done is not None:
            output = item.get("output")
            with contextlib.suppress(ValueError):  # a shell's: {"output": ..., "metadata": ...}
                output = json.loads(output) if isinstance(output, str) else output
            done.add_result(output)


def codex(path: Path) -> Session:
    session = Session("codex", path.stem)
    pending: dict[str, Call] = {}
    total: dict[str, Any] = {}
    for record in _records(path, session):
        session.seen(record.get("timestamp"))
        payload = record.get("payload")
        kind = record.get("type")
        if not isinstance(payload, dict):  # the early format, without the envelope
            payload, kind = record, "response_item"
        if kind == "session_meta":
            session.id = str(payload.get("id") or session.id)
            session.project = str(payload.get("cwd") or session.project)
            session.seen(payload.get("timestamp"))
        elif kind == "turn_context" and not session.project:
            session.project = str(payload.get("cwd") or "")
        elif kind == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info")
            if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
                total = info["total_token_usage"]  # a running total: the last one counts
        elif kind == "response_item":
            _codex_item(session, payload, pending)
    for key, name in _CODEX_USAGE.items():
        session.report(name, total.get(key))
    session.thinking = max(session.thinking, session.usage.get("reasoning", 0))
    return session


# -- Gemini CLI ----------------------------------------------------------------------------

_GEMINI_USAGE = {"input": "input", "output": "output", "cached": "cache_read",
                 "thoughts": "reasoning", "tool": "tool"}


def gemini(path: Path) -> Session:
    session = Session("gemini", path.stem)
    try:
        document = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except ValueError:
        document = None
    if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
        session.malformed += 1
        return session
    session.id = str(document.get("sessionId") or session.id)
    root = path.parent.parent / ".project_root"  # kept there by newer releases
    try:
        session.project = root.read_text(encoding="utf-8").strip()
    except OSError:
        session.project = f"gemini:{document.get('projectHash', path.parent.parent.name)}"
    session.seen(document.get("startTime"))
    session.seen(document.get("lastUpdated"))
    for message in document["messages"]:
        if not isinstance(message, dict):
            session.malformed += 1
            continue
        session.seen(message.get("timestamp"))
        if message.get("type") == "user":
            session.request()
        elif message.get("type") == "gemini":
            session.text += tokens(message.get("content") or None)
            session.thinking += sum(tokens(f"{t.get('subject', '')} {t.get('description', '')}")
                                    for t in _blocks(message.get("thoughts")))
            reported = message.get("tokens")
            for key, name in _GEMINI_USAGE.items():
                session.report(name, reported.get(key) if isinstance(reported, dict) else None)
            for tool in _blocks(message.get("toolCalls")):
                call = session.add(make_call(str(tool.get("name", "")), tool.get("args")))
                call.add_result(tool.get("result"))
    session.thinking = max(session.thinking, session.usage.get("reasoning", 0))
    return session
