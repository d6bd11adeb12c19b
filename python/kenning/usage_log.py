"""A local, append-only log of searches, index runs and errors, for ``kenning stats``.

One JSON object per line in ``$KENNING_HOME/usage.jsonl``; nothing leaves the machine. Writing
never fails a command: a log that cannot be written is skipped. The log stays bounded: past
``MAX_BYTES`` its older half is dropped.

The log belongs to the front ends: the CLI opens it for the run of a command and the MCP server
for its life (``opened``), and only then do the searches and index runs below them write to it.
A program that calls kenning's Python API writes nothing there.

Tokens saved, per search, an estimate (not a bound either way): an agent without kenning would
have opened the files of the top ``READ_FILES`` results (each once), and its read tool returns
at most ``READ_LINES`` lines of a file; that, less everything the search returned, never below
zero, at 4 bytes per token (code runs nearer 3). Whole-repository sweeps are not counted.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kenning.project import kenning_home

LOG_NAME = "usage.jsonl"
MAX_BYTES = 2_000_000  # about 15,000 events
READ_FILES = 3
READ_LINES = 2000  # what one read returns at most (Claude Code's Read tool, by default)
BYTES_PER_TOKEN = 4
LAST_ERRORS = 5  # listed by `kenning stats`


def log_path() -> Path:
    return kenning_home() / LOG_NAME


_openers = 0  # front ends that have the log open in this process (the MCP server and its CLI)
_openers_lock = threading.Lock()


@contextmanager
def opened() -> Iterator[None]:
    """Record the events of this process (on every thread) while the block runs."""
    global _openers
    with _openers_lock:
        _openers += 1
    try:
        yield
    finally:
        with _openers_lock:
            _openers -= 1


def record(event: str, **fields: Any) -> None:
    """Append one event (``search``, ``index``, ``error``) with its fields, if a front end has
    the log open."""
    if not _openers:
        return
    entry = {"t": round(time.time(), 3), "event": event, **fields}
    try:
        path = log_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, separators=(",", ":")) + "\n")
            size = fh.tell()
        if size > MAX_BYTES:
            _drop_older_half(path)
    except OSError:
        pass


def _drop_older_half(path: Path) -> None:
    """Keep the newer half of the log (whole lines), swapped in atomically."""
    data = path.read_bytes()
    cut = data.find(b"\n", len(data) - MAX_BYTES // 2)
    tmp = path.with_name(f".{LOG_NAME}.{os.getpid()}")
    tmp.write_bytes(data[cut + 1:] if cut >= 0 else b"")
    os.replace(tmp, path)


def read_cost(data: bytes) -> int:
    """The bytes one read of a file of ``data`` returns: its first READ_LINES lines."""
    end = -1
    for _ in range(READ_LINES):
        end = data.find(b"\n", end + 1)
        if end < 0:
            return len(data)
    return end + 1


def tokens_saved(results: list[dict[str, Any]]) -> int:
    """The module docstring's estimate for one search; each result carries ``_read_bytes``,
    the ``read_cost`` of its file."""
    files: dict[tuple[str, str], int] = {}
    for r in results:
        if len(files) == READ_FILES:
            break
        files.setdefault((r["project"], r["path"]), int(r["_read_bytes"]))
    shown = sum(len(r["content"].encode()) for r in results)
    return max(0, sum(files.values()) - shown) // BYTES_PER_TOKEN


def read() -> list[dict[str, Any]]:
    try:
        lines = log_path().read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    events = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line cut short by a crash
        if isinstance(entry, dict):
            events.append(entry)
    return events


def summary(since: float | None = None) -> dict[str, Any]:
    """Counts and latencies over the log (optionally only events after ``since``)."""
    events = [e for e in read() if since is None or e.get("t", 0) >= since]
    searches = [e for e in events if e.get("event") == "search"]
    latencies = sorted(float(e.get("ms", 0.0)) for e in searches)

    def percentile(q: float) -> float | None:
        if not latencies:
            return None
        return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))], 1)

    return {
        "type": "stats",
        "searches": len(searches),
        "degraded_searches": sum(1 for e in searches if e.get("degraded")),
        "empty_searches": sum(1 for e in searches if not e.get("results")),
        "latency_ms_p50": percentile(0.5),
        "latency_ms_p90": percentile(0.9),
        "index_runs": sum(1 for e in events if e.get("event") == "index"),
        "errors": sum(1 for e in events if e.get("event") == "error"),
        "last_errors": [{"t": e.get("t"), "command": e.get("command"), "error": e.get("error"),
                         "message": e.get("message")}
                        for e in events if e.get("event") == "error"][-LAST_ERRORS:],
        "tokens_saved_estimate": sum(int(e.get("tokens_not_read", 0)) for e in searches),
        "since": min((e["t"] for e in events if "t" in e), default=None),
        "log": str(log_path()),
    }
