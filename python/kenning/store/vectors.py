"""The fixed-width, append-only vector files of an index (layout in ``schema.sql``).

Row ``i`` of every file belongs to vector id ``i``. The database holds how many rows are
committed (``meta.vector_rows``): the writer appends and fsyncs rows *before* the transaction
that counts them commits, and cuts any longer tail (a crash's leftovers) when it opens, so a
reader that maps only the committed rows never sees a half-written one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kenning.errors import IndexError_

BITS, INT8, SCALE, CENTER = "vectors.bits", "vectors.int8", "vectors.scale", "center.f32"


def _widths(dims: int) -> dict[str, int]:
    """Bytes per row of each file."""
    return {BITS: (dims + 7) // 8, INT8: dims, SCALE: 4}


@dataclass(frozen=True)
class VectorRows:
    bits: np.ndarray  # uint8[n, dims/8]
    int8: np.ndarray  # int8[n, dims]
    scales: np.ndarray  # float32[n]


def _write_error(directory: Path, exc: OSError) -> IndexError_:
    return IndexError_(f"Cannot write the vector files in {directory}: {exc.strerror or exc}.",
                       hint="Free some disk space, then run `kenning index` again to resume.")


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class VectorWriter:
    """Appends rows; only the process holding the index lock may create one."""

    def __init__(self, directory: Path, dims: int, committed_rows: int) -> None:
        self.directory, self.dims, self.rows = directory, dims, committed_rows
        try:
            for name, width in _widths(dims).items():
                path = directory / name
                with path.open("ab") as fh:
                    if fh.tell() != committed_rows * width:
                        fh.truncate(committed_rows * width)  # drop uncommitted tail bytes
        except OSError as exc:
            raise _write_error(directory, exc) from exc

    def append(self, bits: np.ndarray, int8: np.ndarray, scales: np.ndarray) -> range:
        """Write and fsync rows; returns their ids. They count only once the caller commits."""
        n = len(scales)
        arrays: dict[str, np.ndarray] = {BITS: np.ascontiguousarray(bits, np.uint8),
                  INT8: np.ascontiguousarray(int8, np.int8),
                  SCALE: np.ascontiguousarray(scales, np.float32)}
        try:
            for name, array in arrays.items():
                width = _widths(self.dims)[name]
                with (self.directory / name).open("r+b") as fh:
                    fh.seek(self.rows * width)
                    fh.write(array.tobytes())
                    fh.flush()
                    os.fsync(fh.fileno())
        except OSError as exc:
            raise _write_error(self.directory, exc) from exc
        ids = range(self.rows, self.rows + n)
        self.rows += n
        return ids

    def write_center(self, center: np.ndarray) -> None:
        """Store the centring vector once, durably, before any row that depends on it commits."""
        tmp = self.directory / (CENTER + ".tmp")
        try:
            with tmp.open("wb") as fh:
                fh.write(np.ascontiguousarray(center, np.float32).tobytes())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.directory / CENTER)
            _fsync_dir(self.directory)
        except OSError as exc:
            raise _write_error(self.directory, exc) from exc


def read_rows(directory: Path, dims: int, rows: int) -> VectorRows:
    """Read-only memory maps of the first ``rows`` (committed) rows."""
    widths = _widths(dims)

    def view(name: str, dtype: type, shape: tuple[int, ...]) -> np.ndarray:
        if rows == 0:  # mmap cannot map zero bytes
            empty: np.ndarray = np.zeros(shape, dtype)
            empty.flags.writeable = False
            return empty
        return np.memmap(directory / name, dtype=dtype, mode="r", shape=shape)

    return VectorRows(bits=view(BITS, np.uint8, (rows, widths[BITS])),
                      int8=view(INT8, np.int8, (rows, dims)),
                      scales=view(SCALE, np.float32, (rows,)))


def read_center(directory: Path, dims: int) -> np.ndarray | None:
    path = directory / CENTER
    if not path.exists():
        return None
    center = np.fromfile(path, dtype=np.float32)
    return center if center.shape == (dims,) else None
