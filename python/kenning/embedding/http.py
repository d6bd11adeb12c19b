"""One JSON POST with retries: exponential backoff on connection errors, 5xx and 429.

A 429 waits at least as long as the server's ``Retry-After`` says. Other 4xx answers are final.
A timeout is final too: the request already waited ``embedder.timeout`` seconds, and a retry
would multiply that wait. That wait is a total for the request (see ``deadline``), not per read,
and no retry starts after the caller's deadline. The backend turns each failure into one of
kenning's errors.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

from kenning.embedding import deadline
from kenning.errors import EmbedderError, EmbedderUnavailable, KenningError


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 4  # requests in all, the first included
    # A refused connection is retried less: it usually means the server is not running, and a
    # search that falls back to lexical results should learn that fast.
    connect_attempts: int = 2
    backoff: float = 0.25  # seconds before the first retry; doubles each time
    max_wait: float = 30.0  # no single wait is longer, whatever Retry-After says

    def delay(self, attempt: int) -> float:
        return min(self.backoff * 2.0**attempt, self.max_wait)


def retry_after(response: httpx.Response) -> float:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date); 0 when absent."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return 0.0
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return 0.0
    return max(0.0, when.timestamp() - time.time())


def error_text(response: httpx.Response) -> str:
    """The server's own error message (Ollama ``{"error": str}``, OpenAI ``{"error": {...}}``)."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:200] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        error = error.get("message")
    if isinstance(error, str) and error:
        return error
    return response.text.strip()[:200]


@dataclass
class JsonPoster:
    """POSTs JSON to one server and maps failures through the backend's ``classify``."""

    client: httpx.Client
    retry: RetryPolicy
    # A final or last-retried HTTP error answer -> the error to raise.
    classify: Callable[[httpx.Response], KenningError]
    # Connection refused, DNS failure, connect timeout -> the error to raise.
    unreachable: Callable[[Exception], KenningError]
    timeout_hint: str = "Raise embedder.timeout, or use a smaller embedder.batch_size."

    def post(self, url: str, body: Mapping[str, Any],
             headers: Mapping[str, str] | None = None) -> Any:
        # the whole request, however slowly the answer trickles in, within the read timeout
        # (embedder.timeout) and within the caller's deadline (a search's), if sooner
        budget = self.client.timeout.read or math.inf
        error: KenningError | None = None
        refused = 0
        for attempt in range(self.retry.attempts):
            wait = self.retry.delay(attempt)
            limit = min(budget, deadline.remaining())
            try:
                with deadline.within(budget):
                    response = self.client.post(url, json=body, headers=headers)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError) as exc:
                error = self.unreachable(exc)
                refused += 1
                if refused >= self.retry.connect_attempts:
                    raise error from None
            except httpx.TimeoutException:
                raise EmbedderUnavailable(
                    f"The embedder at {url} did not answer within {limit:.3g} seconds.",
                    hint=self.timeout_hint) from None
            except httpx.TransportError as exc:
                error = self.unreachable(exc)
            else:
                if response.is_success:
                    return self._json(response, url)
                error = self.classify(response)
                if response.status_code == 429:
                    wait = max(wait, min(retry_after(response), self.retry.max_wait))
                elif response.status_code < 500:
                    raise error
            if attempt + 1 < self.retry.attempts and wait < deadline.remaining():
                time.sleep(wait)
            else:
                break
        assert error is not None
        raise error

    @staticmethod
    def _json(response: httpx.Response, url: str) -> Any:
        try:
            return response.json()
        except ValueError:
            raise EmbedderError(f"The embedder at {url} answered with something that is not "
                                "JSON.", hint="Check embedder.url and embedder.backend.") from None


def _capped(timeout: float | None, error: type[Exception]) -> float | None:
    left = deadline.remaining()
    if left == math.inf:
        return timeout
    if left <= 0:
        raise error("the deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _capped(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _capped(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname,
                                             _capped(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_tcp(host, port, _capped(timeout,
                                                                   httpcore.ConnectTimeout),
                                               local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None
                            ) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_unix_socket(
            path, _capped(timeout, httpcore.ConnectTimeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bounded(client: httpx.Client) -> httpx.Client:
    """``client`` with every socket operation held to the current deadline (see ``deadline``).
    httpx offers no hook for it, so the network backend of each connection pool (the default
    transport's and any proxy's) is wrapped; tests/test_embedding_deadline.py fails if httpx
    moves them."""
    transports = [client._transport, *client._mounts.values()]  # noqa: SLF001
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if isinstance(backend, httpcore.NetworkBackend) and not isinstance(backend, _Backend):
            pool._network_backend = _Backend(backend)  # type: ignore[union-attr]  # noqa: SLF001
    return client
