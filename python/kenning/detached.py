"""Processes that outlive the command that starts them: the background `kenning index` a
search leaves the vectors of a first index to, and the embedding service."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from kenning import hostos

# Windows (no posix_spawn): the children started, kept so that no Popen object
# is collected and warns that its child still runs, as it is meant to.
_children: list[subprocess.Popen[bytes]] = []


def spawn_detached(argv: Sequence[str], *, stdout: int | None = None,
                   stderr: Path | None = None) -> int:
    """Start ``argv`` in a session of its own, with no terminal (no signal of this one reaches
    it, and it outlives this process; on Windows a process group of its own with no console),
    and return its pid. Its stdin is /dev/null, and so are its stdout unless ``stdout`` names
    a descriptor of this process for it, and its stderr unless ``stderr`` names a file it
    appends to."""
    log_flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    if sys.platform != "win32":  # posix_spawn: no Popen object left to warn of its child
        actions: list[tuple[object, ...]] = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0)]
        actions.append((os.POSIX_SPAWN_DUP2, stdout, 1) if stdout is not None
                       else (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_RDWR, 0))
        actions.append((os.POSIX_SPAWN_OPEN, 2, str(stderr), log_flags, 0o600)
                       if stderr is not None
                       else (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_RDWR, 0))
        return os.posix_spawn(argv[0], list(argv), os.environ, file_actions=actions,
                              setsid=True)
    log = os.open(stderr, log_flags, 0o600) if stderr is not None else subprocess.DEVNULL
    try:
        child = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL if stdout is None else stdout,
                                 stderr=log, start_new_session=True,
                                 creationflags=hostos.DETACHED)
    finally:
        if stderr is not None:
            os.close(log)
    _children.append(child)
    return child.pid
