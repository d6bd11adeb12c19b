"""One freshness policy: the CLI and an agent (a real MCP session) see the same index alike."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from index_helpers import kenning_cli
from kenning import config
from kenning.indexing.indexer import refresh
from kenning.retrieval import ProjectRef
from kenning.services.freshness import Freshness, Policy
from kenning.services.search import search
from test_mcp_server import ALPHA, serve, write_tree

# what only the MCP server adds to the status record: its own session's state
MCP_ONLY = {"progress", "last_refresh"}


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = kenning_cli(capsys, *args, "--json-output")
    assert code == 0, err
    return dict(json.loads(out))


def _env() -> dict[str, str]:
    """The server's environment: this test's home and config, the sources under test."""
    keys = ("PYTHONPATH", "KENNING_KERNELS", "KENNING_HOME", "KENNING_CONFIG",
            "KENNING_EMBEDDER_SERVICE")
    return {**{k: os.environ[k] for k in keys if k in os.environ},
            "KENNING_MCP_REFRESH_INTERVAL": "0"}


@pytest.fixture
def root(tmp_path: Path, local_model: None) -> Path:
    root = write_tree(tmp_path / "alpha", {k: ALPHA[k] for k in ("src/retry.py",
                                                                 "src/parse.py")})
    refresh(root, config.load())
    return root


def test_an_edit_is_found_alike_by_the_cli_and_an_agent(
        root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edits = [("src/late.py", "def zebra_quokka_marker():\n    return 42\n", "zebra_quokka_marker"),
             ("src/later.py", "def okapi_tapir_marker():\n    return 7\n", "okapi_tapir_marker")]
    with serve(_env(), tmp_path, tmp_path / "server.log", "--project", str(root)) as agent:
        for first, (path, text, symbol) in zip(("cli", "agent"), edits, strict=True):
            (root / path).write_text(text)
            searches = {}
            for who in (first, "agent" if first == "cli" else "cli"):  # each first once
                searches[who] = (_cli(capsys, "search", symbol, str(root)) if who == "cli" else
                                 agent.ok("code_search", query=symbol).structured_content)
            for who, found in searches.items():
                top = found["results"][0]
                assert (top["path"], top["symbol"], top["stale"]) == (path, symbol, False), who
                assert found["warnings"] == [], (who, found["warnings"])
            assert searches["cli"]["results"][0]["id"] == searches["agent"]["results"][0]["id"]
        cli_status = _cli(capsys, "status", str(root))
        agent_status = agent.ok("code_index_status").structured_content["projects"][0]
    assert {k: v for k, v in agent_status.items() if k not in MCP_ONLY} == cli_status
    assert cli_status["state"] == "ready" and cli_status["healthy"]
    assert cli_status["chunks_embedded"] == cli_status["chunks"]


def test_a_backlog_too_large_to_embed_is_returned_not_embedded(root: Path) -> None:
    """Above the limit the search answers at once, says so, and hands the project back for
    its vectors to be computed in the background; below it they are embedded first."""
    settings = config.load()
    refs = [ProjectRef("alpha", root)]
    (root / "src/late.py").write_text("def zebra_quokka_marker():\n    return 42\n")
    result = search("zebra_quokka_marker", refs, settings=settings,
                    freshness=Freshness(Policy(sync_embed_limit=0)))
    assert result["results"][0]["symbol"] == "zebra_quokka_marker"
    assert result["vectors_deferred"] == [str(root)]
    assert any("is incomplete" in w and "until the rest are computed" in w
               for w in result["warnings"])
    result = search("zebra_quokka_marker", refs, settings=settings)  # the default limit: 64
    assert result["vectors_deferred"] == [] and result["warnings"] == []


def test_another_process_indexing_is_said_once_while_it_lasts(root: Path) -> None:
    """A session's searches meet another process's indexing: the first is told, the next are
    not (nothing changed), and a new spell of it is told again."""
    from filelock import FileLock
    from kenning.embedding import make_embedder
    from kenning.store import LOCK_NAME, Index

    settings = config.load()
    embedder = make_embedder(settings)
    freshness = Freshness(Policy(sync_embed_limit=None))
    lock = FileLock(Index.open(root, settings).dir / LOCK_NAME, timeout=0)

    def told() -> list[bool]:
        return ["is being indexed by another process" in " ".join(
            freshness.refresh(root, settings, embedder).warnings) for _ in range(2)]

    for _ in range(2):
        with lock:
            assert told() == [True, False]
        assert told() == [False, False]
