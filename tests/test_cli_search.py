"""The search, status, stats, remove-index and doctor commands, run in-process through main()."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from index_helpers import kenning_cli

if TYPE_CHECKING:
    from search_fixtures import Indexed

pytest_plugins = ["search_fixtures"]


def test_search_json_output(indexed: Indexed, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = kenning_cli(capsys, "search", "parse_header", str(indexed.root), "--json-output",
                           "--no-refresh", "--limit", "3")
    assert code == 0
    result = json.loads(out)
    assert result["type"] == "search_result" and len(result["results"]) <= 3
    assert result["results"][0]["symbol"] == "parse_header"


def test_search_for_people(indexed: Indexed, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = kenning_cli(capsys, "search", "evict the least recently used entries",
                           str(indexed.root), "--no-refresh", "--max-snippet-lines", "3")
    assert code == 0
    assert "src/storage/cache.py:4-18" in out and "LruCache" in out
    assert "more lines" in out  # the snippet was cut to 3 lines


def test_search_filters_and_projects(indexed: Indexed, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = kenning_cli(capsys, "search", "match a url to a handler", "--project",
                           str(indexed.root), "--project", str(indexed.other), "--lang",
                           "javascript", "--json-output", "--no-refresh")
    assert code == 0
    paths = {h["path"] for h in json.loads(out)["results"]}
    assert paths == {"web/router.js"}


@pytest.mark.parametrize(("args", "code"), [
    (["-p", "../outside"], 2),
    (["--limit", "0"], 2),
])
def test_search_bad_input_exits_cleanly(indexed: Indexed, capsys: pytest.CaptureFixture[str],
                                        args: list[str], code: int) -> None:
    got, _, err = kenning_cli(capsys, "search", "retry", str(indexed.root), "--no-refresh", *args)
    assert got == code and err.strip()


@pytest.mark.parametrize(("language", "kind", "path"), [
    ("py", "functions", "src/http/headers.py"), ("PY", "def", "src/http/headers.py"),
    ("js", None, "web/router.js"), (".js", "classes", "web/router.js"),
    (None, "doc", "docs/configuration.md")])
def test_search_filter_aliases(indexed: Indexed, capsys: pytest.CaptureFixture[str],
                               language: str | None, kind: str | None, path: str) -> None:
    args = [*(["--lang", language] if language else []), *(["--kind", kind] if kind else [])]
    query = {"src/http/headers.py": "parse a header line", "web/router.js": "Router",
             "docs/configuration.md": "configuration"}[path]
    code, out, _ = kenning_cli(capsys, "search", query, str(indexed.root),
                           "--no-refresh", "--json-output", *args)
    hits = json.loads(out)["results"]
    assert code == 0 and hits and hits[0]["path"] == path


@pytest.mark.parametrize(("args", "valid"), [
    (["--lang", "klingon"], "python, r, rst, ruby, rust"),
    (["--lang", "rs2"], "typescript"),
    (["--kind", "functions2"], "class, enum, extension, function"),
    (["--kind", ""], None)])
def test_search_unknown_filter_values_list_the_valid_ones(
        indexed: Indexed, capsys: pytest.CaptureFixture[str], args: list[str],
        valid: str | None) -> None:
    code, out, err = kenning_cli(capsys, "search", "retry", str(indexed.root), "--no-refresh",
                                 *args)
    if valid is None:  # an empty value filters nothing
        assert code == 0
        return
    assert code == 2 and not out and err.startswith("Error: Unknown")
    assert valid in err


def test_search_missing_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = kenning_cli(capsys, "search", "retry", str(tmp_path / "nope"))
    assert code == 2 and err.startswith("Error:") and "not a directory" in err


def test_status(indexed: Indexed, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = kenning_cli(capsys, "status", str(indexed.root), "--json-output")
    assert code == 0
    info = json.loads(out)
    assert info["healthy"] is True and info["chunks"] == info["chunks_embedded"] > 0
    assert info["model"] == "all-MiniLM-L6-v2" and info["dims"] == 384
    assert info["changed_since"] == {"added": 0, "changed": 0, "removed": 0}
    code, out, _ = kenning_cli(capsys, "status", str(indexed.root))
    assert code == 0 and "healthy" in out and "0 changed" in out


def test_status_without_index(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = kenning_cli(capsys, "status", str(tmp_path))
    assert code == 0 and "state      not indexed" in out and "kenning index" in out


def test_stats_counts_searches(indexed: Indexed, capsys: pytest.CaptureFixture[str]) -> None:
    kenning_cli(capsys, "search", "parse_header", str(indexed.root), "--no-refresh",
                "--json-output")
    code, out, _ = kenning_cli(capsys, "stats", "--json-output")
    info = json.loads(out)
    assert code == 0 and info["searches"] >= 1 and info["latency_ms_p50"] > 0
    code, out, _ = kenning_cli(capsys, "stats")
    assert code == 0 and "searches" in out


def test_remove_index(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def alpha():\n    return 1\n")
    assert kenning_cli(capsys, "index", str(tmp_path), "--quiet")[0] == 0
    code, out, _ = kenning_cli(capsys, "search", "alpha", str(tmp_path), "--json-output")
    assert code == 0 and json.loads(out)["results"][0]["symbol"] == "alpha"
    code, out, _ = kenning_cli(capsys, "remove-index", str(tmp_path), "--json-output")
    removed = json.loads(out)["removed"]
    assert code == 0 and len(removed) == 1 and not Path(removed[0]).exists()
    code, _, err = kenning_cli(capsys, "remove-index", str(tmp_path))
    assert code == 4 and "no index" in err
    code, out, _ = kenning_cli(capsys, "remove-index", "--all")
    assert code == 0


def test_doctor(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = kenning_cli(capsys, "doctor", "--json-output")
    report = json.loads(out)
    assert code == 0 and report["ok"] is True
    assert [c["check"] for c in report["checks"]] == [
        "config", "kernels", "embedder", "runtime", "index writable", "search round trip",
        "index integrity"]


def test_doctor_reports_an_unreachable_embedder(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("KENNING_EMBEDDER_BACKEND", "ollama")
    monkeypatch.setenv("KENNING_EMBEDDER_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("KENNING_EMBEDDER_MODEL", "all-minilm")
    code, out, _ = kenning_cli(capsys, "doctor")
    assert code == 1 and "FAIL embedder" in out and "fix:" in out


def test_a_query_byte_that_is_not_utf8_is_searched_as_a_replacement(
        indexed: Indexed, capsys: pytest.CaptureFixture[str]) -> None:
    query = "parse\udcff header"  # how Python hands over the argument b"parse\xff header"
    code, out, err = kenning_cli(capsys, "search", query, str(indexed.root), "--no-refresh",
                                 "--json-output")
    assert code == 0, err
    assert json.loads(out)["query"] == "parse\ufffd header"
