"""The fixed-width, append-only vector files of an index (layout in ``schema.sql``).

Row ``i`` of every file belongs to vector id ``i``. The database holds how many rows are
committed (``meta.vector_rows``): the writer appends and fsyncs rows *before* the transaction
that counts them commits, and cuts any longer tail (a crash's leftovers) when it opens, so a
reader that maps only the committed rows never sees a half-written one.

Compaction never rewrites files in place: it writes the live rows to files of the next epoch
(``meta.vector_epoch``), commits the new ids and epoch, then unlinks the old files. A reader
that mapped them keeps its view; one that read the old epoch but had not mapped yet retries.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kenning import hostos
from kenning.errors import IndexError_
from kenning.store.db import damaged

BITS, INT8, SCALE, CENTER = "vectors.bits", "vectors.int8", "vectors.scale", "center.f32"
_EPOCH_FILE = re.compile(r"^vectors\.(?:(\d+)\.)?(?:bits|int8|scale)$")


def names(epoch: int = 0) -> tuple[str, str, str]:
    """(bits, int8, scale) file names of an epoch; epoch 0 keeps the plain names."""
    if epoch == 0:
        return BITS, INT8, SCALE
    return f"vectors.{epoch}.bits", f"vectors.{epoch}.int8", f"vectors.{epoch}.scale"


def _widths(dims: int, epoch: int = 0) -> dict[str, int]:
    """Bytes per row of each file."""
    bits, int8, scale = names(epoch)
    return {bits: (dims + 7) // 8, int8: dims, scale: 4}


@dataclass(frozen=True)
class VectorRows:
    bits: np.ndarray  # uint8[n, dims/8]
    int8: np.ndarray  # int8[n, dims]
    scales: np.ndarray  # float32[n]


def _write_error(directory: Path, exc: OSError) -> IndexError_:
    return IndexError_(f"Cannot write the vector files in {directory}: {exc.strerror or exc}.",
                       hint="Free some disk space, then run `kenning index` again to resume.")


def _write_rows(directory: Path, arrays: dict[str, np.ndarray], offsets: dict[str, int]) -> None:
    """Write each array at its byte offset and fsync it."""
    try:
        for name, array in arrays.items():
            path = directory / name
            with path.open("r+b" if path.exists() else "w+b") as fh:
                fh.seek(offsets[name])
                fh.write(array.tobytes())
                fh.flush()
                os.fsync(fh.fileno())
    except OSError as exc:
        raise _write_error(directory, exc) from exc


class VectorWriter:
    """Appends rows; only the process holding the index lock may create one."""

    def __init__(self, directory: Path, dims: int, committed_rows: int, epoch: int = 0) -> None:
        self.directory, self.dims, self.rows, self.epoch = directory, dims, committed_rows, epoch
        problem = size_problem(directory, dims, committed_rows, epoch)
        if problem:  # never padded: rows that were committed and are gone are corruption
            raise damaged(directory, problem)
        try:
            for name, width in _widths(dims, epoch).items():
                with (directory / name).open("ab") as fh:
                    if fh.tell() != committed_rows * width:
                        fh.truncate(committed_rows * width)  # drop uncommitted tail bytes
            for stale in directory.iterdir():  # other epochs: a compaction's leftovers
                match = _EPOCH_FILE.match(stale.name)
                if match and int(match.group(1) or 0) != epoch:
                    stale.unlink(missing_ok=True)
        except OSError as exc:
            raise _write_error(directory, exc) from exc

    def _arrays(self, epoch: int, bits: np.ndarray, int8: np.ndarray,
                scales: np.ndarray) -> dict[str, np.ndarray]:
        b, i, s = names(epoch)
        return {b: np.ascontiguousarray(bits, np.uint8), i: np.ascontiguousarray(int8, np.int8),
                s: np.ascontiguousarray(scales, np.float32)}

    def append(self, bits: np.ndarray, int8: np.ndarray, scales: np.ndarray) -> range:
        """Write and fsync rows; returns their ids. They count only once the caller commits."""
        widths = _widths(self.dims, self.epoch)
        _write_rows(self.directory, self._arrays(self.epoch, bits, int8, scales),
                    {name: self.rows * width for name, width in widths.items()})
        ids = range(self.rows, self.rows + len(scales))
        self.rows += len(scales)
        return ids

    def write_epoch(self, keep: np.ndarray) -> int:
        """Copy the rows ``keep`` (in that order) to fresh files of the next epoch, durably;
        returns that epoch. Nothing refers to them until the caller commits it."""
        epoch = self.epoch + 1
        old = read_rows(self.directory, self.dims, self.rows, self.epoch)
        for name in names(epoch):
            (self.directory / name).unlink(missing_ok=True)
        _write_rows(self.directory,
                    self._arrays(epoch, old.bits[keep], old.int8[keep], old.scales[keep]),
                    dict.fromkeys(names(epoch), 0))
        hostos.sync_folder(self.directory)
        return epoch

    def switch_epoch(self, epoch: int, rows: int) -> None:
        """After the commit: write to the new epoch and drop the old files (mapped views of
        them stay valid until closed)."""
        old = self.epoch
        self.epoch, self.rows = epoch, rows
        for name in names(old):
            (self.directory / name).unlink(missing_ok=True)

    def write_center(self, center: np.ndarray) -> None:
        """Store the centring vector once, durably, before any row that depends on it commits."""
        tmp = self.directory / (CENTER + ".tmp")
        try:
            with tmp.open("wb") as fh:
                fh.write(np.ascontiguousarray(center, np.float32).tobytes())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.directory / CENTER)
            hostos.sync_folder(self.directory)
        except OSError as exc:
            raise _write_error(self.directory, exc) from exc


def size_problem(directory: Path, dims: int, rows: int, epoch: int = 0) -> str | None:
    """Why the files of ``epoch`` cannot hold ``rows`` committed rows (None: they can)."""
    if rows == 0:
        return None
    for name, width in _widths(dims, epoch).items():
        try:
            size = (directory / name).stat().st_size
        except FileNotFoundError:
            return f"{name} is missing ({rows} vector rows are committed)"
        if size < rows * width:
            return (f"{name} holds {size // width} vector rows, {rows} are committed "
                    "(the file was cut short)")
    return None


def readable_rows(directory: Path, dims: int, epoch: int = 0) -> int:
    """Whole rows present in every file of ``epoch`` (0 if one is missing)."""
    try:
        return min((directory / name).stat().st_size // width
                   for name, width in _widths(dims, epoch).items())
    except FileNotFoundError:
        return 0


def read_rows(directory: Path, dims: int, rows: int, epoch: int = 0) -> VectorRows:
    """Read-only memory maps of the first ``rows`` (committed) rows of an epoch's files."""
    bits, int8, scale = names(epoch)

    def view(name: str, dtype: type, shape: tuple[int, ...]) -> np.ndarray:
        if rows == 0:  # mmap cannot map zero bytes
            empty: np.ndarray = np.zeros(shape, dtype)
            empty.flags.writeable = False
            return empty
        return np.memmap(directory / name, dtype=dtype, mode="r", shape=shape)

    return VectorRows(bits=view(bits, np.uint8, (rows, (dims + 7) // 8)),
                      int8=view(int8, np.int8, (rows, dims)),
                      scales=view(scale, np.float32, (rows,)))


def read_center(directory: Path, dims: int) -> np.ndarray | None:
    path = directory / CENTER
    if not path.exists():
        return None
    center = np.fromfile(path, dtype=np.float32)
    return center if center.shape == (dims,) else None
