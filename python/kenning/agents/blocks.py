"""Reversible text blocks: append a block to a file and cut it out again, byte for byte.

A block is appended after one blank line. When the file did not end with a newline, the block
does not either, so cutting it restores the original bytes, including the missing newline.
Files with CRLF line endings get CRLF blocks.
"""

from __future__ import annotations


def newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def append_block(text: str, block: str) -> str:
    """``text`` with ``block`` (written with ``\\n`` and no final newline) appended."""
    nl = newline_of(text)
    block = block.replace("\n", nl)
    if text == "":
        return block + nl
    if text.endswith(nl):
        return text + nl + block + nl
    return text + nl + nl + block


def cut_block(text: str, start: int, end: int) -> str:
    """``text`` without ``text[start:end]``, undoing :func:`append_block` exactly.

    A block in the middle of the file (moved there, or with text added after it) goes with
    its line break and, between two blank lines, one of them.
    """
    nl = newline_of(text)
    before, after = text[:start], text[end:]
    if after in ("", nl):  # the block ends the file, as append_block left it
        if before == "":
            return ""
        if before.endswith(nl + nl):
            return before[: -len(nl)] if after else before[: -2 * len(nl)]
        return before
    after = after.removeprefix(nl)
    if before.endswith(nl + nl) and after.startswith(nl):
        after = after[len(nl) :]
    return before + after
