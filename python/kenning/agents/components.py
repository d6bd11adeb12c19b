"""The edits behind each component: given a file's current text, the text with or without kenning.

Every edit is a pure function ``(text or None, shown name) -> Outcome``: None means the file is
absent (or, as a result, to be deleted). Kenning only ever removes what is exactly its own: an
entry equal to the one it writes, its marked block, or a file carrying its marker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from tomlkit.exceptions import TOMLKitError

from kenning.agents import jsonedit, markdown, search_first, templates, tomledit
from kenning.errors import AgentSetupError

# The JSON containers (``("hooks", "SessionStart")``) that setup created in a file, which
# removal may delete when left empty; None where nothing was recorded (a setup of a release
# that kept no record), where removal deletes every container it leaves empty.
Created = frozenset[tuple[str, ...]] | None


@dataclass(frozen=True)
class Outcome:
    text: str | None
    note: str | None = None
    created: tuple[tuple[str, ...], ...] | None = None  # set by JSON edits: see Created


Edit = Callable[[str | None, str], Outcome]


def _created(text: str | None, path: list[str],
             replaced: bool) -> tuple[tuple[str, ...], ...] | None:
    """What adding at ``path`` creates; unknown (None) where kenning's own entry is replaced,
    whose containers an earlier setup may have made."""
    return None if replaced else tuple(jsonedit.missing(text, path))


def _prunable(path: list[str], created: Created) -> frozenset[tuple[str, ...]]:
    return frozenset(jsonedit.missing(None, path)) if created is None else created


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


def _kept(name: str, what: str) -> str:
    return f"{name} already has its own {what}; kenning left it as it is."


# -- MCP server: JSON (Claude Code, Gemini CLI, Cursor, Junie) ------------------------------

def _is_kenning_key(key: str | None, _: Any) -> bool:
    return key == templates.SERVER_NAME


def json_mcp_install(text: str | None, name: str, launcher: Sequence[str]) -> Outcome:
    servers = _expect(_json(text, name).get("mcpServers"), dict, name, "mcpServers") or {}
    current = servers.get(templates.SERVER_NAME)
    if templates.is_entry(current, launcher):
        return Outcome(text)
    if current is not None and not templates.is_own_entry(current):
        return Outcome(text, _kept(name, f"MCP server entry named {templates.SERVER_NAME!r}"))
    replaced = current is not None
    if replaced and text is not None:  # kenning's, with another command: replace it
        text = jsonedit.remove_where(text, ["mcpServers"], _is_kenning_key, prunable=())
    return Outcome(jsonedit.set_member(text, ["mcpServers"], templates.SERVER_NAME,
                                       templates.mcp_entry(launcher)),
                   created=_created(text, ["mcpServers"], replaced))


def json_mcp_remove(text: str | None, name: str, created: Created = None) -> Outcome:
    servers = _expect(_json(text, name).get("mcpServers"), dict, name, "mcpServers") or {}
    current = servers.get(templates.SERVER_NAME)
    if current is None or text is None:
        return Outcome(text)
    if not templates.is_own_entry(current):
        return Outcome(text, _kept(name, f"MCP server entry named {templates.SERVER_NAME!r}"))
    new = jsonedit.remove_where(text, ["mcpServers"], _is_kenning_key,
                                _prunable(["mcpServers"], created))
    return Outcome(None if jsonedit.empty(new) else new)


# -- MCP server: TOML (Codex) ----------------------------------------------------------------

_TOML_PATH = ("mcp_servers", templates.SERVER_NAME)


def _toml(text: str | None, name: str) -> dict[str, Any]:
    try:
        return tomledit.load(text or "")
    except TOMLKitError as exc:
        raise _unparsable(name, "TOML", exc) from None


def toml_mcp_install(text: str | None, name: str, launcher: Sequence[str]) -> Outcome:
    current = tomledit.get(_toml(text, name), _TOML_PATH)
    wanted = templates.mcp_entry(launcher)
    if current == wanted:
        return Outcome(text)
    if current is not None and not templates.is_own_entry(current):
        return Outcome(text, _kept(name, f"[mcp_servers.{templates.SERVER_NAME}] table"))
    if current is not None and text is not None:  # kenning's, with another command: replace it
        text = tomledit.remove_table(text, _TOML_PATH)
    try:
        return Outcome(tomledit.add_table(text, _TOML_PATH, wanted))
    except TOMLKitError as exc:
        raise AgentSetupError(
            f"kenning cannot add [mcp_servers.{templates.SERVER_NAME}] to {name} without "
            f"rewriting your tables ({exc}).",
            hint="Write mcp_servers as [mcp_servers.<name>] tables, or add the kenning server "
            f"by hand: command = {wanted['command']!r}, args = {wanted['args']!r}.",
        ) from None


def toml_mcp_remove(text: str | None, name: str) -> Outcome:
    current = tomledit.get(_toml(text, name), _TOML_PATH)
    if current is None or text is None:
        return Outcome(text)
    if not templates.is_own_entry(current):
        return Outcome(text, _kept(name, f"[mcp_servers.{templates.SERVER_NAME}] table"))
    new = tomledit.remove_table(text, _TOML_PATH)
    return Outcome(new if new.strip() else None)


# -- hooks: JSON, the same shape for Claude Code, Codex and Gemini CLI ------------------------

Groups = dict[str, list[Any]]  # event -> the hook groups kenning writes for it
Owned = Callable[[str, Any], bool]  # (event, group) -> whether kenning wrote that group


def _hook_array(text: str | None, name: str, event: str) -> list[Any]:
    hooks = _expect(_json(text, name).get("hooks"), dict, name, "hooks") or {}
    return _expect(hooks.get(event), list, name, f"hooks.{event}") or []


def _matching(owned: Owned, event: str) -> Callable[[str | None, Any], bool]:
    return lambda _, group: owned(event, group)


def groups_install(text: str | None, name: str, wanted: Groups, owned: Owned) -> Outcome:
    """``text`` with exactly ``wanted`` as kenning's groups of each event (another launcher's
    groups replaced), every other group kept. What it created is unknown (None) once it
    replaced kenning's groups, whose containers an earlier setup may have made."""
    created: set[tuple[str, ...]] | None = set()
    for event, groups in wanted.items():
        path = ["hooks", event]
        own = [g for g in _hook_array(text, name, event) if owned(event, g)]
        if own == groups:
            continue
        replaced = bool(own)
        if replaced and text is not None:  # kenning's, with another command: replace them
            text = jsonedit.remove_where(text, path, _matching(owned, event), prunable=())
        made = _created(text, path, replaced)
        created = None if made is None or created is None else created | set(made)
        for group in groups:
            text = jsonedit.append_element(text, path, group)
    return Outcome(text, created=None if created is None else tuple(sorted(created)))


def groups_remove(text: str | None, name: str, events: Sequence[str], owned: Owned,
                  created: Created = None) -> Outcome:
    if text is None or not any(owned(event, group) for event in events
                               for group in _hook_array(text, name, event)):
        return Outcome(text)
    for event in events:
        path = ["hooks", event]
        text = jsonedit.remove_where(text, path, _matching(owned, event),
                                     _prunable(path, created))
    return Outcome(None if jsonedit.empty(text) else text)


def _session_start_owned(_: str, group: Any) -> bool:
    return templates.is_own_hook_group(group)


def hook_install(text: str | None, name: str, launcher: Sequence[str]) -> Outcome:
    return groups_install(text, name, {"SessionStart": [templates.hook_group(launcher)]},
                          _session_start_owned)


def hook_remove(text: str | None, name: str, created: Created = None) -> Outcome:
    return groups_remove(text, name, ["SessionStart"], _session_start_owned, created)


def _search_first(factory: Callable[[Sequence[str]], Groups], launcher: Sequence[str],
                  created: Created) -> tuple[Edit, Edit]:
    """The search-first hook's groups that ``factory`` makes for a launcher, in and out."""
    def owned(event: str, group: Any) -> bool:
        own = search_first.own_launcher(group)
        return own is not None and group in factory(own).get(event, [])

    events = list(factory(launcher))
    return (partial(groups_install, wanted=factory(launcher), owned=owned),
            partial(groups_remove, events=events, owned=owned, created=created))


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


def edits(agent: str, component: str, launcher: Sequence[str],
          created: Created = None) -> tuple[Edit, Edit] | None:
    """(install, remove) for ``component`` of ``agent``, starting kenning with ``launcher``
    and removing the JSON containers ``created`` says setup made; None where the agent has no
    such thing."""
    json_mcp = (partial(json_mcp_install, launcher=launcher),
                partial(json_mcp_remove, created=created))
    hooks = (partial(hook_install, launcher=launcher), partial(hook_remove, created=created))
    block = (instructions_install, instructions_remove)
    table: dict[tuple[str, str], tuple[Edit, Edit]] = {
        ("claude", "mcp"): json_mcp,
        ("codex", "mcp"): (partial(toml_mcp_install, launcher=launcher), toml_mcp_remove),
        ("gemini", "mcp"): json_mcp,
        ("cursor", "mcp"): json_mcp,
        ("junie", "mcp"): json_mcp,
        ("claude", "instructions"): block,
        ("codex", "instructions"): block,
        ("gemini", "instructions"): block,
        ("junie", "instructions"): block,
        ("cursor", "instructions"): owned_file(templates.cursor_rule(), "--instructions"),
        ("claude", "hooks"): hooks,
        ("codex", "hooks"): hooks,
        ("claude", "skill"): owned_file(templates.skill(), "--skill"),
        ("claude", "review"): owned_file(templates.review_skill(), "--review"),
        ("claude", "subagent"): owned_file(templates.subagent(), "--subagent"),
        ("claude", "search-first"): _search_first(search_first.claude_groups, launcher, created),
        ("codex", "search-first"): _search_first(search_first.claude_groups, launcher, created),
        ("gemini", "search-first"): _search_first(search_first.gemini_groups, launcher, created),
    }
    return table.get((agent, component))
