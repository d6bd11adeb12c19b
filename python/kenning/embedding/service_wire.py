"""What the embedding service and its clients agree on: where the service listens, who may
talk to it, and the messages they exchange (``service`` is the server, ``service_client``
the client).

A service is named by the identity of the code and the model file that make its vectors
(``identity``): a client of another install, model file or runtime choice finds another socket,
and a service answers only requests that name its own identity, so a client never gets vectors
that its own process would not have made. Its files are in ``$KENNING_HOME/run`` (mode 0700):
``embed-<id>.sock`` (mode 0600), ``embed-<id>.lock`` (held by the live service, with its pid)
and ``embed-<id>.log`` (what its services said on stderr: a failure to start, a refusal).

One request per connection. A message is a 4-byte big-endian length, that many bytes of a JSON
header (ASCII: any Python string survives it, lone surrogates included), then ``bytes`` bytes
of payload, the vectors of an answer as little-endian float32 rows::

    {"kenning": 1, "identity": {...}, "op": "embed", "kind": "query" | "documents",
     "texts": [...]}                                  -> {"ok": true, "rows", "dims", "bytes"}
    {"kenning": 1, "identity": {...}, "op": "status"} -> {"ok": true, "status": {...}}
    anything refused                                  -> {"ok": false, "error", "message"}
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import stat
import struct
import sys
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

PROTOCOL = 1
MAX_PART = 1 << 30  # of a header or a payload: far above any batch the indexer sends
_LENGTH = struct.Struct(">I")
# sun_path holds 104 bytes on macOS, 108 on Linux, the final NUL included
MAX_SOCKET_PATH = 103


class Unsafe(Exception):
    """A path of the service that another user could control; the message is one sentence."""


@cache
def _code_stamp() -> str:
    """The install that makes the vectors: the package's place and the size and time of each
    file of the embedding code (a reinstall, an upgrade or an edit gives another)."""
    here = Path(__file__).parent
    files = sorted((entry.name, entry.stat().st_size, entry.stat().st_mtime_ns)
                   for entry in os.scandir(here) if entry.name.endswith(".py"))
    digest = hashlib.blake2b(json.dumps([str(here), sys.version, files]).encode(),
                             digest_size=16)
    return digest.hexdigest()


def identity() -> dict[str, str]:
    """What decides the local model's bits in this process, read without loading anything:
    the model file's pinned sha256, the runtime asked for (``KENNING_RUNTIME``; empty: the
    fastest that loads) and the code."""
    from kenning.embedding import local

    return {"protocol": str(PROTOCOL), "weights": local.MODEL_SHA256,
            "runtime": local.runtime_choice() or "", "code": _code_stamp()}


@dataclass(frozen=True)
class Place:
    socket: Path
    lock: Path
    log: Path

    @property
    def folder(self) -> Path:
        return self.socket.parent

    def usable(self) -> bool:
        """Whether the socket's path fits a Unix socket address."""
        return len(os.fsencode(self.socket)) <= MAX_SOCKET_PATH


def place(of: dict[str, str]) -> Place:
    """The files of the service of identity ``of`` in this ``KENNING_HOME``."""
    from kenning.project import kenning_home

    name = "embed-" + hashlib.blake2b(json.dumps(of, sort_keys=True).encode(),
                                      digest_size=6).hexdigest()
    folder = kenning_home() / "run"
    return Place(folder / f"{name}.sock", folder / f"{name}.lock", folder / f"{name}.log")


def check_private(path: Path, *, folder: bool) -> None:
    """Raise ``Unsafe`` unless ``path`` itself (never a symlink's target) is a folder (or a
    socket) of this user that no one else may open; FileNotFoundError when it is missing."""
    found = os.lstat(path)
    what = "folder" if folder else "socket"
    right_type = stat.S_ISDIR(found.st_mode) if folder else stat.S_ISSOCK(found.st_mode)
    if not right_type:
        raise Unsafe(f"The embedding service's {what} {path} is "
                     f"{'a symlink' if stat.S_ISLNK(found.st_mode) else f'not a {what}'}, so "
                     "kenning does not use it and loads the model in this process.")
    if found.st_uid != os.getuid() or found.st_mode & 0o077:
        raise Unsafe(f"The embedding service's {what} {path} is owned by uid {found.st_uid} "
                     f"with mode {stat.S_IMODE(found.st_mode):o}, not private to this user, so "
                     "kenning does not use it and loads the model in this process.")


def peer(sock: socket.socket) -> tuple[int, int | None]:
    """The uid and (where the system tells) the pid of the process at the other end of a Unix
    socket: SO_PEERCRED on Linux, LOCAL_PEERCRED and LOCAL_PEERPID on macOS."""
    if hasattr(socket, "SO_PEERCRED"):
        # struct ucred: pid_t, uid_t, gid_t
        pid, uid, _ = struct.unpack("=iII", sock.getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("=iII")))
        return uid, pid
    level = getattr(socket, "SOL_LOCAL", 0)
    # struct xucred: cr_version (u_int), cr_uid (uid_t), then the groups
    raw = sock.getsockopt(level, getattr(socket, "LOCAL_PEERCRED", 1), 76)
    _, uid = struct.unpack_from("=II", raw)
    try:
        (pid,) = struct.unpack("=i", sock.getsockopt(level, getattr(socket, "LOCAL_PEERPID", 2),
                                                     4))
    except OSError:
        return uid, None
    return uid, pid


def _timeout(until: float) -> float | None:
    if math.isinf(until):
        return None
    left = until - time.monotonic()
    if left <= 0:
        raise TimeoutError("the deadline passed")
    return left


def send(sock: socket.socket, header: dict[str, Any], payload: bytes = b"", *,
         until: float = math.inf) -> None:
    """One message; ``until`` (a ``time.monotonic`` instant) bounds the whole of it."""
    data = json.dumps({**header, "bytes": len(payload)}).encode("ascii")
    sock.settimeout(_timeout(until))
    sock.sendall(_LENGTH.pack(len(data)) + data)
    if payload:
        view = memoryview(payload)
        while view:  # sendall's timeout is per call: check the instant between parts
            sock.settimeout(_timeout(until))
            sent = sock.send(view[: 1 << 20])
            view = view[sent:]


def _exactly(sock: socket.socket, size: int, until: float) -> bytearray:
    data = bytearray(size)
    view = memoryview(data)
    while view:
        sock.settimeout(_timeout(until))
        got = sock.recv_into(view)
        if not got:
            raise ConnectionError("the other end closed the connection")
        view = view[got:]
    return data


def receive(sock: socket.socket, *, until: float = math.inf) -> tuple[dict[str, Any], bytearray]:
    """One message: its header and its payload (writable, for arrays over it)."""
    (length,) = _LENGTH.unpack(_exactly(sock, _LENGTH.size, until))
    if length > MAX_PART:
        raise ValueError(f"a message header of {length} bytes")
    header = json.loads(_exactly(sock, length, until))
    if not isinstance(header, dict):
        raise ValueError("a message header that is not a JSON object")
    size = header.get("bytes", 0)
    if not isinstance(size, int) or not 0 <= size <= MAX_PART:
        raise ValueError(f"a payload of {size!r} bytes")
    return header, _exactly(sock, size, until)
