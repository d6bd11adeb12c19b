"""The kenning block in an instruction file (CLAUDE.md, AGENTS.md).

The block sits between ``<!-- kenning-start -->`` and ``<!-- kenning-end -->``; everything
outside the markers belongs to the user and is never touched.
"""

from __future__ import annotations

from kenning.agents.blocks import append_block, cut_block
from kenning.errors import AgentSetupError

START = "<!-- kenning-start -->"
END = "<!-- kenning-end -->"


def find_block(text: str, name: str) -> tuple[int, int] | None:
    """The span of the kenning block, markers included; refuses a damaged or doubled block."""
    starts, ends = text.count(START), text.count(END)
    if starts == 0 and ends == 0:
        return None
    start, end = text.find(START), text.find(END)
    if starts != 1 or ends != 1 or end < start:
        raise AgentSetupError(
            f"{name} has unmatched or repeated kenning markers, so kenning cannot tell its "
            "block from your text.",
            hint=f"Leave exactly one {START} ... {END} pair (or none) and run again.",
        )
    return start, end + len(END)


def set_block(text: str | None, body: str, name: str) -> str:
    """``text`` with the kenning block holding ``body`` (added at the end, or replaced)."""
    block = f"{START}\n{body.strip()}\n{END}"
    if text is None:
        return append_block("", block)
    span = find_block(text, name)
    if span is None:
        return append_block(text, block)
    nl = "\r\n" if "\r\n" in text else "\n"
    return text[: span[0]] + block.replace("\n", nl) + text[span[1] :]


def remove_block(text: str | None, name: str) -> str | None:
    """``text`` without the kenning block; None when nothing else is left in the file."""
    if text is None:
        return None
    span = find_block(text, name)
    if span is None:
        return text
    rest = cut_block(text, *span)
    return rest if rest.strip() else None
