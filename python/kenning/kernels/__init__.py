"""The numeric kernels: Hamming top-k, binarization, int8 quantization, BLAKE3 hashing, diffing.

Each kernel runs in the Rust core (``kenning._core``) when it is built, else in the pure-NumPy
twin; both give identical integer results and raise the same errors. ``KENNING_KERNELS=rust``
or ``numpy`` forces one; ``BACKEND`` says which one is live. Arrays are never copied behind the
caller's back: a wrong dtype is a ``TypeError``, a wrong shape or layout a ``ValueError``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from types import ModuleType
from typing import Any

import numpy as np

from kenning.errors import ConfigError
from kenning.kernels import _checks

__all__ = [
    "BACKEND",
    "Kernels",
    "available_backends",
    "binarize",
    "diff",
    "for_backend",
    "hamming_topk",
    "hash_files",
    "hash_many",
    "quantize_int8",
    "rescore",
]

_FUNCTIONS = ("binarize", "quantize_int8", "rescore", "hamming_topk", "hash_many", "hash_files",
              "diff")


def _rust_core() -> ModuleType | None:
    try:
        return importlib.import_module("kenning._core")
    except ImportError:
        return None


def available_backends() -> list[str]:
    return ["rust", "numpy"] if _rust_core() is not None else ["numpy"]


def _implementations(backend: str) -> dict[str, Callable[..., Any]]:
    core = _rust_core() if backend == "rust" else None
    if backend == "rust" and core is None:
        raise ConfigError("KENNING_KERNELS=rust but the Rust core is not built",
                          hint="build it with `pip install .` or use KENNING_KERNELS=numpy")
    if core is not None and all(hasattr(core, name) for name in _FUNCTIONS):
        return {name: getattr(core, name) for name in _FUNCTIONS}
    # the twin covers whatever the core lacks, so a partial core still works
    from kenning.kernels import _numpy

    return {name: getattr(core, name, None) or getattr(_numpy, name) for name in _FUNCTIONS}


class Kernels:
    """All kernels of one backend, behind argument checks shared by both backends."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self._impl = _implementations(backend)

    def binarize(self, x: np.ndarray, center: np.ndarray | None = None) -> np.ndarray:
        """Sign bits of ``x - center`` (bit = 1 where > 0): float32[n, d] -> uint8[n, ceil(d/8)],
        packed MSB-first like ``np.packbits``. NaN is a ValueError."""
        return self._impl["binarize"](*_checks.binarize_args(x, center))

    def quantize_int8(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-row symmetric int8: ``x ~= q * scale`` with ``scale = max|row| / 127``
        (0 for an all-zero row), q rounded half to even. Returns (int8[n, d], float32[n])."""
        return self._impl["quantize_int8"](_checks.array(x, "x", np.float32, 2))

    def rescore(self, query: np.ndarray, rows: np.ndarray, scales: np.ndarray) -> np.ndarray:
        """Dot products of float32[d] ``query`` with dequantized int8 ``rows``: float32[m]."""
        return self._impl["rescore"](*_checks.rescore_args(query, rows, scales))

    def hamming_topk(
        self, queries: np.ndarray, db: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact k nearest rows of ``db`` by Hamming distance for each query.

        ``allowed`` is a bool mask over db rows or an array of row ids; it applies inside the
        scan, so each query gets ``min(k, allowed rows)`` hits. Returns (int64[q, k'],
        uint32[q, k']) by ascending distance, ties broken by the lower row index.
        """
        queries, db, k, mask, ids = _checks.topk_args(queries, db, k, allowed)
        return self._impl["hamming_topk"](queries, db, k, mask, ids)

    def hash_many(self, items: Iterable[bytes | str]) -> list[bytes]:
        """16-byte BLAKE3 digests of each item (str is hashed as UTF-8), one call per batch."""
        if isinstance(items, (bytes, str)):
            raise TypeError("hash_many takes a sequence of bytes or str, not a single item")
        return self._impl["hash_many"](items if isinstance(items, list) else list(items))

    def hash_files(self, root: str | os.PathLike[str], paths: Iterable[str],
                   max_file_size: int) -> list[bytes | None]:
        """16-byte BLAKE3 digests of the files at the relative POSIX ``paths`` under ``root``,
        each read as ``kenning.safe_read`` reads (no symlink on the way, a regular file, at most
        ``max_file_size`` bytes); None where refused or unreadable."""
        if isinstance(paths, (bytes, str)):
            raise TypeError("hash_files takes a sequence of paths, not a single path")
        rels = list(paths)
        for i, rel in enumerate(rels):
            if not isinstance(rel, str):
                raise TypeError(f"hash_files paths must be str, got {type(rel).__name__} at "
                                f"index {i}")
        return self._impl["hash_files"](os.fsdecode(os.fspath(root)), rels,
                                        max_file_size=max_file_size)

    def diff(
        self, old: Mapping[str, bytes], new: Mapping[str, bytes]
    ) -> tuple[list[str], list[str], list[str], list[str]]:
        """Compare two manifests (key -> digest): (unchanged, changed, added, removed) keys.
        The first three follow ``new``'s order, ``removed`` follows ``old``'s."""
        return self._impl["diff"](_manifest(old, "old"), _manifest(new, "new"))


def _manifest(value: Any, name: str) -> dict[str, bytes]:
    if isinstance(value, dict):
        return value
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"diff {name} must be a mapping of key -> digest, got {type(value).__name__}")


@cache
def for_backend(backend: str) -> Kernels:
    """The kernels of one backend ("rust" or "numpy"), whatever KENNING_KERNELS says."""
    if backend not in ("rust", "numpy"):
        raise ConfigError(f"unknown kernel backend {backend!r}", hint="use rust or numpy")
    return Kernels(backend)


def _selected_backend() -> str:
    forced = os.environ.get("KENNING_KERNELS", "").strip().lower()
    if forced in ("rust", "numpy"):
        return forced
    if forced:
        raise ConfigError(f"KENNING_KERNELS={forced!r} is not a kernel backend",
                          hint="set it to rust or numpy, or unset it")
    return "rust" if _rust_core() is not None else "numpy"


BACKEND: str = _selected_backend()
_live = for_backend(BACKEND)

binarize = _live.binarize
quantize_int8 = _live.quantize_int8
rescore = _live.rescore
hamming_topk = _live.hamming_topk
hash_many = _live.hash_many
hash_files = _live.hash_files
diff = _live.diff

