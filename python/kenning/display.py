"""Repository text (paths, symbols, snippets) made safe to show to a person or an agent.

A file name or a line of code may hold terminal escape sequences, carriage returns or bidi
overrides that move the cursor, recolour the terminal or reorder what is read. ``visible``
spells each such character out (``\\x1b``, ``\\r``, ``\\u202e``, a byte of a name that is
not UTF-8 as ``\\xff``), so what is shown is exactly what is in the repository and nothing in
it acts.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls, the line and paragraph separators, the bidi controls, and
# lone surrogates (the bytes of a name that is not UTF-8, which no terminal or JSON can show)
_OTHERS = "\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_ANY = re.compile(f"[\x00-\x1f{_OTHERS}]")
_ANY_BUT_LAYOUT = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHERS}]")  # keeps tab and newline
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _spell(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, as os.fsdecode reads it
        code -= 0xDC00
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, multiline: bool = False) -> str:
    """``text`` with every acting character spelled out; ``multiline`` keeps newlines and tabs
    (for a snippet), else the result is one line (for a path or a symbol)."""
    if multiline:
        return _ANY_BUT_LAYOUT.sub(_spell, text.replace("\r\n", "\n"))
    return _ANY.sub(_spell, text)
