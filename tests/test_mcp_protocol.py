"""The MCP server's answers to bad requests, through a real stdio session: stable error JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kenning.project import project_id
from test_mcp_server import Client, World, serve

pytest_plugins = ["test_mcp_server"]  # fixtures: world (the indexed repositories)


@pytest.fixture(scope="module")
def server(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    log = tmp_path_factory.mktemp("logs") / "protocol.log"
    with serve(world.env(), world.alpha, log) as client:
        yield client


def test_error_json_is_golden(server: Client, world: World) -> None:
    served = project_id(world.alpha.resolve())
    result = server.call("code_search", query="retry", project="nope")
    assert result.is_error
    assert json.loads(result.content[0].text) == result.structured_content == {
        "error": "bad_input", "message": "Unknown project 'nope'.",
        "hint": f"Served projects: {served}."}
    assert server.error("code_get_chunk", id="not an id") == {
        "error": "bad_input", "message": "'not an id' is not a chunk id.",
        "hint": "Chunk ids look like <project>:<generation>:<ordinal>; use one from a "
                "code_search result."}
    assert server.error("code_search", query="  ") == {
        "error": "bad_input", "message": "The query is empty.",
        "hint": "Describe the code you are looking for."}
