"""A local, append-only log of searches, index runs and errors, for ``kenning stats``.

One JSON object per line in ``$KENNING_HOME/usage.jsonl``; nothing leaves the machine. Writing
never fails a command: a log that cannot be written is skipped.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from kenning.project import kenning_home

LOG_NAME = "usage.jsonl"


def log_path() -> Path:
    return kenning_home() / LOG_NAME


def record(event: str, **fields: Any) -> None:
    """Append one event (``search``, ``index``, ``error``) with its fields."""
    entry = {"t": round(time.time(), 3), "event": event, **fields}
    try:
        path = log_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, separators=(",", ":")) + "\n")
    except OSError:
        pass


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
        "tokens_saved_estimate": sum(int(e.get("tokens_saved", 0)) for e in searches),
        "since": min((e["t"] for e in events if "t" in e), default=None),
        "log": str(log_path()),
    }
