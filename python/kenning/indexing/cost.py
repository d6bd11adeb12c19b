"""What embedding a project will cost on this machine, before any of it is spent.

The rate is measured: every index run that embeds enough vectors keeps its vectors a second
for its model in ``$KENNING_HOME/cache/embedding_rate.json`` (as does a dry run, from a sample
it embeds), and an estimate uses the last one; until there is one, ``DEFAULT_RATE`` (the
embedded model on two busy cores, README.md). Without chunking, a file's chunks are estimated
from its bytes (``CHUNK_BYTES``: sharkdp/bat and kenning itself, all kinds together).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

from kenning import project

DEFAULT_RATE = 50.0  # vectors a second: 5,847 in 116 s on two busy cores
CHUNK_BYTES = 330  # bytes of a file per chunk: bat 6.4 MB in 20,257 chunks
MIN_MEASURED = 64  # vectors: fewer say more about start-up than about the rate
_FILE = "embedding_rate.json"


def _path() -> Path:
    return project.kenning_home() / "cache" / _FILE


def _rates() -> dict[str, float]:
    try:
        found = json.loads(_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {k: float(v) for k, v in found.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and v > 0}


def rate(model: str) -> tuple[float, bool]:
    """Vectors a second for ``model`` on this machine, and whether that was measured here."""
    measured = _rates().get(model)
    return (measured, True) if measured else (DEFAULT_RATE, False)


def record(model: str, vectors: int, seconds: float) -> None:
    """Keep the rate of a run that embedded ``vectors`` in ``seconds`` (too few: ignored).
    Written whole by a rename, so a reader never sees half a file; a failure costs nothing."""
    if vectors < MIN_MEASURED or seconds <= 0:
        return
    rates = {**_rates(), model: round(vectors / seconds, 2)}
    folder = _path().parent
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=folder, prefix=".rate-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(rates, out)
        os.replace(temp, _path())


def seconds(chunks: int, vectors_per_second: float) -> float:
    return chunks / vectors_per_second if vectors_per_second > 0 else 0.0


def duration(seconds: float) -> str:
    """``40 s``, ``12 min``, ``3.5 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
