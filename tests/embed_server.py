"""A real HTTP embedding server on loopback that speaks Ollama's and OpenAI's wire formats.

It answers ``POST /api/embed``, ``GET /api/tags``, ``GET /api/version`` (Ollama) and
``POST /v1/embeddings``, ``GET /v1/models`` (OpenAI) with vectors from kenning's local model,
validates requests as the real servers do and replies to bad ones with their JSON error shapes:
Ollama ``{"error": "<message>"}``, OpenAI ``{"error": {"message", "type", "param", "code"}}``.

Test knobs: ``delay`` (seconds before each embedding answer), ``fail_next(n, status)`` (fault
injection, e.g. two 503s then success), ``api_key`` (OpenAI bearer check),
``honour_dimensions`` (False: ignore ``dimensions`` like a server without Matryoshka support),
``shuffle`` (OpenAI rows in reverse ``index`` order), ``rewrite`` (a function that replaces the
vectors of every embedding reply, e.g. with zeros, ``None`` (JSON ``null``), NaN, 1e30, rows of
another width or too few rows; the reply keeps its wire shape), ``drip`` (seconds between the
bytes of every embedding reply, status line and headers included: a server that hangs while it
keeps the connection busy), ``stop()`` / ``restart()`` on the same port (an embedder going down
and coming back), and counters: ``requests``, ``count(path)``, ``max_in_flight``.

Use it as a context manager or through the ``embed_server`` fixture (tests/conftest.py), or as a
process: ``python tests/embed_server.py --port 11434``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
from kenning.embedding import local

OLLAMA_VERSION = "0.12.6"
MAX_TOKENS = local.MAX_SEQUENCE


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None
    at: float = field(default_factory=time.monotonic)  # when the request arrived


@dataclass
class _Fault:
    status: int
    retry_after: float | None


@dataclass
class EmbedServer:
    """Serves ``models`` (all backed by all-MiniLM-L6-v2, 384 dims) on 127.0.0.1."""

    models: tuple[str, ...] = ("all-minilm",)
    api_key: str | None = None
    delay: float = 0.0
    honour_dimensions: bool = True
    shuffle: bool = False
    rewrite: Callable[[list[list[float]]], Any] | None = None
    drip: float = 0.0
    port: int = 0
    requests: list[Recorded] = field(default_factory=list)
    max_in_flight: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[_Fault] = []
        self._in_flight = 0
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> EmbedServer:
        httpd = _Server(("127.0.0.1", self.port), _Handler)
        httpd.owner = self
        self.port = httpd.server_address[1]
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"embed-server-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Go down like a killed server: stop listening and drop every open connection."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.drop_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def restart(self) -> None:
        """Come back on the same port (clients configured with ``url`` reconnect)."""
        self.stop()
        self.start()

    def __enter__(self) -> EmbedServer:
        return self.start() if self._httpd is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- knobs and counters ---------------------------------------------------------------------

    def fail_next(self, count: int, status: int = 503, *, retry_after: float | None = None) -> None:
        """The next ``count`` embedding requests fail with ``status`` in the wire's error shape."""
        with self._lock:
            self._faults.extend(_Fault(status, retry_after) for _ in range(count))

    def count(self, path: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if path is None or r.path == path)

    def bodies(self, path: str) -> list[Any]:
        with self._lock:
            return [r.body for r in self.requests if r.path == path]

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._faults.clear()
            self.max_in_flight = 0

    def settings(self, backend: str, model: str | None = None) -> dict[str, Any]:
        """Config overrides that point kenning's ``backend`` at this server."""
        return {"embedder.backend": backend, "embedder.url": self.url,
                "embedder.model": model or self.models[0]}

    # -- internals used by the handler ----------------------------------------------------------

    def _record(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        with self._lock:
            self.requests.append(Recorded(handler.command, handler.path.split("?")[0],
                                          {k.lower(): v for k, v in handler.headers.items()},
                                          body))

    def _take_fault(self) -> _Fault | None:
        with self._lock:
            return self._faults.pop(0) if self._faults else None

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _rewritten(self, rows: list[list[float]]) -> Any:
        return rows if self.rewrite is None else self.rewrite(rows)

    def _find_model(self, name: str) -> str | None:
        bare = name.removesuffix(":latest")
        return next((m for m in self.models if m.removesuffix(":latest") == bare), None)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: EmbedServer

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def drop_connections(self) -> None:
        with self.connections_lock:
            for conn in self.connections:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
            self.connections.clear()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet for a client that hung up or a connection dropped by ``stop()``; loud for bugs."""
        import sys

        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Drip:
    """A socket writer that sends one byte at a time, ``pause`` seconds apart."""

    def __init__(self, raw: Any, pause: float) -> None:
        self.raw, self.pause = raw, pause

    def write(self, data: bytes) -> int:
        for i in range(len(data)):
            self.raw.write(data[i : i + 1])
            time.sleep(self.pause)
        return len(data)

    def __getattr__(self, name: str) -> Any:  # flush, close, closed
        return getattr(self.raw, name)


class _Reject(Exception):
    def __init__(self, status: int, payload: Any, headers: Mapping[str, str] | None = None):
        super().__init__(status)
        self.status, self.payload, self.headers = status, payload, dict(headers or {})


def _openai_error(message: str, type_: str = "invalid_request_error", param: str | None = None,
                  code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like the real servers
    server: _Server
    server_version = "kenning-test-embedder"

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Quiet: tests read the counters, not a log."""

    # -- routing --------------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        owner = self.server.owner
        path = self.path.split("?")[0]
        owner._record(self, None)
        if path == "/api/version":
            self._send(200, {"version": OLLAMA_VERSION})
        elif path == "/api/tags":
            self._send(200, {"models": [_ollama_tag(m) for m in owner.models]})
        elif path == "/v1/models":
            self._send(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "kenning-test"}
                for m in owner.models]})
        elif path in {"/api/embed", "/v1/embeddings"}:
            self._send_text(405, "405 method not allowed")
        else:
            self._send_text(404, "404 page not found")

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        path = self.path.split("?")[0]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        owner = self.server.owner
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        owner._record(self, body)
        if path not in {"/api/embed", "/v1/embeddings"}:
            self._send_text(404, "404 page not found")
            return
        openai = path == "/v1/embeddings"
        owner._enter()
        if owner.drip and not isinstance(self.wfile, _Drip):
            self.wfile = _Drip(self.wfile, owner.drip)  # type: ignore[assignment]  # its writer
        try:
            if owner.delay:
                time.sleep(owner.delay)
            reply = self._openai(raw) if openai else self._ollama(raw)
            self._send(200, reply)
        except _Reject as reject:
            self._send(reject.status, reject.payload, reject.headers)
        finally:
            owner._leave()

    # -- Ollama ---------------------------------------------------------------------------------

    def _ollama(self, raw: bytes) -> dict[str, Any]:
        owner = self.server.owner
        started = time.perf_counter_ns()
        fault = owner._take_fault()
        if fault is not None:
            raise _Reject(fault.status, {"error": f"injected failure ({fault.status})"},
                          _retry_after(fault))
        body = _parse(raw, lambda m: {"error": m})
        if not isinstance(body, dict):
            raise _Reject(400, {"error": "json: cannot unmarshal into Go value of type "
                                         "api.EmbedRequest"})
        name = body.get("model")
        if not name:
            raise _Reject(400, {"error": "model is required"})
        model = owner._find_model(str(name))
        if model is None:
            raise _Reject(404, {"error": f'model "{name}" not found, try pulling it first'})
        texts = body.get("input", [])
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise _Reject(400, {"error": "invalid input type"})
        dims = body.get("dimensions")
        if dims is not None and (not isinstance(dims, int) or not 0 < dims <= local.DIMS):
            raise _Reject(400, {"error": f"invalid dimensions: {dims}"})
        ids = local.token_ids(texts)
        if body.get("truncate") is False and max(_untruncated_lengths(texts),
                                                 default=0) > MAX_TOKENS:
            raise _Reject(400, {"error": "the input length exceeds the context length"})
        vectors = local.encode(ids) if texts else np.zeros((0, local.DIMS), np.float32)
        if dims is not None and owner.honour_dimensions:
            vectors = _renormalised(vectors[:, :dims])
        return {"model": model, "embeddings": owner._rewritten(vectors.tolist()),
                "total_duration": time.perf_counter_ns() - started, "load_duration": 0,
                "prompt_eval_count": sum(len(i) for i in ids)}

    # -- OpenAI ---------------------------------------------------------------------------------

    def _openai(self, raw: bytes) -> dict[str, Any]:
        owner = self.server.owner
        if owner.api_key is not None:
            auth = self.headers.get("Authorization", "")
            if not auth.startswith("Bearer ") or not auth[7:].strip():
                raise _Reject(401, _openai_error(
                    "You didn't provide an API key. You need to provide your API key in an "
                    "Authorization header using Bearer auth (i.e. Authorization: Bearer "
                    "YOUR_KEY)."))
            if auth[7:].strip() != owner.api_key:
                raise _Reject(401, _openai_error(
                    f"Incorrect API key provided: {auth[7:11]}****.", code="invalid_api_key"))
        fault = owner._take_fault()
        if fault is not None:
            kind = "requests" if fault.status == 429 else "server_error"
            code = "rate_limit_exceeded" if fault.status == 429 else None
            raise _Reject(fault.status, _openai_error(f"injected failure ({fault.status})", kind,
                                                      code=code), _retry_after(fault))
        body = _parse(raw, lambda m: _openai_error(
            "We could not parse the JSON body of your request. (HINT: This likely means you "
            "aren't using your HTTP library correctly.)"))
        if not isinstance(body, dict):
            raise _Reject(400, _openai_error("Invalid request body."))
        name = body.get("model")
        if not name:
            raise _Reject(400, _openai_error("you must provide a model parameter"))
        model = owner._find_model(str(name))
        if model is None:
            raise _Reject(404, _openai_error(
                f"The model `{name}` does not exist or you do not have access to it.",
                code="model_not_found"))
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(
                isinstance(t, str) and t for t in texts):
            raise _Reject(400, _openai_error("'$.input' is invalid. Please check the API "
                                             "reference: https://platform.openai.com/docs/api-"
                                             "reference.", param="input"))
        fmt = body.get("encoding_format", "float")
        if fmt not in {"float", "base64"}:
            raise _Reject(400, _openai_error(f"Invalid encoding_format: {fmt!r}.",
                                             param="encoding_format"))
        dims = body.get("dimensions")
        if dims is not None:
            if not owner.honour_dimensions:
                raise _Reject(400, _openai_error(
                    "This model does not support specifying dimensions.", param="dimensions"))
            if not isinstance(dims, int) or not 0 < dims <= local.DIMS:
                raise _Reject(400, _openai_error(f"Invalid dimensions: {dims}.",
                                                 param="dimensions"))
        lengths = _untruncated_lengths(texts)
        if max(lengths) > MAX_TOKENS:
            raise _Reject(400, _openai_error(
                f"This model's maximum context length is {MAX_TOKENS} tokens, however you "
                f"requested {max(lengths)} tokens. Please reduce your prompt.", param="input"))
        vectors = local.encode(local.token_ids(texts))
        if dims is not None:
            vectors = _renormalised(vectors[:, :dims])
        encoded = ([_encode_row(v, fmt) for v in vectors] if owner.rewrite is None
                   else owner._rewritten(vectors.tolist()))
        rows = [{"object": "embedding", "index": i, "embedding": v}
                for i, v in enumerate(encoded)]
        if owner.shuffle:
            rows.reverse()
        return {"object": "list", "data": rows, "model": model,
                "usage": {"prompt_tokens": sum(lengths), "total_tokens": sum(lengths)}}

    # -- replies --------------------------------------------------------------------------------

    def _send(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_text(self, status: int, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _parse(raw: bytes, shape: Any) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise _Reject(400, shape("invalid JSON")) from None


def _retry_after(fault: _Fault) -> dict[str, str]:
    return {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}


def _untruncated_lengths(texts: list[str]) -> list[int]:
    tok = local.tokenizer()
    return [len(e.ids) + 2 for e in tok.encode_batch(texts, add_special_tokens=False)]


def _renormalised(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _encode_row(vector: np.ndarray, fmt: str) -> Any:
    if fmt == "base64":
        return base64.b64encode(vector.astype("<f4").tobytes()).decode()
    return vector.tolist()


def _ollama_tag(name: str) -> dict[str, Any]:
    full = name if ":" in name else name + ":latest"
    return {"name": full, "model": full, "modified_at": "2025-06-01T00:00:00Z",
            "size": 45_960_996, "digest": "1b226e2802dbb772b5fc32a58f103ca1804ef7501331012de"
            "126ab22ad67ec21", "details": {"parent_model": "", "format": "gguf",
                                           "family": "bert", "families": ["bert"],
                                           "parameter_size": "23M",
                                           "quantization_level": "F16"}}


# -- pytest fixtures (imported by tests/conftest.py) -----------------------------------------------

@pytest.fixture(scope="session")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Loads the local model once per test session (every LocalEmbedder shares it)."""
    with pytest.MonkeyPatch.context() as patch:  # runs before the per-test KENNING_HOME
        patch.setenv("KENNING_HOME", str(tmp_path_factory.mktemp("model-home")))
        local.session()
        local.tokenizer()


@pytest.fixture
def embed_server(local_model: None) -> Iterator[EmbedServer]:
    """A fresh loopback Ollama/OpenAI server serving ``all-minilm``; stopped after the test."""
    with EmbedServer() as server:
        yield server


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--model", action="append", help="model names to serve")
    parser.add_argument("--api-key")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--drip", type=float, default=0.0,
                        help="seconds between the bytes of each embedding reply (a hung server)")
    args = parser.parse_args()
    server = EmbedServer(models=tuple(args.model or ["all-minilm"]), api_key=args.api_key,
                         delay=args.delay, drip=args.drip, port=args.port).start()
    print(server.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
