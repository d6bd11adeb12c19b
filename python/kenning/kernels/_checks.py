"""Shape, dtype and layout checks shared by both kernel backends, so both raise the same errors.

Checks that need a pass over the data (NaN, item types) live in each backend, where they cost
nothing extra; everything here is O(1) or O(len(allowed)).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def array(value: Any, name: str, dtype: type[np.generic], ndim: int) -> np.ndarray:
    """``value`` itself if it is a C-contiguous ndarray of ``dtype`` and ``ndim``; never a copy."""
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name} must be a numpy array of {np.dtype(dtype).name}, "
                        f"got {type(value).__name__}")
    if value.dtype != dtype:
        raise TypeError(f"{name} must have dtype {np.dtype(dtype).name}, got {value.dtype}")
    if value.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got {value.ndim} dimensions")
    if not value.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous; pass np.ascontiguousarray({name})")
    return value


def binarize_args(x: Any, center: Any) -> tuple[np.ndarray, np.ndarray | None]:
    x = array(x, "x", np.float32, 2)
    if center is not None:
        center = array(center, "center", np.float32, 1)
        if center.shape[0] != x.shape[1]:
            raise ValueError(f"center has {center.shape[0]} dims but x has {x.shape[1]}")
    return x, center


def rescore_args(query: Any, rows: Any, scales: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    query = array(query, "query", np.float32, 1)
    rows = array(rows, "rows", np.int8, 2)
    scales = array(scales, "scales", np.float32, 1)
    if rows.shape[1] != query.shape[0]:
        raise ValueError(f"rows have {rows.shape[1]} dims but the query has {query.shape[0]}")
    if scales.shape[0] != rows.shape[0]:
        raise ValueError(f"scales has {scales.shape[0]} entries but there are {rows.shape[0]} rows")
    return query, rows, scales


def topk_args(
    queries: Any, db: Any, k: Any, allowed: Any
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray | None, np.ndarray | None]:
    """Returns ``(queries, db, k, mask, ids)``: at most one of ``mask`` (bool[n]) and ``ids``
    (sorted, unique int64 row ids) is set."""
    queries = array(queries, "queries", np.uint8, 2)
    db = array(db, "db", np.uint8, 2)
    if queries.shape[1] != db.shape[1]:
        raise ValueError(f"queries have {queries.shape[1]} bytes per row but db has {db.shape[1]}")
    return (queries, db, count(k), *allowed_rows(allowed, db.shape[0]))


def count(k: Any) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an int, got {type(k).__name__}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    return int(k)


def allowed_rows(allowed: Any, n: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(mask, ids)`` from a bool mask or an array of row ids over ``n`` rows."""
    if allowed is None:
        return None, None
    if not isinstance(allowed, np.ndarray):
        raise TypeError(f"allowed must be a numpy array (bool mask or int row ids), "
                        f"got {type(allowed).__name__}")
    if allowed.ndim != 1:
        raise ValueError(f"allowed must be 1-dimensional, got {allowed.ndim} dimensions")
    if allowed.dtype == np.bool_:
        if allowed.shape[0] != n:
            raise ValueError(f"allowed mask has {allowed.shape[0]} entries but db has {n} rows")
        # a bool array can hold bytes other than 0 and 1 (np.frombuffer); Rust reads each as a
        # bool, which must be 0 or 1, so the mask handed on is made anew from its bytes
        return allowed.view(np.uint8) != 0, None
    if not np.issubdtype(allowed.dtype, np.integer):
        raise TypeError(f"allowed must be a bool mask or integer row ids, got {allowed.dtype}")
    if allowed.size and (int(allowed.min()) < 0 or int(allowed.max()) >= n):
        bad = int(allowed.min()) if int(allowed.min()) < 0 else int(allowed.max())
        raise ValueError(f"allowed row id {bad} is out of range for {n} rows")
    ids = np.ascontiguousarray(allowed, dtype=np.int64)
    # ids already sorted and unique (the usual case) skip the sort of np.unique
    return None, ids if bool((ids[1:] > ids[:-1]).all()) else np.unique(ids)
