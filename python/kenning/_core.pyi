"""The Rust core. Call it through ``kenning.kernels``, which checks arguments for both backends."""

import os

import numpy as np
import numpy.typing as npt

__all__ = [
    "binarize",
    "diff",
    "folder_names",
    "hamming_topk",
    "hash_files",
    "hash_many",
    "kernels",
    "quantize_int8",
    "read_file",
    "rescore",
    "walk",
    "walk_changes",
]

def binarize(
    x: npt.NDArray[np.float32],
    center: npt.NDArray[np.float32] | None = None,
    *,
    threads: int = 0,
) -> npt.NDArray[np.uint8]: ...
def quantize_int8(
    x: npt.NDArray[np.float32],
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]: ...
def rescore(
    query: npt.NDArray[np.float32], rows: npt.NDArray[np.int8], scales: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]: ...
def hamming_topk(
    queries: npt.NDArray[np.uint8],
    db: npt.NDArray[np.uint8],
    k: int,
    mask: npt.NDArray[np.bool_] | None = None,
    ids: npt.NDArray[np.int64] | None = None,
    *,
    threads: int = 0,
    kernel: str | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32]]:
    """``mask`` or sorted unique ``ids`` filter the scan; ``threads=0`` sizes the thread count
    to the scan; ``kernel`` names one of ``kernels()`` (default: the fastest)."""

def kernels() -> list[str]:
    """The popcount kernels this CPU can run, fastest first."""

def hash_many(items: list[bytes | str]) -> list[bytes]: ...
def hash_files(
    root: str | os.PathLike[str], paths: list[str], *, max_file_size: int
) -> list[bytes | None]: ...
def read_file(
    root: str | os.PathLike[str], rel: str, *, limit: int, head: int | None = None
) -> tuple[bytes, int, int] | str:
    """The file at the relative POSIX path ``rel`` under ``root`` as the walk reads one (no
    link at any component, a regular file, at most ``limit`` bytes; its first ``head`` bytes
    when given): (content, size, mtime_ns), or the walk's name for why it is refused."""

def folder_names(root: str | os.PathLike[str], rel: str) -> list[str] | None:
    """The names in the folder ``rel`` under ``root`` (``""``: the root), every folder on the
    way opened as ``read_file`` opens them; None where refused."""

def diff(
    old: dict[str, bytes], new: dict[str, bytes]
) -> tuple[list[str], list[str], list[str], list[str]]: ...
def walk(
    root: str | os.PathLike[str],
    *,
    ignore_file_limit: int,
    dirs: list[str],
    dir_suffixes: list[str],
    files: list[str],
    suffixes: list[str],
    env_markers: list[str],
) -> tuple[list[tuple[str, int, int]], dict[str, int], dict[str, int], list[str]]:
    """Candidate files of the tree at ``root``: (relative path, size, mtime_ns) sorted by path,
    skip counts by reason for files and for pruned folders, and the ignore files over
    ``ignore_file_limit`` bytes, sorted (not applied: the caller refuses). The keyword lists
    are the default excludes (folder names and suffixes, file names and suffixes, virtualenv
    markers)."""
def walk_changes(
    root: str | os.PathLike[str],
    known: bytes,
    *,
    max_file_size: int,
    ignore_file_limit: int,
    all: bool,
    dirs: list[str],
    dir_suffixes: list[str],
    files: list[str],
    suffixes: list[str],
    env_markers: list[str],
) -> tuple[
    list[tuple[str, int, int, bool]], list[str], int, dict[str, int], dict[str, int], list[str]
]:
    """The walk of ``root`` compared with ``known`` (``path\\0size\\0mtime_ns`` records joined by
    NUL): new and changed files no larger than ``max_file_size`` (every one with ``all``) as
    (path, size, mtime_ns, known before), known paths no longer found, the count of unchanged
    files, skip counts for files and for pruned folders, and the ignore files over
    ``ignore_file_limit`` bytes, as ``walk`` lists them."""
