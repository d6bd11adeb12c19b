"""How much embedding a refresh of a project would start, before it starts any: what the
agents' session-start hook (``kenning index --hook``) asks before it indexes, so that no
session opens hours of work in silence.

A project indexed before costs its missing vectors; one never indexed is listed (the walk's
stat pass: no file is read, so that a session never waits on it) and its files of the kinds
that are embedded (``index.embed_kinds``, as their paths and folders show) are counted in
chunks by their bytes (``cost.CHUNK_BYTES``). At the
rate measured on this machine (``indexing.cost``), above ``index.hook_budget`` seconds the
hook indexes words and symbols only and says how to embed the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kenning.config import Settings
from kenning.errors import IndexMissing
from kenning.indexing import cost


@dataclass(frozen=True)
class Estimate:
    root: Path
    chunks: int  # chunks that would get a vector (estimated from bytes when never indexed)
    seconds: float  # embedding them, at ``rate``
    rate: float  # vectors a second
    measured: bool  # the rate was measured on this machine
    budget: float  # index.hook_budget
    indexed: bool  # the project has an index already

    @property
    def over(self) -> bool:
        return self.seconds > self.budget

    def describe(self) -> str:
        """One sentence: what there is to embed and how long it would take."""
        pace = (f"{self.rate:.0f} vectors a second"
                + ("" if self.measured else ", until a first index measures it here"))
        about = "" if self.indexed else "about "
        return (f"{about}{self.chunks:,} chunks to embed in {self.root}, about "
                f"{cost.duration(self.seconds)} at {pace}")


def estimate(root: Path, settings: Settings) -> Estimate:
    """What embedding would cost now (see the module docstring); reads no project file but
    the ones kinds are decided by (``.kenningkinds``, ``.gitmodules``, licences)."""
    from kenning.embedding import identity
    from kenning.indexing.classes import chunk_class
    from kenning.indexing.kinds import Kinds
    from kenning.indexing.sources import listed
    from kenning.store import Index

    rate, measured = cost.rate(identity(settings).model)
    budget = float(settings["index.hook_budget"])
    try:
        with Index.open(root, settings).snapshot() as snap:
            if snap.generation:
                missing = max(0, snap.chunks - snap.vectors - snap.words_only)
                return Estimate(root, missing, cost.seconds(missing, rate), rate, measured,
                                budget, True)
    except IndexMissing:
        pass
    embedded = set(settings["index.embed_kinds"])
    kinds = Kinds(str(root))
    size = sum(size for path, size, language in listed(
        root, max_file_size=int(settings["index.max_file_size"]))
        if (kinds.of(path, size, language, b"") or chunk_class(path, language, None))
        in embedded)
    chunks = -(-size // cost.CHUNK_BYTES)
    return Estimate(root, chunks, cost.seconds(chunks, rate), rate, measured, budget, False)
