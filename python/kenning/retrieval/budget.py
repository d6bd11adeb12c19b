"""A token budget: the line ranges of a search's results that best cover the query within N
tokens.

First the head of each result in rank order (a declaration's doc comment and decorators, its
signature and its docstring), then each result's best-matching window (the snippet's window:
``snippets``), in rank order; a range goes in whole where it fits and is passed over where it
does not, so a later, smaller one may still fit. No line is shown twice: ranges of one file
merge, and a result that gets no line is left out. Import blocks and a licence banner are
never offered: a range is trimmed of them, and one made of nothing else is passed over. Each
result's ``content`` becomes its ranges, with the marker lines of ``snippets.left_out`` for what
lies between and around them, and ``lines`` lists them; ``budget`` says ``{"tokens": N,
"used": M}``, M the tokens of the contents together, or, where a front end passes its
``Frame``, of everything it prints (headers, ids, wrappers: what the agent receives).

Tokens are estimated, not counted: the agent's tokenizer is unknown, and code runs at about
three to four characters per token in the common ones, so three characters per token errs on
the side of a smaller result (the MCP server's ``mcp.max_tokens`` cap counts the same way).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kenning.errors import UsageError
from kenning.retrieval.snippets import NOT_SIGNATURE, SIGNATURE_LINES, left_out
from kenning.tokens import QUALIFIER

CHARS_PER_TOKEN = 3
MAX_BUDGET_TOKENS = 100_000  # a budget larger than this is refused: it is no budget
HEAD_MAX_LINES = 30  # a head longer than this (a vast docstring) is cut here
# A signature that runs over several lines ends at the first line ending in one of these,
# within this many lines; else the line that names the declaration stands for it.
_SIGNATURE_END = (":", "{", "=>", "->", "=", ";")
SIGNATURE_RUN = 8
_DOCSTRING = ('"""', "'''")


# Lines a budget never spends on: imports (of the common languages) and licence banners.
_IMPORT = re.compile(r"\s*(?:import\s|from\s+\S+\s+import\s|use\s+\w+(?:::|\s*;|\s+as\s)|"
                     r"#\s*include\s|using\s+[\w.]+\s*;|require\s*\(|"
                     r"(?:const|let|var)\s+.*=\s*require\s*\(|extern\s+crate\s|"
                     r"package\s+[\w.]+\s*;?\s*$)")
_BANNER = re.compile(r"copyright|licen[cs]e|spdx-license-identifier|all rights reserved",
                     re.IGNORECASE)
_COMMENT = re.compile(r"\s*(?:#|//|/\*|\*|--|;;|<!--)")


class Frame(Protocol):
    """What a front end prints of a search under a budget, so the budget bounds all of it."""

    def envelope(self, result: dict[str, Any]) -> str:
        """Everything printed besides the results, at its longest for any of ``result``'s
        results (the candidates; its budget all used)."""
        ...

    def item(self, hit: dict[str, Any]) -> str:
        """Everything printed for ``hit``, carrying the ``content`` it would be given."""
        ...


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
    head: tuple[int, int] | None
    window: tuple[int, int] | None


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


def _skipped(lines: list[str], first: int) -> set[int]:
    """Numbers of the lines no budget spends on: imports, with the blank lines and comments
    among them, and a leading comment block that names a licence or copyright."""
    skipped: set[int] = set()
    banner = []
    for i, line in enumerate(lines):
        if line.strip() and not _COMMENT.match(line):
            break
        banner.append(first + i)
    if first == 1 and any(_BANNER.search(lines[n - first]) for n in banner):
        skipped.update(banner)
    run: list[int] = []  # blank and comment lines that may lie inside an import block
    for i, line in enumerate(lines):
        if _IMPORT.match(line):
            skipped.update(run)
            skipped.add(first + i)
            run = []
        elif not line.strip() or _COMMENT.match(line):
            run.append(first + i)
        else:
            run = []
    return skipped


def _trimmed(span: tuple[int, int], skipped: set[int], lines: list[str],
             first: int) -> tuple[int, int] | None:
    """``span`` without the skipped and blank lines at its ends; None if nothing is left."""
    def bare(number: int) -> bool:
        return number in skipped or not lines[number - first].strip()

    start, end = span[0], min(span[1], first + len(lines) - 1)
    while start <= end and bare(start):
        start += 1
    while end >= start and bare(end):
        end -= 1
    return (start, end) if start <= end else None


def offer(text: str, first: int, last: int, window: tuple[int, int],
          symbol: str | None) -> Lines:
    """The ``Lines`` of a result spanning lines ``first``-``last`` whose text is ``text``; a
    range made of imports or a banner alone offers nothing (``None``)."""
    lines = text.splitlines()[: last - first + 1]
    skipped = _skipped(lines, first)
    head = (first, min(head_end(lines, first, symbol), last))
    return Lines(first, tuple(lines), _trimmed(head, skipped, lines, first),
                 _trimmed(window, skipped, lines, first))


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


def pack(results: list[dict[str, Any]], offers: list[Lines | None], tokens: int,
         item: Callable[[dict[str, Any]], str] | None = None
         ) -> tuple[list[dict[str, Any]], int]:
    """The results (in rank order, each with its ``offers`` entry) that get lines within
    ``tokens``, with their ``content`` and ``lines``; and the tokens used. A result costs
    its content, or with ``item`` (a ``Frame``'s) all it prints. A result offered nothing
    (``None``: its file could not be read) gets no line."""

    def price(i: int, content: str, ranges: list[tuple[int, int]]) -> int:
        if item is None:
            return context_tokens(content)
        return context_tokens(item({**results[i], "content": content,
                                    "lines": [list(r) for r in ranges]}))

    shown: dict[tuple[str, str], set[int]] = {}
    taken: list[list[tuple[int, int]]] = [[] for _ in results]
    cost = [0] * len(results)
    used = 0
    for phase in ("head", "window"):
        for i, (result, offered) in enumerate(zip(results, offers, strict=True)):
            if offered is None:
                continue
            lines = shown.setdefault((result["project"], result["path"]), set())
            span = getattr(offered, phase)
            new = _new_lines(span, lines) if span is not None else []
            if not new:
                continue
            ranges = _merged(taken[i] + new)
            spent = price(i, _content(offered, ranges, result["end_line"]), ranges)
            if used - cost[i] + spent > tokens:
                continue
            used += spent - cost[i]
            cost[i], taken[i] = spent, ranges
            for start, end in new:
                lines.update(range(start, end + 1))
    packed = []
    for result, offered, ranges in zip(results, offers, taken, strict=True):
        if ranges and offered is not None:
            packed.append({**result, "content": _content(offered, ranges, result["end_line"]),
                           "lines": [list(r) for r in ranges]})
    return packed, used
