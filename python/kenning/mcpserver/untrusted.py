"""Marking indexed text as data, so an agent never mistakes it for instructions.

Every source fragment a tool returns sits between ``<untrusted-content id="NONCE" ...>`` and
``</untrusted-content id="NONCE">``. The nonce is fresh and cryptographically random for each
tool call, so a file cannot contain the real closing tag; any ``untrusted-content`` tag a file
does contain (forged openers, nonce-less closers) is defused by escaping its ``<``, so the
wrapper is the only such tag the reader ever sees.
"""

from __future__ import annotations

import html
import re
import secrets
from collections.abc import Iterable

TAG = "untrusted-content"
# whitespace and the invisible format characters a forged tag could hide behind
_GAP = r"[\s\u200b-\u200f\u2060\ufeff]*"
_FORGED_TAG = re.compile(rf"<({_GAP}/?{_GAP}untrusted-content)", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def new_nonce(fragments: Iterable[str] = ()) -> str:
    """A fresh nonce that occurs in none of ``fragments`` (a collision is astronomically rare)."""
    texts = list(fragments)
    while True:
        nonce = secrets.token_hex(16)
        if not any(nonce in text for text in texts):
            return nonce


def defuse(text: str) -> str:
    """``text`` with every ``<untrusted-content`` / ``</untrusted-content`` tag made inert."""
    return _FORGED_TAG.sub(r"&lt;\1", text)


def clean_label(text: str, limit: int = 200) -> str:
    """A path or symbol safe to print outside the wrapper: one line, no tags, bounded length."""
    line = defuse(_CONTROL.sub(" ", text.replace("\n", " ").replace("\r", " ")))
    return line if len(line) <= limit else line[: limit - 1] + "…"


def wrap(text: str, *, origin: str, nonce: str) -> str:
    """``text`` inside the wrapper; ``origin`` is ``path:start-end``."""
    body = defuse(text)
    if not body.endswith("\n"):
        body += "\n"
    attr = html.escape(clean_label(origin, 400), quote=True)
    return f'<{TAG} id="{nonce}" origin="{attr}">\n{body}</{TAG} id="{nonce}">'
