"""The approximate-search graph of an index: derived data, kept beside the vector files.

The usearch HNSW graph (``kenning.store.ann``) is keyed by vector id, and ids are only stable
within one vector epoch (a compaction renumbers them), so the file name carries the epoch (epoch 0
keeps the plain name, as the vector files do). Search uses a graph only when it holds exactly
the snapshot's rows of the snapshot's epoch; anything else (missing, behind, ahead, another
epoch, damaged) means the exact scan. Only a refresh, under the index lock, writes a graph;
``AnnIndex.sync`` saves by rename, so a crash leaves the old graph or none, and the next
refresh catches up.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kenning.errors import IndexMissing

if TYPE_CHECKING:
    from kenning.config import Settings
    from kenning.store.ann import AnnIndex

SUFFIX = ".usearch"
NAME = "vectors" + SUFFIX  # epoch 0's graph


def path(directory: Path, epoch: int) -> Path:
    return directory / (NAME if epoch == 0 else f"vectors.{epoch}{SUFFIX}")


def wanted(settings: Settings, rows: int) -> bool:
    """Whether ``index.vector_search`` asks for the graph at ``rows`` committed vectors."""
    mode = settings["index.vector_search"]
    if mode == "exact":
        return False
    return mode == "ann" or rows > int(settings["index.ann_threshold"])


def _view(file: Path, dims: int) -> AnnIndex | None:
    """The graph at ``file``, memory-mapped; None when it is missing or unreadable."""
    from kenning.store.ann import AnnIndex

    try:
        return AnnIndex(file, dims).view()
    except IndexMissing:  # never built, or replaced by another epoch's since the check
        return None
    except (RuntimeError, ValueError):  # usearch's error for a damaged file; another dims'
        return None


def current(directory: Path, dims: int, epoch: int, rows: int) -> AnnIndex | None:
    """The saved graph, memory-mapped, if it covers exactly ``rows`` rows of ``epoch``."""
    ann = _view(path(directory, epoch), dims) if rows else None
    return ann if ann is not None and len(ann) == rows else None


def sync(directory: Path, dims: int, epoch: int, bits: np.ndarray) -> int:
    """Bring the graph of ``epoch`` up to the committed rows ``bits``; drop other epochs'
    graphs and a killed sync's temporary files. Returns the rows added (0 when current).
    The caller holds the index lock."""
    from kenning.store.ann import AnnIndex

    keep = path(directory, epoch)
    for stale in directory.glob(f"*{SUFFIX}*"):
        if stale != keep:
            stale.unlink(missing_ok=True)  # readers that mapped it keep their view
    rows = len(bits)
    saved = _view(keep, dims)
    if saved is not None and len(saved) == rows:
        return 0
    if saved is None:
        keep.unlink(missing_ok=True)  # missing, or damaged: built again from the first row
    return AnnIndex(keep, dims).sync(bits, rows)
