"""kenning as an MCP server over stdio, for coding agents (``kenning mcp``).

Named ``mcpserver`` so it never shadows the ``mcp`` SDK it is built on.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

from kenning.config import Settings


def serve(settings: Settings, projects: Sequence[str] = ()) -> None:
    """Serve ``projects`` (ids or roots; else the config's, else the working directory's)."""
    import anyio

    from kenning import usage_log
    from kenning.embedding import make_embedder
    from kenning.mcpserver.projects import Registry
    from kenning.mcpserver.server import build_server
    from kenning.mcpserver.service import Service
    from kenning.mcpserver.transport import serve_stdio

    registry = Registry(settings, projects)
    embedder = make_embedder(settings, service=True)
    service = Service(settings, registry, embedder)
    try:
        with usage_log.opened():  # the server's searches and index runs, for `kenning stats`
            anyio.run(serve_stdio, build_server(service))
    except Exception as exc:
        if not _broken_pipe(exc):
            raise
        # what is still buffered would fail again when the interpreter flushes at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print("kenning mcp: the client stopped reading its replies; the server stops.",
              file=sys.stderr)
    finally:
        if service.indexing():
            # The client has gone while a worker thread embeds: end now. Tearing the
            # interpreter down under a running model aborts the process, and cutting the work
            # short is safe (commits are atomic, the OS drops the index lock, the next run
            # resumes).
            logging.shutdown()
            os._exit(0)
        embedder.close()


def _broken_pipe(exc: BaseException) -> bool:
    """Whether ``exc`` is a BrokenPipeError, or a group of nothing else (the SDK's task group
    wraps its writer's)."""
    inner = getattr(exc, "exceptions", None)
    if inner is None:
        return isinstance(exc, BrokenPipeError)
    return all(_broken_pipe(e) for e in inner)


__all__ = ["serve"]
