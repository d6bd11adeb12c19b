"""Local transcripts of coding agents, read for `kenning analyze`: Claude Code
(``~/.claude/projects/**/*.jsonl``), Codex (``~/.codex/sessions/**/*.jsonl``) and Gemini CLI
(``~/.gemini/tmp/<project>/chats/*.json``).

``shell`` tells what a shell command does (search, grep, glob, read, edit or run; the
search-first hook uses it too), ``calls`` the same of a tool call, each reader (``claude``,
``codex``, ``gemini``) turns one transcript file into a :class:`calls.Session`, and ``report``
adds sessions up by phase, project and session. Everything here only reads.
"""
