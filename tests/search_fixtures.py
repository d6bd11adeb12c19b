"""A small fixture repository: indexed once per test session with the real local model
(``indexed``), or copied fresh for one test and never indexed (``root``)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = {
    "src/http/retry.py": '''"""Retries for failed HTTP requests."""

import random
import time


class RetryPolicy:
    """How often and how long to wait before a failed request is tried again."""

    def __init__(self, attempts: int = 5, base: float = 0.5) -> None:
        self.attempts = attempts
        self.base = base

    def delay(self, attempt: int) -> float:
        """Exponential backoff with full jitter."""
        return random.uniform(0, self.base * 2 ** attempt)

    def should_retry(self, status: int) -> bool:
        return status in (429, 502, 503, 504)


def call_with_retries(send, policy: RetryPolicy):
    for attempt in range(policy.attempts):
        response = send()
        if not policy.should_retry(response.status):
            return response
        time.sleep(policy.delay(attempt))
    return response
''',
    "src/http/headers.py": '''"""Header parsing and a tiny HTTP client."""


def parse_header(line: str) -> tuple[str, str]:
    name, _, value = line.partition(":")
    return name.strip().lower(), value.strip()


class HttpClient:
    def __init__(self, host: str) -> None:
        self.host = host
        self.headers: dict[str, str] = {}

    def send(self, method: str, path: str, body: bytes = b"") -> bytes:
        request = f"{method} {path} HTTP/1.1\\r\\nHost: {self.host}\\r\\n\\r\\n".encode()
        return request + body
''',
    "src/storage/cache.py": '''from collections import OrderedDict


class LruCache:
    """Keeps the most recently used entries up to a fixed capacity."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.entries: OrderedDict[str, bytes] = OrderedDict()

    def get(self, key: str) -> bytes | None:
        if key in self.entries:
            self.entries.move_to_end(key)
        return self.entries.get(key)

    def evict(self) -> None:
        while len(self.entries) > self.capacity:
            self.entries.popitem(last=False)
''',
    "src/auth/passwords.py": '''import hashlib
import hmac
import os


def hash_password(password: str) -> bytes:
    salt = os.urandom(16)
    return salt + hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 200_000)


def verify_password(password: str, stored: bytes) -> bool:
    salt, digest = stored[:16], stored[16:]
    candidate = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 200_000)
    return hmac.compare_digest(candidate, digest)
''',
    "web/router.js": '''class Router {
  constructor() {
    this.routes = [];
  }

  addRoute(method, pattern, handler) {
    this.routes.push({ method, pattern: new RegExp(`^${pattern}$`), handler });
  }

  match(method, url) {
    return this.routes.find((r) => r.method === method && r.pattern.test(url));
  }
}

module.exports = { Router };
''',
    "tests/test_retry.py": '''from src.http.retry import RetryPolicy


def test_retry_policy_backoff_grows():
    policy = RetryPolicy(base=1.0)
    assert policy.should_retry(503)
''',
    "docs/configuration.md": '''# Configuration

Settings live in a TOML file in your config folder.

## Logging

Set `log_level` to `debug` to see every request.
''',
}

OTHER_REPO = {
    "geometry/shapes.py": '''import math


def circle_area(radius: float) -> float:
    return math.pi * radius * radius


def polygon_perimeter(points: list[tuple[float, float]]) -> float:
    total = 0.0
    for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1]):
        total += math.hypot(x2 - x1, y2 - y1)
    return total
''',
}


def write_repo(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root.resolve()


@dataclass
class Indexed:
    root: Path
    other: Path
    home: Path
    config: Path


@pytest.fixture(scope="session")
def indexed_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Indexed]:
    """Two repositories indexed once with the local model, in a session-wide KENNING_HOME."""
    from kenning import config
    from kenning.indexing.indexer import refresh

    base = tmp_path_factory.mktemp("search-session")
    state = Indexed(write_repo(base / "repo", REPO), write_repo(base / "other", OTHER_REPO),
                    base / "home", base / "config.toml")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KENNING_HOME", str(state.home))
        mp.setenv("KENNING_CONFIG", str(state.config))
        settings = config.load()
        refresh(state.root, settings)
        refresh(state.other, settings)
    yield state


@pytest.fixture
def indexed(indexed_session: Indexed, monkeypatch: pytest.MonkeyPatch) -> Indexed:
    monkeypatch.setenv("KENNING_HOME", str(indexed_session.home))
    monkeypatch.setenv("KENNING_CONFIG", str(indexed_session.config))
    return indexed_session


KENNING = [sys.executable, "-m", "kenning"]


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fixture repository in a folder of the test's own, never indexed; a search leaves its
    vectors to the background (it is small: a limit of 0 makes any backlog too large)."""
    monkeypatch.setenv("KENNING_SEARCH_EMBED_LIMIT", "0")
    return write_repo(tmp_path / "repo", REPO)


def cli_status(root: Path) -> dict[str, Any]:
    """``kenning status --json-output`` of ``root``, run as a user would."""
    done = subprocess.run([*KENNING, "status", str(root), "--json-output"], capture_output=True,
                          text=True, check=True)
    return dict(json.loads(done.stdout))
