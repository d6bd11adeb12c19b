"""What kenning asks of the operating system that POSIX and Windows answer differently: whether
a process runs and when it started, ending one at once, starting one that outlives its parent,
whether the embedding service can run, the user's config and data folders, how a path
compares, and making a folder's names durable. The rest of the package asks here and never
branches on the system itself, but for project reads: ``safe_read`` reads them through the
Rust core's handles where ``WINDOWS`` says so.

On Windows a process is looked at through a handle (``OpenProcess``): ``os.kill(pid, 0)``
would end it there, not probe it. The embedding service admits only this user's processes, by
the uid the kernel gives of a Unix socket's peer; Windows gives none (and CPython offers no
``AF_UNIX`` there), and a TCP port would admit every local user, so there every process loads
the local model itself (``NO_SERVICE``).
"""

from __future__ import annotations

import ntpath
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from platformdirs.api import PlatformDirsABC

WINDOWS = sys.platform == "win32"

# Why this system runs no embedding service (None where it does): see the module's docstring.
NO_SERVICE = ("On Windows each kenning process loads the local model itself: the embedding "
              "service admits only its user's processes through a Unix socket, which Python "
              "does not offer there." if WINDOWS else None)

# The largest pid Linux hands out (macOS and the BSDs stay below it); Windows' are DWORDs.
PID_MAX = (1 << 32) - 1 if WINDOWS else 1 << 22

# What ``Popen.returncode`` says of a process ended by ``kill_now``: the signal's number,
# negated, on POSIX; the exit code TerminateProcess was given on Windows.
KILLED = 9 if WINDOWS else -9


if sys.platform == "win32":
    import ctypes
    import subprocess
    from ctypes import wintypes

    # Popen's flags for a process that outlives this one: a process group of its own (no
    # Ctrl+C of this console reaches it) and no console (closing this one does not end it).
    DETACHED = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP

    _kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    _kernel32.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
    _kernel32.OpenProcess.restype = wintypes.HANDLE
    _kernel32.GetExitCodeProcess.argtypes = (wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD))
    _kernel32.GetExitCodeProcess.restype = wintypes.BOOL
    _kernel32.GetProcessTimes.argtypes = (wintypes.HANDLE,
                                          *[ctypes.POINTER(wintypes.FILETIME)] * 4)
    _kernel32.GetProcessTimes.restype = wintypes.BOOL
    _kernel32.CloseHandle.argtypes = (wintypes.HANDLE,)
    _kernel32.CloseHandle.restype = wintypes.BOOL
    _QUERY = 0x1000  # PROCESS_QUERY_LIMITED_INFORMATION: granted for other users' processes too
    _ACCESS_DENIED = 5
    _STILL_ACTIVE = 259

    def _handle(pid: int) -> int | None:
        """A query handle of process ``pid``; None when there is none (or no access)."""
        handle: int | None = _kernel32.OpenProcess(_QUERY, False, pid)
        return handle or None

    def alive(pid: int) -> bool:
        """Whether process ``pid`` runs (an exited one stays openable while a handle to it is
        open, so its exit code decides)."""
        if not 0 < pid <= PID_MAX:
            return False
        handle = _handle(pid)
        if handle is None:  # no such process, or a protected one that exists
            return ctypes.get_last_error() == _ACCESS_DENIED
        try:
            code = wintypes.DWORD()
            if not _kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
                return True
            return code.value == _STILL_ACTIVE
        finally:
            _kernel32.CloseHandle(handle)

    def started(pid: int) -> int | None:
        """When process ``pid`` was created, in 100 ns since 1601 (a FILETIME), or None."""
        if not 0 < pid <= PID_MAX or (handle := _handle(pid)) is None:
            return None
        try:
            times = [wintypes.FILETIME() for _ in range(4)]
            if not _kernel32.GetProcessTimes(handle, *map(ctypes.byref, times)):
                return None
            return (times[0].dwHighDateTime << 32) | times[0].dwLowDateTime
        finally:
            _kernel32.CloseHandle(handle)

    def kill_now(pid: int) -> None:
        """End process ``pid`` at once, with no handler of its own run: TerminateProcess (which
        ``os.kill`` calls for any signal but the console's two), exit code ``KILLED``."""
        os.kill(pid, KILLED)

    def sync_folder(directory: Path) -> None:
        """Nothing: Windows opens no folder for ``os.fsync`` (``os.open`` refuses one), and
        NTFS journals the names a folder holds."""

else:
    DETACHED = 0  # POSIX detaches a child by a session of its own (``start_new_session``)

    def sync_folder(directory: Path) -> None:
        """Make the names in ``directory`` durable (a file created or renamed in it)."""
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def alive(pid: int) -> bool:
        """Whether process ``pid`` runs (another user's too)."""
        if not 0 < pid < PID_MAX:  # 0 and -1 name process groups; a huge pid is no process
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # it exists, owned by someone else
            pass
        return True

    def started(pid: int) -> int | None:
        """When process ``pid`` started (clock ticks since boot on Linux, microseconds since
        1970 on macOS), or None where the system does not say."""
        if sys.platform == "darwin":
            return _darwin_started(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            return None
        return proc_start_time(stat)

    def _darwin_started(pid: int) -> int | None:
        """``p_starttime`` of the ``kinfo_proc`` that sysctl gives of ``pid``: the struct's
        first member (a union in ``extern_proc``), a timeval of 64-bit seconds and 32-bit
        microseconds."""
        import ctypes
        import struct

        if not 0 < pid < PID_MAX:
            return None
        libc = ctypes.CDLL(None, use_errno=True)
        mib = (ctypes.c_int * 4)(1, 14, 1, pid)  # CTL_KERN, KERN_PROC, KERN_PROC_PID
        size = ctypes.c_size_t(1024)  # sizeof(struct kinfo_proc) is 648; more is accepted
        info = ctypes.create_string_buffer(size.value)
        if libc.sysctl(mib, ctypes.c_uint(4), info, ctypes.byref(size), None,
                       ctypes.c_size_t(0)) != 0 or size.value < 16:
            return None  # no such process (sysctl then gives no struct)
        seconds, micros = struct.unpack_from("=qi", info.raw)
        return int(seconds) * 1_000_000 + int(micros)

    def kill_now(pid: int) -> None:
        """End process ``pid`` at once, with no handler of its own run (SIGKILL)."""
        os.kill(pid, signal.SIGKILL)


def proc_start_time(stat: bytes) -> int | None:
    """The start time in a Linux ``/proc/<pid>/stat`` line (field 22 of proc(5))."""
    fields = stat[stat.rfind(b")") + 2:].split()  # after the command name, which may hold ")"
    try:
        return int(fields[19])  # the name and the pid come before
    except (IndexError, ValueError):
        return None


# -- folders ----------------------------------------------------------------------------------


def folders(system: type[PlatformDirsABC] | None = None) -> tuple[Path, Path]:
    """The user's config folder and data folder for kenning: ``~/.config/kenning`` and
    ``~/.local/share/kenning`` on Linux, ``~/Library/Application Support/kenning`` on macOS,
    ``%APPDATA%\\kenning`` (roaming: a few settings that follow the user) and
    ``%LOCALAPPDATA%\\kenning`` (indexes and the model: large, of this machine) on Windows, with
    no author folder above them. ``system``: platformdirs' class of the system to answer for
    (this one's by default)."""
    if system is None:
        from platformdirs import PlatformDirs

        system = PlatformDirs
    config = system("kenning", appauthor=False, roaming=True).user_config_dir
    data = system("kenning", appauthor=False, roaming=False).user_data_dir
    return Path(config), Path(data)


# -- paths ------------------------------------------------------------------------------------


def plain_windows_path(path: str) -> str:
    """A Windows path with backslashes and without the ``\\\\?\\`` prefix of a long path
    (``\\\\?\\UNC\\server\\share`` is ``\\\\server\\share``), which names the same file."""
    path = path.replace("/", "\\")
    if path[:8].upper() == "\\\\?\\UNC\\":
        return "\\\\" + path[8:]
    return path[4:] if path.startswith("\\\\?\\") else path


def windows_path_key(path: str) -> str:
    """A Windows path as it compares: ``plain_windows_path`` with its case folded, as NTFS
    and FAT compare names."""
    return ntpath.normcase(plain_windows_path(path))


def path_key(path: str) -> str:
    """``path`` as this system compares paths: as it is on POSIX, where case matters."""
    return windows_path_key(path) if WINDOWS else path
