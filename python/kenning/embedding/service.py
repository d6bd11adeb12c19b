"""The embedding service: the embedded model loaded once per machine and user, for every CLI
call and MCP server of that user (``python -m kenning.embedding.service --idle SECONDS``).

The first client that needs the model and finds no service starts one (``service_client``);
it runs detached, one per ``KENNING_HOME`` and identity (``service_wire``), and exits after
``--idle`` seconds without a request. It takes its lock file before anything else, so of two
started at once one serves and the other exits; holding it, it replaces a socket left by a
service that was killed, binds its own with mode 0600 in a folder of mode 0700, writes
``ready`` on its stdout (the starting client waits for that, not for the model), loads the
model and serves. A connection from another user is closed unanswered (the peer's uid, from
the kernel). Vectors are made by ``LocalEmbedder`` as in any process, from the texts as the
client would embed them (prefixes applied), so they are the same bits.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import socketserver
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import replace
from typing import Any

import numpy as np

from kenning.embedding import service_wire as wire
from kenning.embedding.local import MODEL_NAME, LocalEmbedder, runtime_name, session
from kenning.embedding.profiles import profile_for
from kenning.errors import KenningError

READ_REQUEST_SECONDS = 30.0  # a client stalled halfway through its request is dropped


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = False  # closing waits for the answers under way
    request_queue_size = 128  # clients wait in the backlog while the model loads

    def __init__(self, place: wire.Place, identity: dict[str, str]) -> None:
        self.place, self.identity = place, identity
        # the texts arrive with their prefixes: the model embeds them as they are
        self.embedder = LocalEmbedder(replace(profile_for(MODEL_NAME), query_prefix="",
                                              document_prefix=""))
        self.started = time.time()
        self.changed = threading.Lock()
        self.busy = 0
        self.last_seen = time.monotonic()
        self.served = {"query": 0, "documents": 0, "texts": 0, "refused": 0}
        super().__init__(str(place.socket), Handler)

    def server_bind(self) -> None:
        mask = os.umask(0o177)  # the socket is made 0600; no moment with more
        try:
            super().server_bind()
        finally:
            os.umask(mask)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        try:
            uid, _ = wire.peer(request)
        except OSError:
            return False
        if uid == os.getuid():
            return True
        with self.changed:
            self.served["refused"] += 1
        print(f"kenning: refused a connection from uid {uid}.", file=sys.stderr, flush=True)
        return False

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.changed:  # counted before its thread starts, so idleness never misses it
            self.busy += 1
        super().process_request(request, client_address)

    def drain(self) -> None:
        """Take the connections already queued, without waiting for more."""
        self.socket.setblocking(False)
        while True:
            try:
                request, address = self.socket.accept()
            except BlockingIOError:
                return
            request.setblocking(True)
            if self.verify_request(request, address):
                self.process_request(request, address)
            else:
                self.shutdown_request(request)

    def idle_for(self) -> float:
        with self.changed:
            return 0.0 if self.busy else time.monotonic() - self.last_seen

    def status(self) -> dict[str, Any]:
        with self.changed:
            served = dict(self.served)
        return {"pid": os.getpid(), "started": self.started, "served": served,
                "runtime": runtime_name(session()), "identity": self.identity}


class Handler(socketserver.BaseRequestHandler):
    server: Server

    def handle(self) -> None:
        try:
            self.answer()
        except (OSError, ValueError):
            pass  # the client went away or sent garbage: nothing to answer
        finally:
            with self.server.changed:
                self.server.busy -= 1
                self.server.last_seen = time.monotonic()

    def answer(self) -> None:
        sock = self.request
        header, _ = wire.receive(sock, until=time.monotonic() + READ_REQUEST_SECONDS)
        if header.get("kenning") != wire.PROTOCOL or header.get("identity") != self.server.identity:
            wire.send(sock, {"ok": False, "error": "identity",
                             "message": "This service runs another install, model file or "
                             "runtime."})
            return
        if header.get("op") == "status":
            wire.send(sock, {"ok": True, "status": self.server.status()})
            return
        texts, kind = header.get("texts"), header.get("kind")
        if (header.get("op") != "embed" or kind not in ("query", "documents")
                or not isinstance(texts, list) or not all(isinstance(t, str) for t in texts)
                or (kind == "query" and len(texts) != 1)):
            wire.send(sock, {"ok": False, "error": "request", "message": "Not a request."})
            return
        try:
            vectors = self.embed(kind, texts)
        except KenningError as exc:
            wire.send(sock, {"ok": False, "error": "model", "message": exc.message})
            return
        with self.server.changed:
            self.server.served[kind] += 1
            self.server.served["texts"] += len(texts)
        rows = np.ascontiguousarray(vectors, dtype="<f4")
        wire.send(sock, {"ok": True, "rows": rows.shape[0], "dims": rows.shape[1]},
                  rows.tobytes())

    def embed(self, kind: str, texts: Sequence[str]) -> np.ndarray:
        embedder = self.server.embedder
        if kind == "query":
            return np.asarray(embedder.embed_query(texts[0]), np.float32)[None, :]
        return embedder.embed_documents(texts)


def serve(server: Server, idle: float) -> None:
    """Answer until no request came for ``idle`` seconds; then take the socket's name away
    first (a client from then on starts a new service), answer what is already queued, and
    return."""
    with server.changed:
        server.last_seen = time.monotonic()  # idle from now: the model took its time to load
    while (left := idle - server.idle_for()) > 0:
        server.timeout = left
        server.handle_request()
    with suppress(FileNotFoundError):
        os.unlink(server.place.socket)
    server.drain()


def _lock(place: wire.Place) -> int | None:
    """The lock file, held (the pid in it), or None when a live service holds it."""
    fd = os.open(place.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kenning.embedding.service")
    parser.add_argument("--idle", type=float, default=600.0,
                        help="seconds without a request before the service exits")
    args = parser.parse_args(argv)
    os.umask(0o077)
    identity = wire.identity()
    place = wire.place(identity)
    try:
        place.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        wire.check_private(place.folder, folder=True)
        held = _lock(place)
    except (OSError, wire.Unsafe) as exc:
        print(f"kenning: the embedding service cannot start: {exc}", file=sys.stderr)
        return 1
    if held is None:
        return 0  # another service serves this identity (its starter sees stdout close)
    # SIGTERM ends the service as its idleness does: the socket's name goes with it
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with suppress(FileNotFoundError):  # a killed service's: no live one holds the lock
        os.unlink(place.socket)
    server = Server(place, identity)
    try:
        with suppress(BrokenPipeError):  # its starter may be gone already
            os.write(1, b"ready\n")
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # the starter has gone: nothing more goes to its pipe
        os.close(devnull)
        try:
            server.embedder.check()  # the model, loaded while the first clients wait
        except KenningError as exc:
            print(f"kenning: the embedding service cannot load the model: {exc.message}",
                  file=sys.stderr)
            return 1
        serve(server, args.idle)
        return 0
    finally:
        with suppress(FileNotFoundError):
            os.unlink(place.socket)
        server.server_close()


if __name__ == "__main__":
    sys.exit(main())
