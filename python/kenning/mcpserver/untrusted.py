"""Marking indexed text as data, so an agent never mistakes it for instructions.

Every source fragment a tool returns sits between ``<untrusted-content id="NONCE" ...>`` and
``</untrusted-content id="NONCE">``. The nonce is fresh and cryptographically random for each
tool call, so a file cannot contain the real closing tag; any ``untrusted-content`` tag a file
does contain (forged openers, nonce-less closers) is defused by escaping its ``<``, so the
wrapper is the only such tag the reader ever sees. A forged tag is found after folding
what a reader would not see or tell apart, character by character: invisible and blank
characters (format characters, default-ignorables, the braille blank) and combining marks go,
dashes become ``-``, and what is left is its NFKC form with marks stripped, then its Unicode
confusables prototype (UTS #39 data, ignoring case), so a Cyrillic ``е``, a Greek ``ν``, a
``˂`` or ``‹`` for ``<`` and a ``∕`` for ``/`` read as what they imitate. Characters named as
left-pointing angle brackets (``〈``) count as ``<`` too, and so do the Latin small capitals
and modifier letters (``ɴ``, ``ᴛ``, ``ᵉ``) as their letters: the confusables data sets them
apart (or leaves them out), a reader does not.
"""

from __future__ import annotations

import html
import re
import secrets
import unicodedata
from collections.abc import Iterable
from functools import cache

from kenning.display import visible

TAG = "untrusted-content"
# default-ignorable characters outside the format category (Cf), which is invisible whole
# and blank-looking characters that are no space (the braille blank, Hangul fillers)
_IGNORABLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164"
                        "\ufe00-\ufe0f\uffa0\U000e0000-\U000e0fff]")
_MARKS = {"Mn", "Me"}  # combining marks drawn on the letter before them
_DASHES = {"\u2043", "\u2212"}  # dash look-alikes outside the dash category (Pd)


def _spaced(word: str) -> str:
    return "\0*".join(word)  # NUL stands for an invisible character after folding


# on folded text: "<", an optional "/", the tag name, with any spacing or dash between
_FORGED_TAG = re.compile(rf"<[\s\0]*/?[\s\0]*{_spaced('untrusted')}[\s\0_-]*{_spaced('content')}",
                         re.IGNORECASE)


@cache
def _prototypes() -> dict[str, str]:
    """Each character Unicode's confusables data links to exactly one ASCII character (ASCII
    letters compared without case), mapped to it: the links, followed both ways, group look-
    alikes, and a group that holds one ASCII character stands for it. Built on first need."""
    from confusable_homoglyphs.confusables import confusables_data

    parent: dict[str, str] = {}

    def root(char: str) -> str:
        while (up := parent.get(char, char)) != char:
            parent[char] = parent.get(up, up)
            char = up
        return char

    for char, links in confusables_data.items():
        for link in links:
            a, b = root(char), root(link["c"])
            if a != b:
                parent[a] = b
    groups: dict[str, set[str]] = {}
    for char in {*parent, *confusables_data}:
        groups.setdefault(root(char), set()).add(char)
    out: dict[str, str] = {}
    for group in groups.values():
        singles = [char for char in group if len(char) == 1]  # links may name sequences
        ascii_ = {char.lower() for char in singles if char.isascii()}
        if len(ascii_) == 1:
            target = ascii_.pop()
            out.update((char, target) for char in singles if not char.isascii())
    return out


# the name of a Latin letter that is a small capital, a modifier, a subscript or a superscript
# form of a plain one ("LATIN LETTER SMALL CAPITAL N", "MODIFIER LETTER SMALL E")
_LETTER_FORM = re.compile(r"(?:LATIN|MODIFIER) (?:(?:LATIN|LETTER|SMALL|CAPITAL|SUBSCRIPT"
                          r"|SUPERSCRIPT) )*(?P<letter>[A-Z])")


def _letter_form(char: str) -> str | None:
    found = _LETTER_FORM.fullmatch(unicodedata.name(char, ""))
    return found["letter"].lower() if found else None


def _left_angle(char: str) -> bool:
    name = unicodedata.name(char, "")
    return "LESS-THAN" in name or ("LEFT" in name and "ANGLE" in name)


def _plain(char: str) -> str:
    """The one ASCII-like character ``char`` passes for, or ``char`` itself."""
    base = "".join(c for c in unicodedata.normalize("NFKD", char)
                   if unicodedata.category(c) not in _MARKS)
    base = unicodedata.normalize("NFKC", base)
    if len(base) != 1:
        base = char
    if base.isascii():
        return base
    prototypes = _prototypes()
    for form in (base, base.lower(), base.upper()):
        if len(form) == 1 and form in prototypes:
            return prototypes[form]
    return _letter_form(base) or ("<" if _left_angle(base) else base)


class _Fold(dict[int, str]):
    """A ``str.translate`` table giving what a reader takes each character for, one character
    for one so offsets survive: NUL for an invisible or blank one and for a combining mark,
    "-" for any dash, else the ASCII character it imitates (``_plain``). Filled as characters
    are met."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        category = unicodedata.category(char)
        if category == "Cf" or category in _MARKS or _IGNORABLE.match(char):
            folded = "\0"
        elif category == "Pd" or char in _DASHES:
            folded = "-"
        else:
            folded = _plain(char)
        self[code] = folded
        return folded


_FOLD = _Fold()


def _forged_openers(text: str) -> list[int]:
    """Offsets in ``text`` of the character that opens each forged tag."""
    folded = text if text.isascii() else text.translate(_FOLD)
    return [match.start() for match in _FORGED_TAG.finditer(folded)]


def new_nonce(fragments: Iterable[str] = ()) -> str:
    """A fresh nonce that occurs in none of ``fragments`` (a collision is astronomically rare)."""
    texts = list(fragments)
    while True:
        nonce = secrets.token_hex(16)
        if not any(nonce in text for text in texts):
            return nonce


def defuse(text: str) -> str:
    """``text`` with every ``<untrusted-content`` / ``</untrusted-content`` tag made inert."""
    openers = _forged_openers(text)
    if not openers:
        return text
    parts, start = [], 0
    for offset in openers:
        parts += [text[start:offset], "&lt;"]
        start = offset + 1
    return "".join(parts) + text[start:]


def escape_label(text: str) -> str:
    """A path or symbol as an agent may read it anywhere: one line with every control
    character spelled out, and no live tag."""
    return defuse(visible(text))


def clean_label(text: str, limit: int = 200) -> str:
    """``escape_label`` cut to ``limit`` characters, for the text rendering."""
    line = escape_label(text)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def wrap(text: str, *, origin: str, nonce: str) -> str:
    """``text`` inside the wrapper; ``origin`` is ``path:start-end``."""
    body = defuse(text)
    if not body.endswith("\n"):
        body += "\n"
    attr = html.escape(clean_label(origin, 400), quote=True)
    return f'<{TAG} id="{nonce}" origin="{attr}">\n{body}</{TAG} id="{nonce}">'
