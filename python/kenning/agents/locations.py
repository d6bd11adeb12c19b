"""Where each agent keeps each kind of configuration, per scope.

Claude Code: MCP servers in ``.mcp.json`` (project) or the top-level ``mcpServers`` of
``~/.claude.json`` (user); memory in ``CLAUDE.md`` / ``~/.claude/CLAUDE.md``; skills (search,
review) in ``.claude/skills/<name>/SKILL.md``; subagents in ``.claude/agents/<name>.md``; hooks in
``.claude/settings.json`` / ``~/.claude/settings.json``. ``CLAUDE_CONFIG_DIR`` moves the user
files (``~/.claude`` and ``~/.claude.json``).

Codex: ``[mcp_servers.<name>]`` in ``config.toml``, hooks in ``hooks.json`` (the Claude Code
format), both in ``$CODEX_HOME`` (``~/.codex``) for the user or ``<project>/.codex`` (read only
in trusted projects); instructions in ``AGENTS.md`` at the project root or in ``$CODEX_HOME``.

Gemini CLI: ``mcpServers`` in ``~/.gemini/settings.json`` or ``<project>/.gemini/settings.json``;
context in ``~/.gemini/GEMINI.md`` or ``GEMINI.md`` at the project root.

Cursor: ``mcpServers`` in ``~/.cursor/mcp.json`` or ``<project>/.cursor/mcp.json``; project rules
are ``.mdc`` files in ``.cursor/rules/``. User rules live in Cursor's settings, not in a file.

Junie: ``mcpServers`` in ``mcp/mcp.json`` under ``$JUNIE_HOME`` (``~/.junie``) or the project's
``.junie``; guidelines in ``~/.junie/AGENTS.md``, and for a project the first of
``.junie/AGENTS.md``, ``AGENTS.md``, ``.junie/guidelines.md`` that exists (Junie reads only that
one), else ``.junie/AGENTS.md``.

``~`` is ``Path.home()``: on Windows ``%USERPROFILE%``, where each of these clients keeps the
same folders (``%USERPROFILE%\\.claude`` and so on).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kenning.agents.markdown import START
from kenning.agents.templates import REVIEW_SKILL_NAME, SERVER_NAME, SKILL_NAME, SUBAGENT_NAME


@dataclass(frozen=True)
class Place:
    """Files of one agent in one scope; ``base`` is the folder whose files are shown relative."""

    base: Path
    label: str  # how ``base`` is shown: "~" or the project root
    files: dict[str, Path]  # component -> file
    absent: dict[str, str] = field(default_factory=dict)  # component -> why there is none


def claude(scope: str, project: Path) -> Place:
    if scope == "project":
        dot = project / ".claude"
        return Place(project, str(project), {
            "mcp": project / ".mcp.json",
            "instructions": project / "CLAUDE.md",
            "skill": dot / "skills" / SKILL_NAME / "SKILL.md",
            "review": dot / "skills" / REVIEW_SKILL_NAME / "SKILL.md",
            "subagent": dot / "agents" / f"{SUBAGENT_NAME}.md",
            "hooks": dot / "settings.json",
            "search-first": dot / "settings.json",
        })
    home = Path.home()
    override = os.environ.get("CLAUDE_CONFIG_DIR")
    dot = Path(override).expanduser() if override else home / ".claude"
    return Place(home, "~", {
        "mcp": (dot if override else home) / ".claude.json",
        "instructions": dot / "CLAUDE.md",
        "skill": dot / "skills" / SKILL_NAME / "SKILL.md",
        "review": dot / "skills" / REVIEW_SKILL_NAME / "SKILL.md",
        "subagent": dot / "agents" / f"{SUBAGENT_NAME}.md",
        "hooks": dot / "settings.json",
        "search-first": dot / "settings.json",
    })


def codex(scope: str, project: Path) -> Place:
    if scope == "project":
        dot = project / ".codex"
        return Place(project, str(project), {
            "mcp": dot / "config.toml",
            "instructions": project / "AGENTS.md",
            "hooks": dot / "hooks.json",
            "search-first": dot / "hooks.json",
        })
    dot = _user_dir("CODEX_HOME", ".codex")
    return Place(Path.home(), "~", {
        "mcp": dot / "config.toml",
        "instructions": dot / "AGENTS.md",
        "hooks": dot / "hooks.json",
        "search-first": dot / "hooks.json",
    })


def _user_dir(variable: str, default: str) -> Path:
    override = os.environ.get(variable)
    return Path(override).expanduser() if override else Path.home() / default


def gemini(scope: str, project: Path) -> Place:
    if scope == "project":
        return Place(project, str(project), {
            "mcp": project / ".gemini" / "settings.json",
            "instructions": project / "GEMINI.md",
            "search-first": project / ".gemini" / "settings.json",
        })
    dot = Path.home() / ".gemini"
    return Place(Path.home(), "~", {"mcp": dot / "settings.json",
                                    "instructions": dot / "GEMINI.md",
                                    "search-first": dot / "settings.json"})


def cursor(scope: str, project: Path) -> Place:
    if scope == "project":
        return Place(project, str(project), {
            "mcp": project / ".cursor" / "mcp.json",
            "instructions": project / ".cursor" / "rules" / f"{SERVER_NAME}.mdc",
        })
    return Place(Path.home(), "~", {"mcp": Path.home() / ".cursor" / "mcp.json"}, absent={
        "instructions": "Cursor keeps user rules in its settings, not in a file, so kenning adds "
        "its rule with --scope project (.cursor/rules/kenning.mdc), or paste the block into "
        "Cursor Settings > Rules yourself.",
    })


def _junie_guidelines(project: Path) -> Path:
    """The guidelines file Junie reads: it takes the first of these that exists, and only that
    one, so kenning's block goes where Junie already looks (or where it last put it)."""
    candidates = [project / ".junie" / "AGENTS.md", project / "AGENTS.md",
                  project / ".junie" / "guidelines.md"]
    for path in candidates:
        try:
            if START in path.read_text(encoding="utf-8", errors="replace"):
                return path
        except OSError:
            continue
    return next((path for path in candidates if path.exists()), candidates[0])


def junie(scope: str, project: Path) -> Place:
    if scope == "project":
        return Place(project, str(project), {
            "mcp": project / ".junie" / "mcp" / "mcp.json",
            "instructions": _junie_guidelines(project),
        })
    dot = _user_dir("JUNIE_HOME", ".junie")
    return Place(Path.home(), "~", {"mcp": dot / "mcp" / "mcp.json",
                                    "instructions": dot / "AGENTS.md"})


PLACES = {"claude": claude, "codex": codex, "gemini": gemini, "cursor": cursor, "junie": junie}

# What shows an agent is installed: its user folder, or one of its commands on PATH.
SIGNS = {
    "claude": (".claude", ("claude",)),
    "codex": (".codex", ("codex",)),
    "gemini": (".gemini", ("gemini",)),
    "cursor": (".cursor", ("cursor", "cursor-agent")),
    "junie": (".junie", ("junie",)),
}
