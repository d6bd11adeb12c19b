"""The pure-NumPy twin of ``kenning._core``: same functions, dtypes, results and errors.

Arguments arrive checked for dtype, shape and layout (``_checks``); the data-dependent checks
(NaN, item types) happen here with the same messages as the Rust core.
"""

from __future__ import annotations

from collections.abc import Sequence

import blake3
import numpy as np

from kenning import safe_read

DIGEST_SIZE = 16
_BLOCK_BYTES = 8 << 20  # db rows scanned per step, so temporaries stay cache-sized

_POPCOUNT8 = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).sum(axis=1)


def _popcount(x: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x)
    # NumPy < 2.0: a byte table
    return _POPCOUNT8[x.view(np.uint8)].reshape(*x.shape, x.itemsize).sum(axis=-1)


def binarize(x: np.ndarray, center: np.ndarray | None) -> np.ndarray:
    if np.isnan(x).any():
        raise ValueError("binarize input contains NaN")
    if center is None:
        return np.packbits(x > 0, axis=1)
    if np.isnan(center).any():
        raise ValueError("binarize center contains NaN")
    return np.packbits(x > center, axis=1)


def quantize_int8(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, d = x.shape
    amax = np.abs(x).max(axis=1) if d else np.zeros(n, dtype=np.float32)
    if not np.isfinite(amax).all():
        raise ValueError("quantize_int8 input contains NaN or infinity")
    scales = (amax / np.float32(127)).astype(np.float32)
    divisor = np.where(scales > 0, scales, np.float32(1))
    q = np.rint(x / divisor[:, None]).clip(-127, 127).astype(np.int8)
    return q, scales


def rescore(query: np.ndarray, rows: np.ndarray, scales: np.ndarray) -> np.ndarray:
    return ((rows.astype(np.float32) @ query) * scales).astype(np.float32)


def _distances(query: np.ndarray, block: np.ndarray) -> np.ndarray:
    width = block.shape[1]
    if width % 8 == 0 and width:
        # uint64 words: 8x fewer popcounts and additions than bytes
        block, query = block.view(np.uint64), query.view(np.uint64)
    return _popcount(block ^ query).sum(axis=1, dtype=np.uint32)


def hamming_topk(
    queries: np.ndarray, db: np.ndarray, k: int, mask: np.ndarray | None, ids: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    if mask is not None and ids is not None:
        raise ValueError("hamming_topk takes a mask or row ids, not both")
    n, width = db.shape
    rows = np.flatnonzero(mask) if mask is not None else ids
    m = n if rows is None else rows.shape[0]
    kk = min(k, m)
    out_ids = np.empty((queries.shape[0], kk), dtype=np.int64)
    out_dists = np.empty((queries.shape[0], kk), dtype=np.uint32)
    if kk == 0:
        return out_ids, out_dists
    step = max(1, _BLOCK_BYTES // max(width, 1))
    row_ids = np.arange(n, dtype=np.int64) if rows is None else rows.astype(np.int64)
    for qi, query in enumerate(queries):
        dist = np.empty(m, dtype=np.uint32)
        for start in range(0, m, step):
            stop = min(start + step, m)
            block = db[start:stop] if rows is None else db[rows[start:stop]]
            dist[start:stop] = _distances(query, block)
        # one sortable key per row: distance first, then the row index breaks ties
        keys = dist.astype(np.int64) * (n + 1) + row_ids
        if kk < m:
            keys = np.partition(keys, kk - 1)[:kk]
        keys.sort()
        out_dists[qi] = keys // (n + 1)
        out_ids[qi] = keys % (n + 1)
    return out_ids, out_dists


def _digest(data: bytes) -> bytes:
    return blake3.blake3(data).digest(length=DIGEST_SIZE)


def hash_many(items: Sequence[bytes | str]) -> list[bytes]:
    out = []
    for i, item in enumerate(items):
        if isinstance(item, bytes):
            out.append(_digest(item))
        elif isinstance(item, str):
            out.append(_digest(item.encode("utf-8")))
        else:
            raise TypeError(f"hash_many items must be bytes or str, got {type(item).__name__} "
                            f"at index {i}")
    return out


def hash_files(root: str, paths: Sequence[str], *, max_file_size: int) -> list[bytes | None]:
    out: list[bytes | None] = []
    for rel in paths:
        try:
            data, _ = safe_read.read(root, rel, max_file_size)
        except safe_read.Refused:
            out.append(None)
        else:
            out.append(_digest(data))
    return out


def _check_manifest(manifest: dict[str, bytes]) -> None:
    for key, digest in manifest.items():
        if not isinstance(key, str):
            raise TypeError(f"diff keys must be str, got {type(key).__name__}")
        if not isinstance(digest, bytes):
            raise TypeError(f"diff digests must be bytes, got {type(digest).__name__}")


def diff(
    old: dict[str, bytes], new: dict[str, bytes]
) -> tuple[list[str], list[str], list[str], list[str]]:
    _check_manifest(old)
    _check_manifest(new)
    unchanged, changed, added = [], [], []
    for key, digest in new.items():
        before = old.get(key)
        if before is None:
            added.append(key)
        elif before == digest:
            unchanged.append(key)
        else:
            changed.append(key)
    removed = [key for key in old if key not in new]
    return unchanged, changed, added, removed
