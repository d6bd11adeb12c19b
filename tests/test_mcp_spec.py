"""The MCP server as the 2025-06-18 and 2025-11-25 revisions read: titles, output schemas (every
answer of these sessions is validated against its tool's, in ``Client.call``), input schemas
without null, chunks as resources, and sources sent once to a client that reads structured
content alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any

import anyio
import pytest
from kenning.mcpserver.budget import context_tokens
from kenning.mcpserver.schemas import ChunkAnswer
from kenning.mcpserver.server import _Server
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, ResourceLink, TextContent, TextResourceContents
from test_mcp_server import Client, World, serve, text_of

pytest_plugins = ["test_mcp_server"]  # fixtures: world (the indexed repositories), alpha


def _nulls(schema: Any, where: str = "") -> list[str]:
    """Where ``schema`` lets a value be null (a null type, a null enum member, a null default)."""
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "null" or "null" in (schema.get("type") or []):
            found.append(where)
        if None in (schema.get("enum") or []) or ("default" in schema and
                                                  schema["default"] is None):
            found.append(where)
        for key, value in schema.items():
            found += _nulls(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            found += _nulls(value, f"{where}/{i}")
    return found


def test_every_tool_has_a_title_an_output_schema_and_no_null_in_its_input(
        alpha: Client) -> None:
    for name, tool in alpha.tools().items():
        assert tool.title and tool.title != name, name
        assert tool.output_schema and tool.output_schema["type"] == "object", name
        assert _nulls(tool.input_schema) == [], name
    search = alpha.tools()["code_search"].input_schema["properties"]
    assert search["project"]["type"] == "string" and "python" in search["language"]["enum"]


def test_search_results_link_to_resources_that_read_their_declarations(alpha: Client) -> None:
    result = alpha.ok("code_search", query="RetryPolicy")
    hits = result.structured_content["results"]
    links = [block for block in result.content if block.type == "resource_link"]
    assert [str(link.uri) for link in links] == [hit["uri"] for hit in hits]
    assert links[0].name == f"{hits[0]['path']}:{hits[0]['start_line']}-{hits[0]['end_line']}"
    assert str(links[0].uri).startswith("kenning://chunk/")
    templates = alpha._await(alpha.session.list_resource_templates).resource_templates
    assert [t.uri_template for t in templates] == ["kenning://chunk/{id}"]
    read = alpha._await(lambda: alpha.session.read_resource(hits[0]["uri"]))
    [body] = read.contents
    assert isinstance(body, TextResourceContents)
    chunk = alpha.ok("code_get_chunk", id=hits[0]["id"]).structured_content
    assert chunk["uri"] == hits[0]["uri"]
    source = chunk["content"].split("\n", 1)[1].rsplit("\n", 1)[0]  # inside the wrapper
    assert source in body.text and "untrusted-content id=" in body.text


def test_a_resource_of_an_unknown_chunk_is_a_clear_error(alpha: Client) -> None:
    with pytest.raises(MCPError, match="Unknown project 'elsewhere-1234'"):
        alpha._await(lambda: alpha.session.read_resource(
            "kenning://chunk/elsewhere-1234:0a1b2c3d:1:1"))


@pytest.fixture(scope="module")
def claude(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    log = tmp_path_factory.mktemp("logs") / "claude.log"
    with serve(world.env(), world.alpha / "src", log, client="claude-code") as client:
        yield client


def _size(result: Any) -> tuple[int, int]:
    text = sum(len(block.text) for block in result.content if block.type == "text")
    return text, len(json.dumps(result.structured_content))


def test_a_client_that_reads_structured_content_gets_the_sources_once(
        alpha: Client, claude: Client) -> None:
    query = "sleep with exponential backoff between retries"
    both, once = alpha.ok("code_search", query=query), claude.ok("code_search", query=query)
    hits = once.structured_content["results"]
    nonce = once.structured_content["nonce"]
    assert hits and all(h["content"].startswith(f'<untrusted-content id="{nonce}"')
                        for h in hits)
    text = text_of(once)
    assert "untrusted-content id=" not in text.replace(f"markers with id {nonce}", "")
    assert all(h["id"] in text for h in hits)  # the text still names every result
    assert "structured content" in text
    assert [block.type for block in once.content] == ["text"]  # no links it would not show
    assert [h["id"] for h in hits] == [h["id"] for h in both.structured_content["results"]]
    # the sources left the text (each once there before), the structured content is the same
    bodies = sum(len(h["content"]) for h in hits)
    assert _size(once)[0] + bodies <= _size(both)[0] + 100
    assert _size(once)[1] == pytest.approx(_size(both)[1], rel=0.05)
    chunk = claude.ok("code_get_chunk", id=hits[0]["id"])
    assert "untrusted-content id=" not in text_of(chunk).replace(
        f"markers with id {chunk.structured_content['nonce']}", "")
    assert "class RetryPolicy" in chunk.structured_content["content"] or \
        "def backoff_delay" in chunk.structured_content["content"]


@pytest.mark.parametrize("tokens", [500, 1500])
def test_a_budget_bounds_the_whole_answer_whichever_part_the_client_reads(
        alpha: Client, claude: Client, tokens: int) -> None:
    query = "handle a request: validate the payload and store it"
    for client in (alpha, claude):
        result = client.ok("code_search", query=query, budget_tokens=tokens, limit=20)
        data = result.structured_content
        assert data["results"] and data["budget"]["tokens"] == tokens
        shown = []
        for block in result.content:
            assert isinstance(block, ResourceLink | TextContent), block.type
            shown.append(f"{block.name} {block.uri}" if isinstance(block, ResourceLink)
                         else block.text)
        text = "\n".join(shown)
        # headers, ids, wrappers and JSON keys count: all the model may receive
        assert context_tokens(text) <= tokens, text
        assert context_tokens(json.dumps(data)) <= tokens
        assert data["budget"]["used"] <= tokens


def test_an_answer_that_fails_its_own_schema_is_an_internal_error_not_bad_input() -> None:
    def broken(id: str) -> Annotated[CallToolResult, ChunkAnswer]:
        return CallToolResult(content=[TextContent(type="text", text=id)],
                              structured_content={"type": "chunk"})

    server = _Server("kenning")
    server.add_tool(broken)
    answer = anyio.run(server.call_tool, "broken", {"id": "x"})
    assert answer.is_error and answer.structured_content["error"] == "internal_error"
    refused = anyio.run(server.call_tool, "broken", {"id": 3})
    assert refused.structured_content["error"] == "bad_input"
