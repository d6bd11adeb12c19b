"""What the rank pipeline (``retrieval.pipeline``) reads of the chunks it ranks: a ``Source``, one
project's chunks as a local snapshot holds them (``retrieval.snapshot_source``) or as the shared
index does (``shared.retrieval``). Ids are the source's own small ints; every ranking is
``(chunk id, score)`` best first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kenning.retrieval.query import Query
from kenning.retrieval.ranking import Candidate
from kenning.retrieval.units import Unit

Ranking = list[tuple[int, float]]
Phrases = Sequence[Sequence[str]]


class Source(Protocol):
    """The reads of one project's chunks that the branches, the floor, the ranking signals,
    the weak rule and the confidence's evidence need, each filtered as the search asks."""

    @property
    def has_vector(self) -> bool:
        """Whether the query has a vector this source can be searched with."""
        ...

    def lexical(self, query: Query, limit: int) -> Ranking:
        """BM25 over the query's terms; with quoted phrases, of the chunks that say them."""
        ...

    def symbols(self, query: Query, limit: int) -> Ranking:
        """The chunks whose symbol is a name the query asks for, graded."""
        ...

    def dense(self, limit: int) -> Ranking:
        """The chunks nearest the query's vector, by rescored cosine."""
        ...

    def message(self, query: Query, limit: int) -> Ranking:
        """The chunks saying a phrase of the error messages of the query's traceback."""
        ...

    def frames(self, query: Query) -> Ranking:
        """The chunks holding the frames of the query's traceback, innermost first."""
        ...

    def frame_calls(self, ids: list[int]) -> Ranking:
        """The callers and callees of the chunks ``ids``."""
        ...

    def cosines(self, ids: list[int]) -> dict[int, float]:
        """The rescored cosine of each chunk of ``ids`` that has a vector."""
        ...

    def background(self) -> tuple[float, float] | None:
        """Mean and deviation of the query's cosines over a sample of the source's vectors."""
        ...

    def candidates(self, ids: list[int]) -> list[Candidate]:
        """The rows of ``ids`` as unscored candidates, in the order of ``ids``."""
        ...

    def symbol_less(self, ids: list[int]) -> list[tuple[int, str, str | None]]:
        """The chunks of ``ids`` that declare nothing: (id, path, language)."""
        ...

    def texts(self, ids: list[int]) -> dict[int, str]:
        """The texts of chunks ``symbol_less`` gave."""
        ...

    def units(self, cands: list[Candidate]) -> dict[int, Unit]:
        """``units.units`` of the candidates, from the source's rows of their files."""
        ...

    def later_parts(self, cands: list[Candidate], query: Query) -> set[int]:
        """``ranking.later_parts``: candidates not where their declaration starts."""
        ...

    def declared(self, paths: list[str]) -> dict[str, frozenset[str]]:
        """Path -> the words of the names its chunks declare."""
        ...

    def says(self, phrases: Phrases) -> bool:
        """Whether some chunk says every one of ``phrases``."""
        ...

    def saying(self, phrases: Phrases, ids: list[int]) -> set[int]:
        """The chunks among ``ids`` that say every one of ``phrases``."""
        ...
