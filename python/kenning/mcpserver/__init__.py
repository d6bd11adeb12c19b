"""kenning as an MCP server over stdio, for coding agents (``kenning mcp``).

Named ``mcpserver`` so it never shadows the ``mcp`` SDK it is built on.
"""

from __future__ import annotations

from collections.abc import Sequence

from kenning.config import Settings


def serve(settings: Settings, projects: Sequence[str] = ()) -> None:
    """Serve ``projects`` (ids or roots; else the config's, else the working directory's)."""
    from kenning.embedding import make_embedder
    from kenning.mcpserver.projects import Registry
    from kenning.mcpserver.server import build_server
    from kenning.mcpserver.service import Service

    registry = Registry(settings, projects)
    embedder = make_embedder(settings)
    try:
        build_server(Service(settings, registry, embedder)).run("stdio")
    finally:
        embedder.close()


__all__ = ["serve"]
