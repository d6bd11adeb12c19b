"""A token budget for tool results, so one answer never floods an agent's context.

Tokens are estimated, not counted: the agent's tokenizer is unknown, and code runs at about
three to four characters per token in the common ones, so three characters per token errs on
the side of a smaller result.
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 3


def context_tokens(text: str) -> int:
    """What ``text`` costs of an agent's context (not an embedder's count: see
    ``embedding.remote.cautious_token_count``)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


class Budget:
    """What is left of ``limit`` tokens as pieces of text are spent."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    @property
    def left(self) -> int:
        return self.limit - self.used

    def fits(self, text: str, *, within: int | None = None) -> bool:
        """Whether ``text`` fits in what is left (of the first ``within`` tokens, if given)."""
        cap = self.limit if within is None else min(within, self.limit)
        return self.used + context_tokens(text) <= cap

    def spend(self, text: str) -> None:
        self.used += context_tokens(text)


def head_lines(text: str, tokens: int) -> tuple[str, int]:
    """The longest run of whole leading lines of ``text`` within ``tokens``; and lines left out."""
    lines = text.splitlines(keepends=True)
    size, kept = 0, 0
    for line in lines:
        size += len(line)
        if size > tokens * CHARS_PER_TOKEN:
            break
        kept += 1
    return "".join(lines[:kept]), len(lines) - kept
