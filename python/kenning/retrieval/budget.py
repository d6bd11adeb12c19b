"""A token budget: the line ranges of a search's results that best cover the query within N
tokens.

First the head of each result in rank order (a declaration's doc comment and decorators, its
signature and its docstring), then each result's best-matching window (the snippet's window:
``snippets``), in rank order; a range goes in whole where it fits and is passed over where it
does not, so a later, smaller one may still fit. No line is shown twice: ranges of one file
merge, and a result that gets no line is left out. Each result's ``content`` becomes its ranges,
with the marker lines of ``snippets.left_out`` for what lies between and around them, and
``lines`` lists them; ``budget`` says ``{"tokens": N, "used": M}``, M the tokens of the
contents together.

Tokens are estimated, not counted: the agent's tokenizer is unknown, and code runs at about
three to four characters per token in the common ones, so three characters per token errs on
the side of a smaller result (the MCP server's ``mcp.max_tokens`` cap counts the same way).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kenning.errors import UsageError
from kenning.retrieval.query import QUALIFIER
from kenning.retrieval.snippets import NOT_SIGNATURE, SIGNATURE_LINES, left_out

CHARS_PER_TOKEN = 3
MAX_BUDGET_TOKENS = 100_000  # a budget larger than this is refused: it is no budget
HEAD_MAX_LINES = 30  # a head longer than this (a vast docstring) is cut here
# A signature that runs over several lines ends at the first line ending in one of these,
# within this many lines; else the line that names the declaration stands for it.
_SIGNATURE_END = (":", "{", "=>", "->", "=", ";")
SIGNATURE_RUN = 8
_DOCSTRING = ('"""', "'''")


def context_tokens(text: str) -> int:
    """What ``text`` costs of an agent's context (not an embedder's count: see
    ``embedding.remote.cautious_token_count``)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def check(tokens: int) -> None:
    """UsageError unless ``tokens`` is a budget kenning packs."""
    if isinstance(tokens, bool) or not isinstance(tokens, int):
        raise UsageError(f"budget_tokens must be an integer, not {type(tokens).__name__}.")
    if not 1 <= tokens <= MAX_BUDGET_TOKENS:
        raise UsageError(f"budget_tokens must be between 1 and {MAX_BUDGET_TOKENS:,}, got "
                         f"{tokens:,}.", hint="Leave it out for results without a budget.")


def described(budget: dict[str, int], results: int) -> str:
    """One line on a search's token budget, for people and agents alike."""
    return (f"Token budget: {budget['used']:,} of {budget['tokens']:,} tokens used, by the "
            f"line ranges of {results} result{'' if results == 1 else 's'} (about "
            f"{CHARS_PER_TOKEN} characters a token).")


@dataclass(frozen=True, slots=True)
class Lines:
    """What the packing needs of one result: the lines of its whole span as read, and the two
    ranges it offers (first and last line, inclusive)."""

    first: int  # the number of ``text[0]``
    text: tuple[str, ...]
    head: tuple[int, int]
    window: tuple[int, int]


def head_end(lines: list[str], first: int, symbol: str | None) -> int:
    """The number of the last line of a declaration's head: its signature (past its decorators
    and doc comment, over several lines where it runs on) and a docstring that follows it; its
    first line alone where it declares nothing."""
    if symbol is None or not lines:
        return first
    name = QUALIFIER.split(symbol)[-1]
    at = next((i for i, line in enumerate(lines[:SIGNATURE_LINES])
               if name in line and not line.strip().startswith(NOT_SIGNATURE)), 0)
    at = next((i for i in range(at, min(at + SIGNATURE_RUN, len(lines)))
               if lines[i].rstrip().endswith(_SIGNATURE_END)), at)
    opening = lines[at + 1].strip().lstrip("r") if at + 1 < len(lines) else ""
    if opening.startswith(_DOCSTRING):
        quote = opening[:3]
        at += 1
        if quote not in opening[3:]:  # a docstring of several lines: to its closing quotes
            at = next((i for i in range(at + 1, len(lines)) if quote in lines[i]), at)
    return first + min(at, HEAD_MAX_LINES - 1)


def offer(text: str, first: int, last: int, window: tuple[int, int],
          symbol: str | None) -> Lines:
    """The ``Lines`` of a result spanning lines ``first``-``last`` whose text is ``text``."""
    lines = text.splitlines()[: last - first + 1]
    head = (first, min(head_end(lines, first, symbol), last))
    return Lines(first, tuple(lines), head, window)


def _content(item: Lines, ranges: list[tuple[int, int]], last: int) -> str:
    parts: list[str] = []
    at = item.first
    for start, end in ranges:
        parts.append(left_out(at, start - 1))
        parts.append("\n".join(item.text[start - item.first: end - item.first + 1]))
        at = end + 1
    parts.append(left_out(at, last))
    return "\n".join(part for part in parts if part)


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _new_lines(span: tuple[int, int], shown: set[int]) -> list[tuple[int, int]]:
    """The runs of lines of ``span`` not in ``shown``."""
    runs: list[tuple[int, int]] = []
    for number in range(span[0], span[1] + 1):
        if number in shown:
            continue
        if runs and runs[-1][1] == number - 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return runs


def pack(results: list[dict[str, Any]], offers: list[Lines | None],
         tokens: int) -> tuple[list[dict[str, Any]], int]:
    """The results (in rank order, each with its ``offers`` entry) that get lines within
    ``tokens``, with their ``content`` and ``lines``; and the tokens used. A result offered
    nothing (``None``: its file could not be read) gets no line."""
    shown: dict[tuple[str, str], set[int]] = {}
    taken: list[list[tuple[int, int]]] = [[] for _ in results]
    cost = [0] * len(results)
    used = 0
    for phase in ("head", "window"):
        for i, (result, item) in enumerate(zip(results, offers, strict=True)):
            if item is None:
                continue
            lines = shown.setdefault((result["project"], result["path"]), set())
            new = _new_lines(getattr(item, phase), lines)
            if not new:
                continue
            ranges = _merged(taken[i] + new)
            price = context_tokens(_content(item, ranges, result["end_line"]))
            if used - cost[i] + price > tokens:
                continue
            used += price - cost[i]
            cost[i], taken[i] = price, ranges
            for start, end in new:
                lines.update(range(start, end + 1))
    packed = []
    for result, item, ranges in zip(results, offers, taken, strict=True):
        if ranges and item is not None:
            packed.append({**result, "content": _content(item, ranges, result["end_line"]),
                           "lines": [list(r) for r in ranges]})
    return packed, used
