"""The embedded model's vectors from the embedding service (``service``), so that a CLI call
or an MCP server does not load the model itself (``embedder.service``, on by default).

``ServiceEmbedder`` stands in for a ``LocalEmbedder``: its ``embed_*`` ask the service of
this ``KENNING_HOME`` and identity, starting it when there is none, and fall back to the model
in this process when it cannot answer: it cannot be started (or its socket's path is too long),
its socket or folder is not private to this user (refused in one sentence, on stderr), it is of
another identity, or it died before answering (the next call starts a new one). Every wait
is bounded by the caller's deadline (``deadline``: a search's ``search.timeout``) and by
``embedder.timeout``: past the deadline the call fails as a hung embedder does, and a service
that left a request unanswered for ``embedder.timeout`` is ended (the next call starts a new
one) and the texts are embedded here.
"""

from __future__ import annotations

import logging
import math
import os
import select
import signal
import socket
import sys
import threading
import time
import unicodedata
from collections.abc import Sequence
from contextlib import suppress
from typing import Any, NamedTuple

import numpy as np

from kenning import hostos
from kenning.embedding import deadline
from kenning.embedding import service_wire as wire
from kenning.embedding.local import DIMS, LocalEmbedder
from kenning.errors import EmbedderUnavailable

log = logging.getLogger("kenning.embedding")

START_ATTEMPTS = 3  # services started by one call, when others are starting or ending too

_started: list[int] = []  # services this process started: reaped once they exit
_starting = threading.Lock()
_warned: set[str] = set()


def _reap() -> None:
    for pid in list(_started):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _started.remove(pid)


class _Unavailable(Exception):
    """The service cannot answer this call; the model runs here instead."""


class _Until(NamedTuple):
    """The instant a call must end by, and whether it is the caller's deadline (else
    ``embedder.timeout``'s)."""

    at: float
    deadline: bool


class ServiceEmbedder:
    """all-MiniLM-L6-v2 from the embedding service, or in this process when it cannot answer
    (see the module's docstring); its vectors are the same bits either way."""

    def __init__(self, local: LocalEmbedder, *, idle: float, timeout: float) -> None:
        self.local, self.idle, self.timeout = local, idle, timeout
        self.identity = wire.identity(local.runtime)
        self.place = wire.place(self.identity)

    # the model's facts come from the local embedder, which loads nothing for them
    @property
    def model(self) -> str:
        return self.local.model

    @property
    def dims(self) -> int:
        return self.local.dims

    @property
    def needs_centering(self) -> bool:
        return self.local.needs_centering

    @property
    def max_tokens(self) -> int:
        return self.local.max_tokens

    def descriptor(self) -> dict[str, object]:
        return self.local.descriptor()

    def count_tokens(self, text: str) -> int:
        return self.local.count_tokens(text)

    def at_most_tokens(self, text: str) -> int:
        """At least ``count_tokens(text)``, with no tokenizer loaded: each word piece covers a
        character or more of the text as the model's normaliser leaves it (decomposed,
        lower-cased, its accents dropped), so a short query costs this process no tokenizer."""
        return len(unicodedata.normalize("NFD", text).lower())

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        prefix = self.local.profile.document_prefix
        try:
            return self._embedded("documents", [prefix + t for t in texts])
        except _Unavailable:
            return self.local.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        try:
            found = self._embedded("query", [self.local.profile.query_prefix + text])
        except _Unavailable:
            return self.local.embed_query(text)
        vector: np.ndarray = found[0]
        return vector

    def check(self) -> None:
        try:
            self.status()
        except _Unavailable:
            self.local.check()

    def close(self) -> None:
        _reap()

    def start(self) -> None:
        """Make sure a service is up or on its way (for a search to call while it refreshes:
        the model then loads meanwhile); never raises."""
        with suppress(_Unavailable):
            self._connect(self._until()).close()

    def status(self) -> dict[str, Any]:
        """The service's report: its pid, what it served, its runtime and identity."""
        header, _ = self._ask({"op": "status"})
        found: dict[str, Any] = header["status"]
        return found

    # -- asking ------------------------------------------------------------------------------

    def _until(self) -> _Until:
        left = deadline.remaining()
        return _Until(time.monotonic() + min(left, self.timeout), left <= self.timeout)

    def _embedded(self, kind: str, texts: list[str]) -> np.ndarray:
        header, payload = self._ask({"op": "embed", "kind": kind, "texts": texts})
        rows, dims = header.get("rows"), header.get("dims")
        if rows != len(texts if kind == "documents" else [0]) or dims != DIMS \
                or len(payload) != rows * dims * 4:
            raise _Unavailable("an answer of another shape")
        return np.frombuffer(payload, dtype="<f4").reshape(rows, dims).astype(np.float32,
                                                                                copy=False)

    def _ask(self, request: dict[str, Any]) -> tuple[dict[str, Any], bytearray]:
        until = self._until()
        sock = self._connect(until)
        try:
            wire.send(sock, {"kenning": wire.PROTOCOL, "identity": self.identity, **request},
                      until=until.at)
            header, payload = wire.receive(sock, until=until.at)
        except TimeoutError:
            raise self._timed_out(sock, until) from None
        except (OSError, ValueError) as exc:  # killed mid-request: the next call starts one
            raise _Unavailable(str(exc)) from None
        finally:
            sock.close()
        if not header.get("ok"):
            raise _Unavailable(str(header.get("message")))
        return header, payload

    def _timed_out(self, sock: socket.socket, until: _Until) -> Exception:
        """Past the caller's deadline: fail as a hung embedder does. Past ``embedder.timeout``:
        end the service, hung (the peer of this socket, of this user: no other process can
        have its pid while the connection is open), and embed here."""
        if until.deadline:
            return EmbedderUnavailable(
                "The embedding service did not answer in time.",
                hint=f"Its log is {self.place.log}; `kenning config set embedder.service "
                "false` loads the model in each process instead.")
        uid, pid = wire.peer(sock)
        if uid == os.getuid() and pid:
            _warn(f"The embedding service (pid {pid}) did not answer within "
                  f"{self.timeout:g} s; kenning ended it and loads the model in this process.")
            hostos.kill_now(pid)
        return _Unavailable("hung")

    # -- connecting and starting ---------------------------------------------------------------

    def _connect(self, until: _Until) -> socket.socket:
        """A connection to the live service, started if there is none."""
        if not self.place.usable():
            raise _Unavailable("the socket's path is too long")
        for attempt in range(START_ATTEMPTS + 1):
            sock = self._connected(until.at)
            if sock is not None:
                return sock
            if attempt == START_ATTEMPTS:
                break
            if not self._start(until.at):
                # another service holds the lock: starting, or ending after its idle time
                pause = min(0.02 * 4 ** attempt, until.at - time.monotonic())
                if pause <= 0:
                    break
                time.sleep(pause)
        raise _Unavailable("the service did not start")

    def _connected(self, until: float) -> socket.socket | None:
        """A connection to the service's socket, or None when none listens there."""
        try:
            wire.check_private(self.place.folder, folder=True)
            wire.check_private(self.place.socket, folder=False)
        except FileNotFoundError:
            return None
        except wire.Unsafe as exc:
            _warn(str(exc))
            raise _Unavailable(str(exc)) from None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(max(0.001, until - time.monotonic()) if math.isfinite(until)
                            else None)
            sock.connect(str(self.place.socket))
            uid, _ = wire.peer(sock)
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()  # a killed service's socket: the next service replaces it
            return None
        except OSError as exc:
            sock.close()
            raise _Unavailable(str(exc)) from None
        if uid != os.getuid():
            sock.close()
            message = (f"The embedding service's socket {self.place.socket} is served by uid "
                       f"{uid}, so kenning does not use it and loads the model in this process.")
            _warn(message)
            raise _Unavailable(message)
        return sock

    def _start(self, until: float) -> bool:
        """Start a service and wait until it listens (not for its model); False when it
        exits first, another service holding the lock."""
        from kenning.detached import spawn_detached

        with _starting:
            _reap()
            if (sock := self._connected(until)) is not None:  # another thread started it
                sock.close()
                return True
            try:
                self.place.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                raise _Unavailable(str(exc)) from None
            ready, announce = os.pipe()
            try:
                _started.append(spawn_detached(
                    [sys.executable, "-m", "kenning.embedding.service", "--idle",
                     f"{self.idle:g}", "--runtime", self.local.runtime], stdout=announce,
                    stderr=self.place.log))
            except OSError as exc:
                os.close(ready)
                raise _Unavailable(str(exc)) from None
            finally:
                os.close(announce)
            try:
                while True:
                    left = until - time.monotonic()
                    if left <= 0 or not select.select([ready], [], [], left)[0]:
                        raise _Unavailable("the service did not start in time")
                    said = os.read(ready, 64)
                    if said.startswith(b"ready") or not said:
                        return bool(said)
            finally:
                os.close(ready)


def _warn(message: str) -> None:
    """Once per process: an MCP server would say it at every search otherwise."""
    if message not in _warned:
        _warned.add(message)
        log.warning(message)


def stop_services(wait: float = 10.0) -> list[int]:
    """End the embedding services of this ``KENNING_HOME`` (SIGTERM: each takes its socket's
    name away and finishes the answers under way, else SIGKILL after ``wait`` seconds) and
    return their pids (none on a system that runs none: ``hostos.NO_SERVICE``)."""
    if hostos.NO_SERVICE:
        return []
    import fcntl

    from kenning.project import kenning_home

    ended = []
    for lock in sorted((kenning_home() / "run").glob("embed-*.lock")):
        fd = os.open(lock, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                continue  # no live service holds it
            except BlockingIOError:
                pid = int(os.pread(fd, 32, 0).strip() or 0)
            if pid <= 0:
                continue
            os.kill(pid, signal.SIGTERM)
            ends = time.monotonic() + wait
            while True:  # the kernel lets go of the lock when the process has ended
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > ends:
                        hostos.kill_now(pid)
                        fcntl.flock(fd, fcntl.LOCK_EX)
                        break
                    time.sleep(0.01)
            ended.append(pid)
        finally:
            os.close(fd)
    _reap()
    return ended
