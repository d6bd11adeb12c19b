"""A token budget for tool results, so one answer never floods an agent's context. Tokens are
estimated as ``kenning.retrieval.budget`` (a search's own ``budget_tokens``) estimates them.
"""

from __future__ import annotations

from kenning.retrieval.budget import CHARS_PER_TOKEN, context_tokens

__all__ = ["CHARS_PER_TOKEN", "Budget", "context_tokens", "head_lines"]


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
