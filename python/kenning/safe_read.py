"""Reads of project files that never leave the project and only read regular files.

Every read of a file inside a project (a source file when it is indexed, an ignore file, a
snippet for a search result or a chunk) goes through here. A path is opened one component at a
time from a descriptor of the root, each folder with ``O_NOFOLLOW | O_DIRECTORY`` and the file
with ``O_NOFOLLOW | O_NONBLOCK``, so a symlink anywhere in the path is refused (even one swapped
in after the walk saw a plain file) and a FIFO never blocks; ``fstat`` on the opened descriptor
must then say "regular file", and at most ``limit`` bytes are read from it, so a link to
``/dev/zero`` or a file that grows after its size was checked cannot exhaust memory. The Rust
walk does the same in ``rust/src/walk.rs``.

On Windows (``hostos.WINDOWS``) the same promise is kept on NT handles by the Rust core
(``rust/src/platform/windows.rs``): each component is opened relative to its parent's handle
as itself, and refused if it is a reparse point (a symlink, junction or mount point), so
``read``, ``heads`` and ``names`` go through ``kenning._core`` there. The descriptor functions
(``root_dir``, ``open_dir_at``, ``read_at``), which only the NumPy twin of the walk uses, are
POSIX's alone: on Windows the walk runs in the Rust core.

The root itself is opened as given: it is the folder the user chose (and the walk resolves it).
"""

from __future__ import annotations

import errno
import importlib
import itertools
import os
import stat
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from types import ModuleType
from typing import NamedTuple

from kenning import hostos
from kenning.errors import ConfigError

# Whether project files are read through the Rust core's handles (see the module docstring).
BY_HANDLES = hostos.WINDOWS
if not BY_HANDLES:  # Windows has none of these flags
    _DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    _FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    # What opening a symlink with O_NOFOLLOW gives: ELOOP (Linux, macOS), EMLINK (FreeBSD).
    _LINK_ERRORS = (errno.ELOOP, errno.EMLINK)

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
# Reads of ``heads`` in flight: a disk that has not cached the files answers several at once
# (the heads of 3,000 uncached files: 2.4 s one by one, 0.7 s on 8 threads).
HEAD_THREADS = 8
_HEADS_PER_TASK = 64  # files of one folder a thread reads in a row


class Refused(Exception):
    """A project file that is not read; ``reason`` is the walk's name for why: ``symlink``,
    ``special`` (a FIFO, socket or device), ``too_large`` or ``unreadable``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Stamp(NamedTuple):
    """What a file read was read at: the size and mtime (ns) of the file opened, as the walk
    records them."""

    size: int
    mtime_ns: int


def mtime_ns(st: os.stat_result) -> int:
    """The modification time in ns as a 64-bit integer, clamped as the Rust walk does: a file
    dated after 2262 or long before 1970 keeps a stable stamp instead of overflowing."""
    return min(max(st.st_mtime_ns, I64_MIN), I64_MAX)


def open_dir_at(dir_fd: int, name: str) -> int:
    """A descriptor of the folder ``name`` inside ``dir_fd``; Refused if it is a symlink."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise Refused("symlink" if exc.errno in _LINK_ERRORS or _is_link(dir_fd, name)
                      else "unreadable") from None


def _is_link(dir_fd: int, name: str) -> bool:
    """Whether ``name`` is a symlink (Linux refuses one with O_DIRECTORY as ENOTDIR)."""
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def read_at(dir_fd: int, name: str, limit: int, *, head: int | None = None
            ) -> tuple[bytes, os.stat_result]:
    """The content of the regular file ``name`` in ``dir_fd`` (only its first ``head`` bytes
    when given) and its stat; Refused when it is no regular file or longer than ``limit``."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise Refused("symlink" if exc.errno in _LINK_ERRORS else "unreadable") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused("special")
        if st.st_size > limit:
            raise Refused("too_large")
        want = limit + 1 if head is None else min(head, limit + 1)
        data = _read_up_to(fd, want)
    except OSError:
        raise Refused("unreadable") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Refused("too_large")  # it grew after the size check
    return data, st


def _read_up_to(fd: int, want: int) -> bytes:
    parts = []
    while want > 0 and (part := os.read(fd, min(want, 1 << 20))):
        parts.append(part)
        want -= len(part)
    return b"".join(parts)


@contextmanager
def root_dir(root: str | os.PathLike[str]) -> Iterator[int]:
    """A descriptor of the project root, closed on exit; Refused if it cannot be opened."""
    if BY_HANDLES:
        raise ConfigError("The NumPy twin of the walk reads through POSIX descriptors, which "
                          "this system does not have.",
                          hint="Unset KENNING_KERNELS: the walk runs in the Rust core here.")
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        raise Refused("unreadable") from None
    try:
        yield fd
    finally:
        os.close(fd)


def read(root: str | os.PathLike[str], rel: str, limit: int, *, head: int | None = None
         ) -> tuple[bytes, Stamp]:
    """``read_at`` for the relative POSIX path ``rel`` under ``root``, every folder on the way
    opened without following symlinks (or links of any kind, on handles)."""
    if BY_HANDLES:
        got = _core().read_file(os.fspath(root), rel, limit=limit, head=head)
        if isinstance(got, str):
            raise Refused(got)
        data, size, mtime = got
        return data, Stamp(size, mtime)
    *folders, name = rel.split("/")
    if name in ("", ".", ".."):
        raise Refused("unreadable")  # not a path the walk yields
    with _folder(root, folders) as fd:
        data, st = read_at(fd, name, limit, head=head)
        return data, Stamp(st.st_size, mtime_ns(st))


def names(root: str | os.PathLike[str], folder: str) -> frozenset[str]:
    """The names in the folder at the relative POSIX path ``folder`` under ``root`` (``""``:
    the root), every folder on the way opened as ``read`` opens them; empty where refused."""
    if BY_HANDLES:
        listed = _core().folder_names(os.fspath(root), folder)
        return frozenset(listed or ())
    try:
        with _folder(root, folder.split("/") if folder else []) as fd:
            return frozenset(os.listdir(fd))
    except (Refused, OSError):
        return frozenset()


def _core() -> ModuleType:
    """The Rust core, through which reads go on handles."""
    try:
        return importlib.import_module("kenning._core")
    except ImportError:
        raise ConfigError("kenning reads project files on this system through its Rust core, "
                          "which is not built.", hint="Install kenning with `pip install .` "
                          "(or a wheel) to build it.") from None


@contextmanager
def _folder(root: str | os.PathLike[str], folders: list[str]) -> Iterator[int]:
    """A descriptor of the folder ``folders`` names under ``root``, each opened without
    following symlinks; Refused if one cannot be."""
    if any(part in ("", ".", "..") for part in folders):
        raise Refused("unreadable")  # not a path the walk yields
    with root_dir(root) as fd:
        opened = []
        try:
            for folder in folders:
                fd = open_dir_at(fd, folder)
                opened.append(fd)
            yield fd
        finally:
            for inner in opened:
                os.close(inner)


def heads(root: str | os.PathLike[str], rels: Iterable[str], limit: int, size: int
          ) -> Iterator[bytes | Refused]:
    """The first ``size`` bytes of each file of ``rels`` as ``read`` reads them (or why it is
    Refused), in the order given. The files of one folder, consecutive in ``rels`` as a walk
    lists them, are read through one descriptor of it, and ``HEAD_THREADS`` such runs are read
    at once; at most a few runs are held ahead of the caller."""
    with ThreadPoolExecutor(HEAD_THREADS, thread_name_prefix="kenning-heads") as pool:
        ahead: deque[Future[list[bytes | Refused]]] = deque()
        for task in _by_folder(rels):
            ahead.append(pool.submit(_heads_in_folder, root, task, limit, size))
            if len(ahead) > 4 * HEAD_THREADS:
                yield from ahead.popleft().result()
        while ahead:
            yield from ahead.popleft().result()


def _by_folder(rels: Iterable[str]) -> Iterator[tuple[str, ...]]:
    """Consecutive paths of one folder, at most ``_HEADS_PER_TASK`` at a time."""
    for _, run in itertools.groupby(rels, key=lambda rel: rel.rpartition("/")[0]):
        while task := tuple(itertools.islice(run, _HEADS_PER_TASK)):
            yield task


def _heads_in_folder(root: str | os.PathLike[str], rels: tuple[str, ...], limit: int, size: int
                     ) -> list[bytes | Refused]:
    """``heads`` of files that share one folder."""
    if BY_HANDLES:  # each read opens its folders again: no descriptor to share
        return [_head(root, rel, limit, size) for rel in rels]
    files = [rel.rpartition("/")[2] for rel in rels]
    try:
        with _folder(root, rels[0].split("/")[:-1]) as fd:
            return [_head_at(fd, name, limit, size) for name in files]
    except Refused as refused:
        return [refused] * len(rels)


def _head_at(dir_fd: int, name: str, limit: int, size: int) -> bytes | Refused:
    try:
        if name in ("", ".", ".."):
            raise Refused("unreadable")
        return read_at(dir_fd, name, limit, head=size)[0]
    except Refused as refused:
        return refused


def _head(root: str | os.PathLike[str], rel: str, limit: int, size: int) -> bytes | Refused:
    try:
        return read(root, rel, limit, head=size)[0]
    except Refused as refused:
        return refused
