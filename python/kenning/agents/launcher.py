"""The command line an agent uses to start kenning.

Agents start MCP servers and hooks in their own environment, often without the virtualenv that
kenning is installed in, so a user's configuration names this kenning by absolute path: its
executable, or this interpreter with ``-m kenning`` where there is none. A project's files are
shared with a team, whose paths differ, so they name the bare ``kenning`` found on PATH.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from pathlib import Path

BARE = ("kenning",)
_EXECUTABLE = "kenning.exe" if os.name == "nt" else "kenning"


def _script_dirs() -> list[str]:
    """Where this interpreter's installers put executables (a user install's too, outside a
    virtualenv)."""
    dirs = [sysconfig.get_path("scripts")]
    if sys.prefix == sys.base_prefix:
        dirs.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    return dirs


def running(argv0: str | None = None, script_dirs: Iterable[str] | None = None,
            executable: str | None = None) -> tuple[str, ...]:
    """The absolute command line of the kenning that is running now."""
    started_as = Path(sys.argv[0] if argv0 is None else argv0)
    if started_as.name == _EXECUTABLE and started_as.is_file():
        return (os.path.abspath(started_as),)
    for folder in _script_dirs() if script_dirs is None else script_dirs:
        candidate = Path(folder, _EXECUTABLE)
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return (str(candidate),)
    return (executable or sys.executable, "-m", "kenning")


def is_kenning(argv: Sequence[str]) -> bool:
    """True for a command line kenning writes: the bare name, an absolute path to a kenning
    executable, or an absolute Python interpreter with ``-m kenning`` (any install's)."""
    argv = list(argv)
    if argv == list(BARE):
        return True
    if not argv or not os.path.isabs(argv[0]):
        return False
    name = Path(argv[0]).name
    if len(argv) == 1:
        return name in ("kenning", "kenning.exe")
    return argv[1:] == ["-m", "kenning"] and name.lower().startswith("python")
