"""Chunk ids: ``<project>:<index>:<generation>:<ordinal>``, the one format and the one parser.

``index`` is a random token drawn when an index is created, so an id can never name a chunk of
another index instance: one removed and rebuilt, or another model's index of the same project,
whose ordinals start again from 1. ``generation`` is the snapshot the id was handed out from and
``ordinal`` the chunk row (never reused within one index).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from kenning.errors import StaleChunkId, UsageError

TOKEN_BYTES = 4
# Read for an index made before tokens existed, until its next refresh gives it one.
LEGACY_TOKEN = "0" * 2 * TOKEN_BYTES
FORMAT = "<project>:<index>:<generation>:<ordinal>"
# The project id may itself contain colons; the last three fields cannot. Numbers are plain
# ASCII digits without sign, space or leading zero (``int()`` accepts " 1", "-1" and "١"), and
# short enough to be an SQLite integer.
_ID = re.compile(rf"(?P<project>\S(?:.*\S)?):(?P<index>[0-9a-f]{{{2 * TOKEN_BYTES}}})"
                 r":(?P<generation>[1-9][0-9]{0,17}):(?P<ordinal>[1-9][0-9]{0,17})",
                 re.ASCII | re.DOTALL)


def new_token() -> str:
    """A fresh index token."""
    return secrets.token_hex(TOKEN_BYTES)


@dataclass(frozen=True)
class ChunkId:
    project: str
    index: str  # the index instance's token
    generation: int
    ordinal: int

    def __str__(self) -> str:
        return f"{self.project}:{self.index}:{self.generation}:{self.ordinal}"

    @classmethod
    def parse(cls, text: str) -> ChunkId:
        """The id in ``text`` (surrounding whitespace ignored); UsageError if it is not one."""
        match = _ID.fullmatch(text.strip()) if isinstance(text, str) else None
        if match is None:
            raise UsageError(f"{text!r} is not a chunk id.",
                             hint=f"Chunk ids look like {FORMAT}; take one from a search result.")
        return cls(match["project"], match["index"], int(match["generation"]),
                   int(match["ordinal"]))

    def check_current(self, index: str, generation: int, created: int | None, *,
                      published: bool = False) -> None:
        """StaleChunkId unless this id names a row that the index with token ``index`` still
        holds at ``generation`` (``created``: the generation that made the row, None when there
        is none); ``published``: the index is the project's published snapshot."""
        again = "Search again to get current ids."
        if self.index != index:
            raise StaleChunkId(f"Chunk {self} is from another index of {self.project} " + (
                "than the one published." if published else
                "(removed and built again since, or built with another model)."), hint=again)
        if self.generation > generation:
            raise StaleChunkId(f"Chunk {self} is from generation {self.generation} of "
                               f"{self.project}, newer than the generation {generation} "
                               + ("published." if published else "this index holds now."),
                               hint=again)
        if created is None or created > self.generation:
            raise StaleChunkId(f"Chunk {self} is no longer in the " + (
                "shared index: its file changed in a later publish." if published else
                f"index of {self.project}: its file changed since that search."), hint=again)
