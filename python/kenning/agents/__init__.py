"""Wiring kenning into coding agents (Claude Code, Codex, Gemini CLI, Cursor, Junie) and taking it
out again.

``make_plan`` computes every file edit (exact new content) without writing; ``apply`` writes a
plan with backups and atomic replaces. Edits are idempotent and reversible: setting up twice
changes nothing, and removing restores the bytes kenning changed.
"""

from kenning.agents.plan import (
    AGENTS,
    COMPONENTS,
    RECOMMENDED,
    FileChange,
    Plan,
    apply,
    make_plan,
)

__all__ = ["AGENTS", "COMPONENTS", "RECOMMENDED", "FileChange", "Plan", "apply", "make_plan"]
