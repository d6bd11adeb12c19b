"""The stdio transport, with an answer for every line a client sends.

The SDK's stdio reader hands a line it cannot validate to the session as an exception, which
drops it: the client waits forever for a reply. Here such a line is looked at again. JSON
with a lone surrogate escape (valid JSON, refused by the SDK's strict parser) is read with
Python's parser, each lone surrogate becomes U+FFFD and the request is served; anything else
gets the JSON-RPC error it calls for: -32700 for a line that is not JSON, -32600 for JSON
that is not a JSON-RPC message or is nested deeper than a parser's recursion allows (with the
request's id when it has one).

A request whose id cannot be answered under (an object, a list, a float, a boolean, null, a
string with a lone surrogate) reads as a notification to the SDK, which answers none: such a
line is seen before the SDK parses it and answered with -32600 and the null id.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from kenning.retrieval.query import without_lone_surrogates

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

def _without_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return without_lone_surrogates(value)
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v)
                for k, v in value.items()}
    return value


def _error(code: int, message: str, request_id: Any = None) -> SessionMessage:
    if not isinstance(request_id, (int, str)) or isinstance(request_id, bool):
        request_id = None  # the spec's null id: the request's own could not be read
    return SessionMessage(types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)))


_TOO_DEEP = "Invalid request: the message is nested too deeply."
_BAD_ID = "Invalid request: the id must be a string or an integer."
_REFUSED_ID = "kenning/refused-id"  # the method a line with such an id is handed on as


def _answerable_id(value: Any) -> bool:
    if isinstance(value, str):
        return without_lone_surrogates(value) == value
    return isinstance(value, int) and not isinstance(value, bool)


def _screened(line: str) -> str:
    """``line``, or for a request whose id cannot be answered under, a notification of
    ``_REFUSED_ID`` (which ``_Answering`` answers with the error)."""
    if '"id"' not in line:
        return line
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return line  # the SDK refuses it, and ``reread`` answers
    if (isinstance(message, dict) and "method" in message and "id" in message
            and not _answerable_id(message["id"])):
        return json.dumps({"jsonrpc": "2.0", "method": _REFUSED_ID}) + "\n"
    return line


class _Lines:
    """The client's lines, screened."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._inner:
            yield _screened(line)


def reread(exc: Exception) -> SessionMessage:
    """The message a refused line meant, or the JSON-RPC error reply it deserves."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    raw = errors[0].get("input") if errors else None
    if errors and errors[0]["type"] == "json_invalid" and isinstance(raw, str):
        try:
            raw = json.loads(raw)  # takes lone surrogate escapes
        except RecursionError:
            return _error(types.INVALID_REQUEST, _TOO_DEEP)
        except ValueError:
            return _error(types.PARSE_ERROR, "Parse error: the line is not valid JSON.")
    if not isinstance(raw, dict):
        return _error(types.INVALID_REQUEST, "Invalid request: not a JSON-RPC message.")
    try:
        data = _without_lone_surrogates(raw)
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(data,
                                                                            by_name=False))
    except RecursionError:
        return _error(types.INVALID_REQUEST, _TOO_DEEP, raw.get("id"))
    except ValidationError:
        return _error(types.INVALID_REQUEST, "Invalid request: not a JSON-RPC message.",
                      data.get("id"))


class _Answering:
    """A read stream that never passes an exception on: it forwards the message a refused
    line meant, or writes the error reply itself."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner, self._write = inner, write

    @property
    def last_context(self) -> Any:  # the SDK restores the sender's context from it
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                if getattr(item.message, "method", None) != _REFUSED_ID:
                    return item  # type: ignore[no-any-return]
                await self._write.send(_error(types.INVALID_REQUEST, _BAD_ID))
                continue
            message = reread(item)
            if not isinstance(message.message, types.JSONRPCError):
                return message
            await self._write.send(message)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Answering:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Answering:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()


async def serve_stdio(server: MCPServer) -> None:
    """``server.run("stdio")``, answering every line."""
    from mcp.server import stdio  # fd 0 claimed as the SDK claims it, then read screened

    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async drives, too
    buffer, restore = stdio._claim_fd(0, sys.stdin, "rb", stdio._open_stdin_diversion)
    try:
        lines = anyio.wrap_file(stdio._UnownedTextWrapper(buffer, encoding="utf-8",
                                                          errors="replace"))
        async with stdio_server(stdin=_Lines(lines)) as (read, write):  # type: ignore[arg-type]
            await lowlevel.run(_Answering(read, write), write,
                               lowlevel.create_initialization_options())
    finally:
        if restore is not None:
            restore()
