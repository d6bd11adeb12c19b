"""The Claude Code plugins and their marketplace, written from the templates `setup-agent` uses.

The repository carries them as files (``.claude-plugin/marketplace.json`` at its root, each
plugin under ``plugins/<name>/``) so that ``/plugin marketplace add`` can read them; this module
is their one source, ``.ci/write_plugins.py`` writes them, and a test keeps the committed files
equal to what it writes.

Two plugins: ``kenning`` (the MCP server, the skills, the explorer subagent and the
session-start hook) and ``kenning-search-first`` (the opt-in hook that asks for one kenning search
before grep and find, see :mod:`kenning.agents.search_first`). Neither names a version, so
Claude Code takes each commit of the repository as the plugin's version.

A plugin cannot know where kenning is installed, so its commands start ``bin/kenning``, a
launcher that finds the real one (``KENNING_BIN``, PATH, the usual pipx and uv folders, a Python
that imports it) or says how to install it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kenning.agents import templates

MARKETPLACE = "kenning"
MAIN = "kenning"
SEARCH_FIRST = "kenning-search-first"
FOLDER = "plugins"
# Claude Code sets CLAUDE_PLUGIN_ROOT in a hook's environment and expands it in .mcp.json.
_ROOT = "${CLAUDE_PLUGIN_ROOT}"
LAUNCHER = f"{_ROOT}/bin/kenning"
_LAUNCHER_WORD = f'"{LAUNCHER}"'  # a hook runs in a shell, which expands the variable
_AUTHOR = {"name": "kenning"}
_KEYWORDS = ["code-search", "semantic-search", "mcp", "local", "private"]

DESCRIPTIONS = {
    MAIN: "Local semantic code search: the kenning MCP server, search and review skills, a "
          "read-only code-explorer subagent and a hook that refreshes the index when a "
          "session starts.",
    SEARCH_FIRST: "Opt-in: asks the agent for one kenning search before it greps or finds "
                  "its way through code it does not know (at most two refusals a request).",
}

# Heads the Markdown files, which come from the templates setup-agent writes.
MARKER = ("<!-- Written by .ci/write_plugins.py from kenning's agent templates "
          "(python/kenning/agents/templates.py); change those, not this file. -->")
# Marks the launcher, so that one launcher on PATH never takes another for kenning.
LAUNCHER_MARK = "# kenning-plugin-launcher"

_LAUNCHER_SCRIPT = f"""\
#!/bin/sh
{LAUNCHER_MARK}
# Starts the kenning installed on this machine with the arguments given: KENNING_BIN, else
# kenning on PATH, else the folders pipx and uv install to, else a Python that has kenning.
# A plugin cannot install software, so without kenning it says how to install it.
usable() {{
    [ -n "$1" ] && [ -f "$1" ] && [ -x "$1" ] \\
        && ! grep -q '^{LAUNCHER_MARK}$' "$1" 2>/dev/null
}}
if usable "${{KENNING_BIN:-}}"; then exec "$KENNING_BIN" "$@"; fi
saved_ifs=$IFS
IFS=:
for folder in $PATH; do
    IFS=$saved_ifs
    if usable "${{folder:-.}}/kenning"; then exec "${{folder:-.}}/kenning" "$@"; fi
done
IFS=$saved_ifs
for candidate in "$HOME/.local/bin/kenning" "$HOME/.local/pipx/venvs/kenning/bin/kenning" \\
        "${{XDG_DATA_HOME:-$HOME/.local/share}}/uv/tools/kenning/bin/kenning"; do
    if usable "$candidate"; then exec "$candidate" "$@"; fi
done
for python in python3 python; do
    if command -v "$python" >/dev/null 2>&1 \\
            && "$python" -c 'import kenning.cli' >/dev/null 2>&1; then
        exec "$python" -m kenning "$@"
    fi
done
cat >&2 <<'EOF'
kenning is not installed (not on PATH, nor in KENNING_BIN, pipx's or uv's folders).
Install it from a checkout of kenning with `pipx install .` (or `uv tool install .`), or set
KENNING_BIN to its executable, then restart Claude Code.
EOF
exit 127
"""


def _json(value: Any) -> str:
    return json.dumps(value, indent=2) + "\n"


def _manifest(name: str) -> dict[str, Any]:
    return {"name": name, "description": DESCRIPTIONS[name], "author": _AUTHOR,
            "license": "Apache-2.0", "keywords": _KEYWORDS}


def _main_plugin() -> dict[str, str]:
    server = {"command": LAUNCHER, "args": ["mcp"]}
    prefix = f"mcp__plugin_{MAIN}_{templates.SERVER_NAME}__"
    return {
        ".claude-plugin/plugin.json": _json(_manifest(MAIN)),
        ".mcp.json": _json({"mcpServers": {templates.SERVER_NAME: server}}),
        "hooks/hooks.json": _json({"hooks": {
            "SessionStart": [templates.hook_group((), _LAUNCHER_WORD)]}}),
        f"skills/{templates.SKILL_NAME}/SKILL.md": templates.skill(MARKER),
        f"skills/{templates.REVIEW_SKILL_NAME}/SKILL.md": templates.review_skill(MARKER),
        f"agents/{templates.SUBAGENT_NAME}.md": templates.subagent(prefix, MARKER),
        "bin/kenning": _LAUNCHER_SCRIPT,
    }


def _search_first_plugin() -> dict[str, str]:
    from kenning.agents.search_first import claude_groups

    return {
        ".claude-plugin/plugin.json": _json(_manifest(SEARCH_FIRST)),
        "hooks/hooks.json": _json({"hooks": claude_groups((), _LAUNCHER_WORD)}),
        "bin/kenning": _LAUNCHER_SCRIPT,
    }


def _marketplace() -> dict[str, Any]:
    return {
        "name": MARKETPLACE,
        "owner": _AUTHOR,
        "description": "kenning's plugins for Claude Code: local semantic code search.",
        "plugins": [{"name": name, "source": f"./{FOLDER}/{name}",
                     "description": DESCRIPTIONS[name], "category": "development"}
                    for name in (MAIN, SEARCH_FIRST)],
    }


def files() -> dict[str, str]:
    """Every file of the marketplace, by its path relative to the repository root."""
    tree = {".claude-plugin/marketplace.json": _json(_marketplace())}
    for name, plugin in ((MAIN, _main_plugin()), (SEARCH_FIRST, _search_first_plugin())):
        tree.update({f"{FOLDER}/{name}/{path}": text for path, text in plugin.items()})
    return tree


def write(root: Path) -> list[str]:
    """Write the marketplace under ``root``; returns the paths that changed."""
    changed = []
    for relative, text in files().items():
        path = root / relative
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(relative)
        if relative.endswith("/bin/kenning"):
            path.chmod(0o755)
    return changed
