"""The edits behind each component: given a file's current text, the text with or without kenning.

Every edit is a pure function ``(text or None, shown name) -> Outcome``: None means the file is
absent (or, as a result, to be deleted). Kenning only ever removes what is exactly its own: an
entry equal to the one it writes, its marked block, or a file carrying its marker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tomlkit.exceptions import TOMLKitError

from kenning.agents import jsonedit, markdown, templates, tomledit
from kenning.errors import AgentSetupError


@dataclass(frozen=True)
class Outcome:
    text: str | None
    note: str | None = None


Edit = Callable[[str | None, str], Outcome]


def _unparsable(name: str, kind: str, detail: object) -> AgentSetupError:
    return AgentSetupError(
        f"{name} is not valid {kind} ({detail}), so kenning leaves it untouched.",
        hint=f"Fix {name} (kenning backs up and edits only valid files), then run again.",
    )


def _json(text: str | None, name: str) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        doc = jsonedit.load(text)
    except ValueError as exc:
        raise _unparsable(name, "JSON", exc) from None
    if not isinstance(doc, dict):
        raise AgentSetupError(f"{name} does not hold a JSON object, so kenning leaves it alone.")
    return doc


def _expect(value: Any, kind: type, name: str, where: str) -> Any:
    if value is not None and not isinstance(value, kind):
        raise AgentSetupError(
            f"{where} in {name} is not a JSON {'object' if kind is dict else 'array'}, "
            "so kenning leaves the file untouched."
        )
    return value


def _same_server(entry: Any) -> bool:
    """True for kenning's own server entry, also as Claude Code may store it (type, empty env)."""
    if not isinstance(entry, dict):
        return False
    core = {k: v for k, v in entry.items() if not (k == "type" and v == "stdio")}
    if core.get("env") == {}:
        del core["env"]
    return core == templates.MCP_ENTRY


def _kept(name: str, what: str) -> str:
    return f"{name} already has its own {what}; kenning left it as it is."


# -- MCP server: JSON (Claude Code) ----------------------------------------------------------

def json_mcp_install(text: str | None, name: str) -> Outcome:
    servers = _expect(_json(text, name).get("mcpServers"), dict, name, "mcpServers") or {}
    current = servers.get(templates.SERVER_NAME)
    if _same_server(current):
        return Outcome(text)
    if current is not None:
        return Outcome(text, _kept(name, f"MCP server entry named {templates.SERVER_NAME!r}"))
    return Outcome(jsonedit.set_member(text, ["mcpServers"], templates.SERVER_NAME,
                                       templates.MCP_ENTRY))


def json_mcp_remove(text: str | None, name: str) -> Outcome:
    servers = _expect(_json(text, name).get("mcpServers"), dict, name, "mcpServers") or {}
    current = servers.get(templates.SERVER_NAME)
    if current is None or text is None:
        return Outcome(text)
    if not _same_server(current):
        return Outcome(text, _kept(name, f"MCP server entry named {templates.SERVER_NAME!r}"))
    new = jsonedit.remove_where(
        text, ["mcpServers"], lambda key, value: key == templates.SERVER_NAME, prune=1
    )
    return Outcome(None if jsonedit.empty(new) else new)


# -- MCP server: TOML (Codex) ----------------------------------------------------------------

_TOML_PATH = ("mcp_servers", templates.SERVER_NAME)


def _toml(text: str | None, name: str) -> dict[str, Any]:
    try:
        return tomledit.load(text or "")
    except TOMLKitError as exc:
        raise _unparsable(name, "TOML", exc) from None


def toml_mcp_install(text: str | None, name: str) -> Outcome:
    current = tomledit.get(_toml(text, name), _TOML_PATH)
    if current == templates.MCP_ENTRY:
        return Outcome(text)
    if current is not None:
        return Outcome(text, _kept(name, f"[mcp_servers.{templates.SERVER_NAME}] table"))
    try:
        return Outcome(tomledit.add_table(text, _TOML_PATH, templates.MCP_ENTRY))
    except TOMLKitError as exc:
        raise AgentSetupError(
            f"kenning cannot add [mcp_servers.{templates.SERVER_NAME}] to {name} without "
            f"rewriting your tables ({exc}).",
            hint="Write mcp_servers as [mcp_servers.<name>] tables, or add the kenning server "
            'by hand: command = "kenning", args = ["mcp"].',
        ) from None


def toml_mcp_remove(text: str | None, name: str) -> Outcome:
    current = tomledit.get(_toml(text, name), _TOML_PATH)
    if current is None or text is None:
        return Outcome(text)
    if current != templates.MCP_ENTRY:
        return Outcome(text, _kept(name, f"[mcp_servers.{templates.SERVER_NAME}] table"))
    new = tomledit.remove_table(text, _TOML_PATH)
    return Outcome(new if new.strip() else None)


# -- session-start hook: JSON, the same shape for Claude Code and Codex ------------------------

def _session_start(text: str | None, name: str) -> list[Any]:
    hooks = _expect(_json(text, name).get("hooks"), dict, name, "hooks") or {}
    return _expect(hooks.get("SessionStart"), list, name, "hooks.SessionStart") or []


def hook_install(text: str | None, name: str) -> Outcome:
    if templates.HOOK_GROUP in _session_start(text, name):
        return Outcome(text)
    return Outcome(jsonedit.append_element(text, ["hooks", "SessionStart"], templates.HOOK_GROUP))


def hook_remove(text: str | None, name: str) -> Outcome:
    if text is None or templates.HOOK_GROUP not in _session_start(text, name):
        return Outcome(text)
    new = jsonedit.remove_where(
        text, ["hooks", "SessionStart"], lambda _, value: value == templates.HOOK_GROUP, prune=2
    )
    return Outcome(None if jsonedit.empty(new) else new)


# -- instruction block: Markdown -----------------------------------------------------------

def instructions_install(text: str | None, name: str) -> Outcome:
    return Outcome(markdown.set_block(text, templates.instructions(), name))


def instructions_remove(text: str | None, name: str) -> Outcome:
    return Outcome(markdown.remove_block(text, name))


# -- whole files kenning owns: the skill and the subagent -------------------------------------

def owned_file(content: str, flag: str) -> tuple[Edit, Edit]:
    def install(text: str | None, name: str) -> Outcome:
        if text is not None and templates.FILE_MARKER not in text:
            raise AgentSetupError(
                f"{name} already exists and was not written by kenning, so kenning leaves it.",
                hint=f"Rename or remove it, or leave out {flag}.",
            )
        return Outcome(content)

    def remove(text: str | None, name: str) -> Outcome:
        if text is not None and templates.FILE_MARKER not in text:
            return Outcome(text, f"{name} was not written by kenning; it stays.")
        return Outcome(None)

    return install, remove


def edits(agent: str, component: str) -> tuple[Edit, Edit] | None:
    """(install, remove) for ``component`` of ``agent``; None where the agent has no such thing."""
    table: dict[tuple[str, str], tuple[Edit, Edit]] = {
        ("claude", "mcp"): (json_mcp_install, json_mcp_remove),
        ("codex", "mcp"): (toml_mcp_install, toml_mcp_remove),
        ("claude", "instructions"): (instructions_install, instructions_remove),
        ("codex", "instructions"): (instructions_install, instructions_remove),
        ("claude", "hooks"): (hook_install, hook_remove),
        ("codex", "hooks"): (hook_install, hook_remove),
        ("claude", "skill"): owned_file(templates.skill(), "--skill"),
        ("claude", "subagent"): owned_file(templates.subagent(), "--subagent"),
    }
    return table.get((agent, component))

