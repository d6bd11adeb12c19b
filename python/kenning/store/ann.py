"""The approximate vector path: a usearch HNSW graph over the sign bits (Hamming metric).

Exact scanning (``kernels.hamming_topk``) is the default; past ``index.ann_threshold`` vectors
search asks this index for the shortlist instead and rescores it exactly as before. The graph
lives in one file beside the vector files. Keys are vector ids (row numbers of the sign-bit
file), so ``sync`` only has to add the rows appended since the last call; it writes a new file
and renames it over the old one, so readers (``view``, memory-mapped) never see half a graph.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from kenning import kernels
from kenning.errors import IndexMissing
from kenning.kernels import _checks

# Graph parameters, measured by benchmarks/ann_vs_exact.py on sign bits of embeddings.
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 256
# A filter this selective is answered by an exact scan of the allowed rows: cheaper and exact.
EXACT_FILTER_ROWS = 100_000


class AnnIndex:
    """An HNSW index over ``dims``-bit sign vectors stored at ``path``."""

    def __init__(self, path: str | os.PathLike[str], dims: int, *,
                 expansion_search: int = EXPANSION_SEARCH) -> None:
        if dims <= 0:
            raise ValueError(f"dims must be positive, got {dims}")
        self.path = Path(path)
        self.dims = dims
        self.width = (dims + 7) // 8
        self.expansion_search = expansion_search
        self._index: Any = None
        self._writable = False

    def _new(self) -> Any:
        # onnxruntime first: imported after usearch, its import crashes the process (SIGSEGV),
        # and the local embedder may load it later in this process.
        import onnxruntime  # noqa: F401
        from usearch.index import Index, MetricKind, ScalarKind

        return Index(ndim=self.dims, metric=MetricKind.Hamming, dtype=ScalarKind.B1,
                     connectivity=CONNECTIVITY, expansion_add=EXPANSION_ADD,
                     expansion_search=self.expansion_search)

    def __len__(self) -> int:
        return len(self._opened())

    def _opened(self) -> Any:
        return self._index if self._index is not None else self.view()._index

    def view(self) -> AnnIndex:
        """Opens the saved graph memory-mapped and read-only (cheap; many readers may share it)."""
        if not self.path.is_file():
            raise IndexMissing(f"there is no approximate index at {self.path}",
                               hint="run `kenning index` to build it")
        index = self._new()
        index.view(str(self.path))
        self._check_dims(index)
        self._index, self._writable = index, False
        return self

    def _check_dims(self, index: Any) -> None:
        if index.ndim != self.dims:
            raise ValueError(f"the approximate index at {self.path} holds {index.ndim}-bit "
                             f"vectors, not {self.dims}-bit")

    def sync(self, bits: np.ndarray, rows: int | None = None) -> int:
        """Adds rows ``len(self) .. rows`` of ``bits`` (uint8[n, dims/8]) and saves atomically.

        ``rows`` defaults to all of ``bits``. An index holding more rows than ``rows`` belongs to
        an older vector file and is rebuilt. Returns the number of rows added.
        """
        bits = _checks_bits(bits, self.width)
        rows = bits.shape[0] if rows is None else rows
        if not 0 <= rows <= bits.shape[0]:
            raise ValueError(f"rows must be between 0 and {bits.shape[0]}, got {rows}")
        index = self._index if self._writable else self._load_for_write()
        have = len(index)
        if have > rows:
            index, have = self._new(), 0
        if have < rows or not self.path.is_file():
            if have < rows:
                keys = np.arange(have, rows, dtype=np.uint64)
                index.add(keys, np.ascontiguousarray(bits[have:rows]), threads=0)
            self._save(index)
        self._index, self._writable = index, True
        return rows - have

    def _load_for_write(self) -> Any:
        index = self._new()
        if self.path.is_file():
            index.load(str(self.path))
            self._check_dims(index)
        return index

    def _save(self, index: Any) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            index.save(str(tmp))
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)

    def search(
        self, query_bits: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Approximate k nearest rows for each query, in the shape of ``kernels.hamming_topk``:
        (int64[q, k'], uint32[q, k']) by ascending distance, ties by lower row, with
        k' = min(k, allowed rows). ``allowed`` (bool mask or row ids) is honoured: a selective
        filter is answered exactly, a broad one by searching deeper until k allowed hits turn
        up. A query the graph cannot fill is padded with id -1 and distance dims + 1."""
        index = self._opened()
        n = len(index)
        single = isinstance(query_bits, np.ndarray) and query_bits.ndim == 1
        queries = _checks_bits(query_bits[None, :] if single else query_bits, self.width,
                               "query_bits")
        k = _checks.count(k)
        mask, ids = _checks.allowed_rows(allowed, n)
        if ids is not None:
            mask = np.zeros(n, dtype=bool)
            mask[ids] = True
        candidates = n if mask is None else int(mask.sum())
        kk = min(k, candidates)
        if kk == 0 or queries.shape[0] == 0:
            return (np.empty((queries.shape[0], kk), np.int64),
                    np.empty((queries.shape[0], kk), np.uint32))
        if mask is not None and candidates <= EXACT_FILTER_ROWS:
            rows = np.flatnonzero(mask)
            vectors = np.stack(index.get(rows.astype(np.uint64), dtype=np.uint8))
            found, dists = kernels.hamming_topk(queries, vectors, kk)
            return rows[found], dists
        count = kk if mask is None else min(n, kk * max(2, 2 * n // candidates))
        while True:
            matches = index.search(queries, count, exact=False)
            keys = np.asarray(matches.keys, dtype=np.int64).reshape(len(queries), -1)
            dists = np.asarray(matches.distances).reshape(len(queries), -1)
            # one query gives `Matches` (already cut to what was found), more give `BatchMatches`
            counts = np.asarray(getattr(matches, "counts", [keys.shape[1]])).reshape(-1)
            result = _best_allowed(keys, dists, counts, mask, kk, self.dims, pad=count >= n)
            if result is not None:
                return result
            count = min(n, count * 4)


def _checks_bits(bits: np.ndarray, width: int, name: str = "bits") -> np.ndarray:
    bits = _checks.array(bits, name, np.uint8, 2)
    if bits.shape[1] != width:
        raise ValueError(f"{name} have {bits.shape[1]} bytes per row but the index needs {width}")
    return bits


def _best_allowed(keys: np.ndarray, dists: np.ndarray, counts: np.ndarray,
                  mask: np.ndarray | None, k: int, dims: int,
                  pad: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
    """The k best allowed hits per query sorted by (distance, id); None if some query has
    fewer than k and ``pad`` is off."""
    out_ids = np.full((len(keys), k), -1, dtype=np.int64)
    out_dists = np.full((len(keys), k), dims + 1, dtype=np.uint32)
    for q in range(len(keys)):
        found = keys[q, : counts[q]]
        dist = dists[q, : counts[q]].astype(np.uint32)
        if mask is not None:
            keep = mask[found]
            found, dist = found[keep], dist[keep]
        if len(found) < k and not pad:
            return None
        order = np.lexsort((found, dist))[:k]
        out_ids[q, : len(order)] = found[order]
        out_dists[q, : len(order)] = dist[order]
    return out_ids, out_dists
