"""``kenning mcp``: the MCP server over stdio, for Claude Code, Codex and other agents."""

from __future__ import annotations

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--project", "-P", "projects", multiple=True, metavar="PATH_OR_ID",
              help="Serve this project (a root path or a configured id); repeatable. "
                   "Default: the config's [[projects]], else the working directory's project.")
def mcp(projects: tuple[str, ...]) -> None:
    """Run the MCP server over stdio.

    Register it with `claude mcp add kenning -- kenning mcp` (`kenning setup-agent` does).
    Tools: code_search, code_get_chunk, code_index_status, code_reindex, and
    find_repositories when more than one project is served.
    """
    from kenning import config
    from kenning.mcpserver import serve

    serve(config.load(), projects)
