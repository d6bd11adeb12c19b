"""The MCP server over the shared index, through a real client session: code_search and
code_get_chunk with the id of a project published from elsewhere, find_repositories across the
shared index, and code_index_status with each project's published generation."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from index_helpers import FILES, make_repo
from kenning import config
from kenning.shared import publish
from kenning.store import Index
from kenning.store.shared_engine import release_all
from shared_helpers import require_engine
from test_mcp_server import serve, text_of
from test_shared_search import OTHER

require_engine()
pytest_plugins = ["index_helpers", "shared_helpers"]


def test_mcp_tools_reach_the_published_projects(tmp_path: Path, model: Any, shared_uri: str,
                                                monkeypatch: pytest.MonkeyPatch):
    uri = shared_uri
    monkeypatch.setenv("KENNING_SHARED_URI", uri)
    here = make_repo(tmp_path / "here", FILES)
    other = make_repo(tmp_path / "other", OTHER)
    settings = config.load()
    publish(other, settings, embedder=model)
    publish(here, settings, embedder=model)
    other_id = Index.open(other, settings, embedder=model).project_id
    (here / "app/db.py").write_text("def close(conn):\n    conn.close()\n")  # not published
    env = {name: os.environ[name] for name in ("KENNING_HOME", "KENNING_CONFIG", "PYTHONPATH")
           if name in os.environ}
    env.update(KENNING_SHARED_URI=uri, KENNING_SEARCH_BACKEND="both")
    release_all()  # an embedded engine's file is for one process at a time
    with serve(env, here, tmp_path / "mcp.log") as client:
        found = client.ok("code_search", query="printable invoice with taxes",
                          project=other_id).structured_content
        assert found["results"][0]["project"] == other_id
        assert found["results"][0]["path"] == "billing/invoice.py"
        # read back from the engine: this server has no checkout of it
        read = client.ok("code_get_chunk", id=found["results"][0]["id"]).structured_content
        assert "def render_invoice(order)" in read["content"] and not read["body_may_be_stale"]
        assert read["project"] == other_id
        repos = client.ok("find_repositories", query="printable invoice with taxes")
        assert repos.structured_content["repositories"][0]["project"] == other_id
        status = client.ok("code_index_status")
        published = status.structured_content["projects"][0]["published"]
        assert published["generation"] == 1
        assert published["local_generations_ahead"] == 1  # the edit since the publish
        assert published["files_ahead"] == {"added": 0, "changed": 1, "removed": 0}
        assert ("shared index: generation 1" in text_of(status)
                and "1 generation ahead, 1 file to publish (0 added, 1 changed, 0 removed)"
                in text_of(status))
