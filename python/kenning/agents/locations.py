"""Where each agent keeps each kind of configuration, per scope.

Claude Code: MCP servers in ``.mcp.json`` (project) or the top-level ``mcpServers`` of
``~/.claude.json`` (user); memory in ``CLAUDE.md`` / ``~/.claude/CLAUDE.md``; skills in
``.claude/skills/<name>/SKILL.md``; subagents in ``.claude/agents/<name>.md``; hooks in
``.claude/settings.json`` / ``~/.claude/settings.json``. ``CLAUDE_CONFIG_DIR`` moves the user
files (``~/.claude`` and ``~/.claude.json``).

Codex: ``[mcp_servers.<name>]`` in ``config.toml``, hooks in ``hooks.json`` (the Claude Code
format), both in ``$CODEX_HOME`` (``~/.codex``) for the user or ``<project>/.codex`` (read only
in trusted projects); instructions in ``AGENTS.md`` at the project root or in ``$CODEX_HOME``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kenning.agents.templates import SKILL_NAME, SUBAGENT_NAME


@dataclass(frozen=True)
class Place:
    """Files of one agent in one scope; ``base`` is the folder whose files are shown relative."""

    base: Path
    label: str  # how ``base`` is shown: "~" or the project root
    files: dict[str, Path]  # component -> file


def claude(scope: str, project: Path) -> Place:
    if scope == "project":
        dot = project / ".claude"
        return Place(project, str(project), {
            "mcp": project / ".mcp.json",
            "instructions": project / "CLAUDE.md",
            "skill": dot / "skills" / SKILL_NAME / "SKILL.md",
            "subagent": dot / "agents" / f"{SUBAGENT_NAME}.md",
            "hooks": dot / "settings.json",
        })
    home = Path.home()
    override = os.environ.get("CLAUDE_CONFIG_DIR")
    dot = Path(override).expanduser() if override else home / ".claude"
    return Place(home, "~", {
        "mcp": (dot if override else home) / ".claude.json",
        "instructions": dot / "CLAUDE.md",
        "skill": dot / "skills" / SKILL_NAME / "SKILL.md",
        "subagent": dot / "agents" / f"{SUBAGENT_NAME}.md",
        "hooks": dot / "settings.json",
    })


def codex(scope: str, project: Path) -> Place:
    if scope == "project":
        dot = project / ".codex"
        return Place(project, str(project), {
            "mcp": dot / "config.toml",
            "instructions": project / "AGENTS.md",
            "hooks": dot / "hooks.json",
        })
    home = Path.home()
    override = os.environ.get("CODEX_HOME")
    dot = Path(override).expanduser() if override else home / ".codex"
    return Place(home, "~", {
        "mcp": dot / "config.toml",
        "instructions": dot / "AGENTS.md",
        "hooks": dot / "hooks.json",
    })


PLACES = {"claude": claude, "codex": codex}
