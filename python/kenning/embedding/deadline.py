"""Total deadlines for embedding requests, however slowly a server trickles its answer.

httpx's timeouts bound each socket operation, so a server that sends one byte at a time never
trips them. Every connect, read and write of kenning's HTTP clients is given at most the time
left before the current deadline (``http.bounded``): ``within(seconds)`` sets one for a block
(nested blocks keep the earlier), a request sets its own (``embedder.timeout``) inside the
caller's (a search's ``search.timeout``), and ``carry`` hands the deadline to a worker thread.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, copy_context
from typing import Any, TypeVar

T = TypeVar("T")

_deadline: ContextVar[float] = ContextVar("kenning_deadline", default=math.inf)


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Work in this block must end within ``seconds`` (or the enclosing deadline, if sooner)."""
    token = _deadline.set(min(_deadline.get(), time.monotonic() + seconds))
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining() -> float:
    """Seconds left before the current deadline (``inf`` when there is none)."""
    return _deadline.get() - time.monotonic()


def carry(function: Callable[..., T]) -> Callable[..., T]:
    """``function`` bound to the caller's deadline, to run on another thread."""
    context = copy_context()

    def run(*args: Any) -> T:
        return context.copy().run(function, *args)

    return run
