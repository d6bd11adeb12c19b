"""Faults of the shared index as the front ends report them: a token the server refuses (a real
gRPC server on loopback that answers as an authenticating Milvus does) and an engine nobody
listens for. Each is one sentence and the documented exit code (6 refused, 5 unreachable) or a
structured MCP error, and the token never appears in anything kenning writes."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from index_helpers import kenning_cli, make_repo
from kenning import config
from kenning.errors import IndexMissing
from kenning.store import Index
from milvus_auth_server import AuthServer, refusing_server
from test_mcp_server import serve

pytest.importorskip("pymilvus")
pytest_plugins = ["index_helpers"]

SECRET = "kenning:not-the-password-7f3a"


@pytest.fixture(scope="module")
def server() -> Iterator[AuthServer]:
    with refusing_server() as found:
        yield found


@pytest.fixture
def refusing(server: AuthServer, monkeypatch: pytest.MonkeyPatch) -> AuthServer:
    monkeypatch.setenv("KENNING_SHARED_URI", server.uri)
    monkeypatch.setenv("MILVUS_TOKEN", SECRET)
    server.calls.clear()
    return server


def _refused(code: int, out: str, err: str, server: AuthServer) -> None:
    assert code == 6, err
    assert SECRET not in out + err
    lines = err.strip().splitlines()
    assert lines[0] == (f"Error: The shared index at {server.uri} refused the token in "
                        "$MILVUS_TOKEN while connecting.")
    assert [line.split(":")[0] for line in lines] == ["Error", "Hint"]
    assert server.calls and all(sent == SECRET for _, sent in server.calls)  # it was sent


def test_publish_with_a_refused_token_stops_before_indexing(refusing: AuthServer, repo: Path,
                                                             capsys: pytest.CaptureFixture[str]):
    _refused(*kenning_cli(capsys, "publish", str(repo)), refusing)
    _refused(*kenning_cli(capsys, "publish", str(repo), "--json-output"), refusing)
    with pytest.raises(IndexMissing):  # nothing was indexed for a publish that cannot happen
        Index.open(repo, config.load())


@pytest.mark.parametrize("backend", ["shared", "both"])
def test_search_with_a_refused_token_is_exit_6(refusing: AuthServer, repo: Path, backend: str,
                                               model: Any, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch):
    from kenning.indexing.indexer import refresh

    # indexed here, so `both` searches this checkout locally before it asks the engine
    assert refresh(repo, config.load(), embedder=model).status == "complete"
    monkeypatch.chdir(repo)
    _refused(*kenning_cli(capsys, "search", "exponential backoff", "--backend", backend),
             refusing)


def test_a_missing_token_is_named_as_missing(refusing: AuthServer, repo: Path,
                                             capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("MILVUS_TOKEN")
    code, _, err = kenning_cli(capsys, "publish", str(repo))
    assert code == 6
    assert "refused a connection without a token ($MILVUS_TOKEN is empty)" in err


def test_mcp_code_search_with_a_refused_token_is_a_structured_error(
        server: AuthServer, tmp_path: Path):
    log = tmp_path / "mcp.log"
    here = make_repo(tmp_path / "here")
    env = {name: os.environ[name] for name in ("KENNING_HOME", "KENNING_CONFIG", "PYTHONPATH")
           if name in os.environ}
    env.update(KENNING_SHARED_URI=server.uri, MILVUS_TOKEN=SECRET,
               KENNING_SEARCH_BACKEND="both")
    with serve(env, here, log) as client:  # a project published from elsewhere
        body = client.error("code_search", query="exponential backoff",
                            project="example.com/team/elsewhere")
        assert body["error"] == "shared_auth_refused"
        assert body["message"] == (f"The shared index at {server.uri} refused the token in "
                                   "$MILVUS_TOKEN while connecting.")
        assert SECRET not in json.dumps(body)
    assert SECRET not in log.read_text()


def test_publish_to_an_engine_nobody_listens_for_is_exit_5(repo: Path,
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends: nothing listens there
    monkeypatch.setenv("KENNING_SHARED_URI", f"http://127.0.0.1:{port}")
    code, out, err = kenning_cli(capsys, "publish", str(repo))
    assert code == 5
    assert err.strip().splitlines() == [
        f"Error: Cannot reach the shared index at http://127.0.0.1:{port} while connecting.",
        "Hint: Check shared.uri and that the server is running."]



@pytest.mark.parametrize("uri", ["/sys/kenning-test-shared/shared.db", "/proc/kenning-test.db"])
def test_a_shared_file_where_nothing_can_be_written_is_one_sentence(
        repo: Path, settings: config.Settings, model: Any, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, uri: str) -> None:
    from kenning.indexing.indexer import refresh

    refresh(repo, settings, embedder=model)
    monkeypatch.setenv("KENNING_SHARED_URI", uri)
    code, _, err = kenning_cli(capsys, "publish", str(repo))
    assert code != 0 and f"Cannot open the shared index file {uri}" in err, err
    code, out, _ = kenning_cli(capsys, "status", str(repo), "--json-output")
    problem = json.loads(out)["published"]["problem"]
    assert code == 0 and problem["error"] == "shared_index_failed", problem
    for backend in ("both", "shared"):
        monkeypatch.setenv("KENNING_SEARCH_BACKEND", backend)
        code, out, err = kenning_cli(capsys, "search", "open the database", str(repo),
                                     "--no-refresh")
        assert "Cannot open the shared index file" in err, (backend, err)
        assert code == 0 and "app/db.py" in out  # the local index answers, with the warning


def test_a_lite_engine_leaves_no_log_file_outside_kenning_home(
        repo: Path, settings: config.Settings, model: Any, tmp_path: Path) -> None:
    import subprocess
    import sys

    from kenning.indexing.indexer import refresh

    refresh(repo, settings, embedder=model)
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GLOG_", "RUST_LOG"))}
    env.update(TMPDIR=str(tmpdir), KENNING_SHARED_URI=str(tmp_path / "shared.db"))
    for command in (["publish", str(repo)], ["status", str(repo)]):
        done = subprocess.run([sys.executable, "-m", "kenning", *command], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmpdir.iterdir()) == []
