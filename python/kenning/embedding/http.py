"""One JSON POST with retries: exponential backoff on connection errors, 5xx and 429.

A 429 waits at least as long as the server's ``Retry-After`` says. Other 4xx answers are final.
A read timeout is final too: the request already waited ``embedder.timeout`` seconds, and a
retry would multiply that wait. The backend turns each failure into one of kenning's errors.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

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
        return min(self.backoff * (2**attempt), self.max_wait)


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
        error: KenningError | None = None
        refused = 0
        for attempt in range(self.retry.attempts):
            wait = self.retry.delay(attempt)
            try:
                response = self.client.post(url, json=body, headers=headers)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError) as exc:
                error = self.unreachable(exc)
                refused += 1
                if refused >= self.retry.connect_attempts:
                    raise error from None
            except httpx.TimeoutException:
                raise EmbedderUnavailable(
                    f"The embedder at {url} did not answer within "
                    f"{self.client.timeout.read} seconds.", hint=self.timeout_hint) from None
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
            if attempt + 1 < self.retry.attempts:
                time.sleep(wait)
        assert error is not None
        raise error

    @staticmethod
    def _json(response: httpx.Response, url: str) -> Any:
        try:
            return response.json()
        except ValueError:
            raise EmbedderError(f"The embedder at {url} answered with something that is not "
                                "JSON.", hint="Check embedder.url and embedder.backend.") from None
