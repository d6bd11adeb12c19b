"""kenning's Python API: the example of docs/api.md run against a real repository with the
embedded model, typed records that serialise to the CLI's JSON, a cheap import, and no usage
log written by a program that calls it."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import kenning
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kenning import usage_log
from kenning.cli import cli

if TYPE_CHECKING:
    from search_fixtures import Indexed

pytest_plugins = ["search_fixtures"]  # the indexed fixture repositories

DOCS = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def cli_json(*args: str) -> dict:
    done = CliRunner().invoke(cli, [*args, "--json-output"])
    assert done.exit_code == 0, done.output
    found: dict = json.loads(done.output)
    return found


def test_the_example_of_docs_api_runs_and_writes_no_usage_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from search_fixtures import REPO, write_repo

    example = re.search(r"<!-- example -->\n```python\n(.*?)```", DOCS.read_text(), re.S)
    assert example is not None
    monkeypatch.chdir(write_repo(tmp_path / "repo", REPO))
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        exec(compile(example.group(1), str(DOCS), "exec"), {})  # noqa: S102 - our own docs
    lines = shown.getvalue().splitlines()
    assert re.fullmatch(r"7 files, \d+ chunks, \d+ vectors embedded", lines[0])
    assert lines[1].startswith("src/http/retry.py:")  # the retry code ranks first
    assert "def call_with_retries" in shown.getvalue() or "class RetryPolicy" in shown.getvalue()
    assert re.search(r"^\d+ chunks, \d+ with vectors, healthy: True$", shown.getvalue(), re.M)
    assert lines[-1] == '{"type": "search_result", "query": "how are failed requests '
    assert not usage_log.log_path().exists()  # a library call keeps no log; the CLI does
    cli_json("search", "retry", "--no-refresh")
    assert [e["event"] for e in usage_log.read()] == ["search"]


def test_records_serialise_to_the_json_of_the_cli(indexed: Indexed) -> None:
    root = str(indexed.root)
    found = kenning.search("evict the least recently used entries", root, refresh=False)
    assert isinstance(found.results[0], kenning.Hit) and found.results[0].symbol == "LruCache"
    assert found.to_dict() == cli_json("search", "evict the least recently used entries", root,
                                       "--no-refresh")
    assert kenning.SearchResult.from_dict(found.to_dict()) == found
    chunk = kenning.get_chunk(found.results[0].id, root, scope="chunk")
    assert chunk.to_dict()["type"] == "chunk" and "def evict" in chunk.content
    status = kenning.status(root)
    assert status.to_dict() == cli_json("status", root)
    assert status.healthy and status.chunks == status.chunks_embedded > 0
    with pytest.raises(ValueError, match="not a search_result record"):
        kenning.SearchResult.from_dict({**found.to_dict(), "extra": 1})


def test_index_returns_a_frozen_index_run_that_is_the_last_line_of_the_cli(
        tmp_path: Path) -> None:
    import dataclasses

    from search_fixtures import REPO, write_repo

    root = write_repo(tmp_path / "repo", REPO)
    run = kenning.index(root)
    assert isinstance(run, kenning.IndexRun) and run.files == 7 and not run.nothing_changed
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.files = 0  # type: ignore[misc]
    assert kenning.IndexRun.from_dict(run.to_dict()) == run
    again = CliRunner().invoke(cli, ["index", str(root), "--json-output"])
    last = json.loads(again.output.splitlines()[-1])
    assert again.exit_code == 0 and last["type"] == "finished" and last["nothing_changed"]
    assert kenning.IndexRun.from_dict(last).files == run.files


def test_doctor_runs_from_the_library_and_its_record_is_the_json_of_the_cli(
        indexed: Indexed, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(indexed.root)
    report = kenning.doctor(indexed.root)
    assert isinstance(report, kenning.Doctor) and report.ok
    assert [c.check for c in report.checks] == [
        "config", "kernels", "embedder", "runtime", "index writable", "search round trip",
        "index integrity"]
    assert str(indexed.root) in report.checks[-1].detail  # the project's indexes, in full
    assert kenning.Doctor.from_dict(report.to_dict()) == report
    cli = cli_json("doctor")
    assert [c["check"] for c in cli["checks"]] == [c.check for c in report.checks]
    assert cli["ok"] is True and set(cli) == {"type", "ok", "checks"}


def test_doctor_reports_a_failure_as_a_check_with_its_fix(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = kenning.load_settings({"embedder.backend": "ollama",
                                      "embedder.url": f"http://127.0.0.1:{port}",
                                      "embedder.model": "all-minilm"})
    report = kenning.doctor(tmp_path, settings=settings)
    failed = {c.check: c for c in report.checks if not c.ok}
    assert not report.ok and list(failed) == ["embedder"] and failed["embedder"].fix
    assert "search round trip" not in [c.check for c in report.checks]  # it needs the embedder


def test_paths_takes_one_project_or_several(indexed: Indexed) -> None:
    both = kenning.search("area of a circle", [indexed.root, str(indexed.other)], refresh=False,
                          limit=20)
    assert {hit.project for hit in both.results} == {
        kenning.search("x", indexed.root, refresh=False).results[0].project,
        kenning.search("circle_area", indexed.other, refresh=False).results[0].project}
    assert both.revision is None  # several projects


def test_bad_input_raises_the_documented_errors(indexed: Indexed, tmp_path: Path) -> None:
    with pytest.raises(kenning.UsageError, match="is not a directory, nor a configured"):
        kenning.search("x", tmp_path / "nowhere")
    with pytest.raises(kenning.UsageError, match="escapes the project root"):
        kenning.search("x", indexed.root, path_filter="../elsewhere", refresh=False)
    with pytest.raises(kenning.ConfigError, match="from the overrides passed to load_settings"):
        kenning.load_settings({"search.limit": "many"})
    assert kenning.status(tmp_path).state == "not indexed"
    assert issubclass(kenning.StaleChunkId, kenning.UsageError)
    assert issubclass(kenning.IndexMissing, kenning.KenningError)


def test_settings_passed_to_a_call_are_used(indexed: Indexed) -> None:
    settings = kenning.load_settings({"search.limit": "3"})
    assert isinstance(settings, kenning.Settings) and settings["search.limit"] == 3
    assert settings.origin("search.limit") == "flag"
    found = kenning.search("request", indexed.root, limit=2, refresh=False, settings=settings)
    assert len(found.results) == 2


def test_import_kenning_loads_no_heavy_module() -> None:
    probe = ("import sys, kenning; kenning.search; kenning.Settings; kenning.KenningError; "
             "print(' '.join(sorted(sys.modules)))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True).stdout.split()
    heavy = [m for m in loaded if m.split(".")[0] in ("numpy", "onnxruntime", "tree_sitter",
                                                       "tokenizers", "sqlite3", "httpx")]
    assert heavy == []
    assert "kenning.retrieval" not in loaded and "kenning.store" not in loaded


def test_importing_the_internals_leaves_the_api_names_alone() -> None:
    import kenning.services.search  # noqa: F401 - its import binds kenning.services on kenning

    assert callable(kenning.search) and kenning.search.__module__ == "kenning.services.library"
    assert sorted(kenning.__all__) == kenning.__all__


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(query=st.text(st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr)),
                    max_size=40))
def test_any_query_text_is_searched_or_refused_in_one_sentence(indexed: Indexed,
                                                                query: str) -> None:
    try:
        found = kenning.search(query, indexed.root, refresh=False)
    except kenning.UsageError as exc:
        assert exc.message.startswith("The query is")
    else:
        assert not any("\ud800" <= c <= "\udfff" for c in found.query)


WRONG = [None, 2.5, True, 7, b"x", ["x"], {"a": 1}, object(), ("x", 3)]
CALLS = {  # each argument of each call, with the values of its own type that are right
    "search.query": (lambda root, v: kenning.search(v, root, refresh=False), (str,)),
    "search.paths": (lambda root, v: kenning.search("x", v, refresh=False), ()),
    "search.limit": (lambda root, v: kenning.search("x", root, limit=v, refresh=False), (int,)),
    "search.path_filter": (lambda root, v: kenning.search("x", root, path_filter=v,
                                                          refresh=False), (type(None),)),
    "search.kind": (lambda root, v: kenning.search("x", root, kind=v, refresh=False),
                    (type(None),)),
    "search.language": (lambda root, v: kenning.search("x", root, language=v, refresh=False),
                        (type(None),)),
    "search.refresh": (lambda root, v: kenning.search("x", root, refresh=v), (bool,)),
    "search.settings": (lambda root, v: kenning.search("x", root, refresh=False, settings=v),
                        (type(None),)),
    "get_chunk.id": (lambda root, v: kenning.get_chunk(v, root), ()),
    "get_chunk.scope": (lambda root, v: kenning.get_chunk("a:b:1:1", root, scope=v), ()),
    "get_chunk.context_lines": (lambda root, v: kenning.get_chunk("a:b:1:1", root,
                                                                  context_lines=v), ()),
    "status.path": (lambda root, v: kenning.status(v), ()),
    "status.settings": (lambda root, v: kenning.status(root, settings=v), (type(None),)),
    "doctor.path": (lambda root, v: kenning.doctor(v), ()),
    "load_settings": (lambda root, v: kenning.load_settings(v), (type(None), dict)),
    "index.full": (lambda root, v: kenning.index(root, full=v,
                                                 settings={"x": 1}),  # type: ignore[arg-type]
                   ()),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_wrongly_typed_argument_is_a_kenning_error(indexed: Indexed, call: str) -> None:
    run, right = CALLS[call]
    for value in WRONG:
        if type(value) in right:
            continue
        try:
            run(indexed.root, value)
        except kenning.KenningError as exc:
            assert "Traceback" not in exc.message
        except Exception as exc:  # noqa: BLE001 - what this test is about
            pytest.fail(f"{call}={value!r} raised {type(exc).__name__}: {exc}")
