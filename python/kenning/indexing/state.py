"""Which process is indexing a project, how far it got and how fast, for other processes to see.

The indexer that holds a project's write lock keeps ``indexer.json`` in the index folder up to
date (pid, phase, counts) and removes it when it stops. A file left by a process that died
names a pid that no longer runs, or that runs another process now (its start time differs
from the one recorded, where the system tells it), so readers can tell a running indexer from
an abandoned one without touching the lock (probing the lock could make a starting indexer
think it is busy). The next indexer, holding the lock, drops a file left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any, TypedDict

from kenning import hostos

STATE_NAME = "indexer.json"
WRITE_EVERY = 1.0  # seconds between rewrites of the state file


def _alive(pid: int, started: object) -> bool:
    """Whether ``pid`` runs and is the process recorded (``started``: its start time)."""
    if not hostos.alive(pid):
        return False
    now = hostos.started(pid)
    return started is None or now is None or now == started


class Tracker:
    """Mirrors an indexer's progress events into the state file of ``index_dir``; nothing is
    written until there is work (a refresh that finds no change costs no write)."""

    def __init__(self, index_dir: Path) -> None:
        self.path = index_dir / STATE_NAME
        self.state: dict[str, Any] = {"pid": os.getpid(), "started": time.time(),
                                      "pid_started": hostos.started(os.getpid()),
                                      "phase": "scanning", "done": 0, "total": 0}
        self.written = 0.0
        with contextlib.suppress(OSError):  # made under the lock: any file there is stale
            self.path.unlink()

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind in ("chunking", "embedding"):
            if self.state["phase"] != kind:  # the rate counts from the start of a phase
                self.state.update(phase=kind, phase_started=time.time())
            self.state.update(done=event["done"], total=event["total"])
            if time.monotonic() - self.written >= WRITE_EVERY or not self.written:
                self._write()

    def _write(self) -> None:
        self.state["updated"] = time.time()
        tmp = self.path.with_name(f".{STATE_NAME}.{os.getpid()}")
        try:
            tmp.write_text(json.dumps(self.state), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            return  # progress for others is a courtesy; indexing goes on without it
        self.written = time.monotonic()

    def close(self) -> None:
        if self.written:
            with contextlib.suppress(OSError):
                self.path.unlink()


class Running(TypedDict):
    """The process indexing a project now, as ``kenning status`` shows it."""

    pid: int
    phase: str  # "scanning", "chunking", "embedding", ...
    done: int
    total: int
    rate: float | None  # per second in this phase
    eta_seconds: int | None


def read(index_dir: Path) -> Running | None:
    """The running indexer of ``index_dir`` (pid, phase, done, total, rate per second, eta in
    seconds or None), or None when no live process is indexing it."""
    try:
        state = json.loads((index_dir / STATE_NAME).read_text(encoding="utf-8"))
        pid = int(state["pid"])
        done, total = int(state.get("done", 0)), int(state.get("total", 0))
        elapsed = float(state.get("updated", 0)) - float(state.get("phase_started", time.time()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError):
        return None  # AttributeError: JSON that is not an object
    if not _alive(pid, state.get("pid_started")):
        return None
    rate = done / elapsed if done and elapsed > 0 else None
    eta = (total - done) / rate if rate else None
    return {"pid": pid, "phase": state.get("phase", "scanning"), "done": done, "total": total,
            "rate": None if rate is None else round(rate, 2),
            "eta_seconds": None if eta is None else round(eta)}


def describe(running: Running) -> str:
    """``pid 123, embedding 1200/2461, 8.1/s, about 2 min left``."""
    text = f"pid {running['pid']}, {running['phase']}"
    if running["total"]:
        text += f" {running['done']}/{running['total']}"
    if running["rate"]:
        text += f", {running['rate']:.1f}/s"
    if running["eta_seconds"] is not None:
        text += f", about {duration(running['eta_seconds'])} left"
    return text


def duration(seconds: float) -> str:
    """``45 s``, ``3 min``, ``1 h 20 min``."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def pace(done: int, total: int, elapsed: float) -> str:
    """``, 25.3/s, about 4 min left`` for ``done`` of ``total`` in ``elapsed`` seconds ("" until
    there is a rate, and once all are done)."""
    if not done or elapsed <= 0 or done >= total:
        return ""
    rate = done / elapsed
    return f", {rate:.1f}/s, about {duration((total - done) / rate)} left"
