"""Repository text (paths, symbols, snippets) made safe to show to a person or an agent.

A file name or a line of code may hold terminal escape sequences, carriage returns or bidi
overrides that move the cursor, recolour the terminal or reorder what is read. ``visible``
spells each such character out (``\\x1b``, ``\\r``, ``\\u202e``), so what is shown is
exactly what is in the repository and nothing in it acts.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls, the line and paragraph separators, and the bidi controls
_OTHERS = "\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069"
_ANY = re.compile(f"[\x00-\x1f{_OTHERS}]")
_ANY_BUT_LAYOUT = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHERS}]")  # keeps tab and newline
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _spell(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, multiline: bool = False) -> str:
    """``text`` with every acting character spelled out; ``multiline`` keeps newlines and tabs
    (for a snippet), else the result is one line (for a path or a symbol)."""
    if multiline:
        return _ANY_BUT_LAYOUT.sub(_spell, text.replace("\r\n", "\n"))
    return _ANY.sub(_spell, text)
