"""Search with ``search.backend`` shared and both, over milvus-lite (or KENNING_TEST_MILVUS_URI):
the published projects are ranked as local ones are, snippets come from a matching local file
or else from the engine, and an unreachable engine leaves the local results with a warning."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from kenning import config
from kenning.errors import UsageError
from kenning.search import ProjectRef, search
from kenning.shared import publish
from kenning.store import Index
from shared_helpers import require_engine

require_engine()
pytest_plugins = ["index_helpers", "shared_helpers"]

OTHER = {"billing/invoice.py": '''def render_invoice(order) -> str:
    """Format an order as a printable invoice with taxes and totals."""
    lines = [f"{item.name}: {item.price}" for item in order.items]
    return "\\n".join(lines)
''', "billing/README.md": "# Billing\n\nInvoices and payments.\n"}


def _settings(backend: str, uri: str) -> config.Settings:
    return config.load({"search.backend": backend, "shared.uri": uri,
                        "embedder.batch_size": "8", "embedder.concurrency": "1"})


@pytest.fixture
def two(tmp_path: Path, model: Any, shared_uri: str) -> Any:
    """The fixture repository here, and another project published from elsewhere."""
    from index_helpers import make_repo

    uri = shared_uri
    here = make_repo(tmp_path / "here")
    other = make_repo(tmp_path / "other", OTHER)
    publish(other, _settings("local", uri), embedder=model)
    return here, other, uri


def _ref(root: Path, settings: config.Settings, model: Any) -> ProjectRef:
    return ProjectRef(Index.open(root, settings, embedder=model, create=True).project_id, root)


def test_both_searches_this_checkout_here_and_the_other_project_in_the_engine(two: Any,
                                                                              model: Any):
    here, other, uri = two
    settings = _settings("both", uri)
    ref = _ref(here, settings, model)
    out = search("printable invoice with taxes", [ref], settings=settings, embedder=model)
    assert out["results"][0]["path"] == "billing/invoice.py"
    assert out["results"][0]["project"] != ref.id
    # no checkout of the other project here: the text published in the engine, not stale
    assert "render_invoice" in out["results"][0]["content"] and not out["results"][0]["stale"]
    out = search("exponential backoff for failed requests", [ref], settings=settings,
                 embedder=model)
    assert (out["results"][0]["project"], out["results"][0]["path"]) == (ref.id, "app/server.py")
    # a filter applies inside both: only the other project's markdown
    out = search("invoices and payments", [ref], settings=settings, embedder=model,
                 language="markdown", path_filter="billing")
    assert {(r["path"]) for r in out["results"]} == {"billing/README.md"}


def test_snippets_come_from_the_local_file_while_it_matches(two: Any, model: Any):
    _, other, uri = two
    settings = _settings("shared", uri)
    ref = _ref(other, settings, model)
    out = search("printable invoice", [ref], settings=settings, embedder=model)
    top = out["results"][0]
    assert top["path"] == "billing/invoice.py" and not top["stale"]
    invoice = other / "billing/invoice.py"
    invoice.write_text(invoice.read_text().replace("printable invoice", "PDF invoice"))
    out = search("printable invoice", [ref], settings=settings, embedder=model)
    top = out["results"][0]
    assert top["stale"] and "printable invoice" in top["content"]  # as published


def test_an_unreachable_engine_leaves_local_results_and_a_warning(two: Any, model: Any):
    here, _, _ = two
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = _settings("shared", f"http://127.0.0.1:{port}")
    ref = _ref(here, settings, model)
    out = search("exponential backoff for failed requests", [ref], settings=settings,
                 embedder=model)
    assert out["results"][0]["path"] == "app/server.py"
    assert any("Cannot reach the shared index" in w for w in out["warnings"])


def test_cli_searches_a_published_project_by_id(two: Any, model: Any,
                                                 monkeypatch: pytest.MonkeyPatch):
    from click.testing import CliRunner
    from kenning.cli import cli

    here, other, uri = two
    monkeypatch.setenv("KENNING_SHARED_URI", uri)
    monkeypatch.chdir(here)
    pid = _ref(other, config.load(), model).id
    result = CliRunner().invoke(cli, ["search", "invoice totals", "--backend", "shared",
                                      "--project", pid, "--json-output", "--no-refresh"])
    assert result.exit_code == 0, result.output
    hits = json.loads(result.output)["results"]
    assert hits and {h["project"] for h in hits} == {pid}
    index = Index.open(other, config.load(), embedder=model)
    with index.snapshot() as snap:  # the id of the published chunk in the local index
        ordinal = snap._conn.execute("SELECT id FROM chunks WHERE path = ? AND start_line = ?",
                                    (hits[0]["path"], hits[0]["start_line"])).fetchone()[0]
        assert hits[0]["id"] == snap.chunk_id(pid, ordinal)


def test_remove_index_shared_takes_a_project_out(two: Any, model: Any,
                                                 monkeypatch: pytest.MonkeyPatch):
    from click.testing import CliRunner
    from kenning.cli import cli

    here, other, uri = two
    monkeypatch.setenv("KENNING_SHARED_URI", uri)
    pid = _ref(other, config.load(), model).id
    result = CliRunner().invoke(cli, ["remove-index", "--shared", pid, "--json-output"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["chunks"] >= 2
    settings = _settings("shared", uri)
    out = search("printable invoice", [_ref(here, settings, model)], settings=settings,
                 embedder=model)
    assert not any(r["project"] == pid for r in out["results"])
    assert Index.open(other, settings, embedder=model).exists()  # the local index stays
    again = CliRunner().invoke(cli, ["remove-index", "--shared", pid])
    assert isinstance(again.exception, UsageError) and again.exception.exit_code == 2
    assert str(again.exception).startswith(f"{pid} is not in the shared index")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("swap", ["symlink", "fifo"])
def test_a_local_file_swapped_for_a_link_or_fifo_is_never_read(two: Any, model: Any,
                                                               tmp_path: Path, swap: str):
    import os

    _, other, uri = two
    settings = _settings("shared", uri)
    ref = _ref(other, settings, model)
    secret = tmp_path / "secret.txt"
    secret.write_text("def render_invoice(): SECRET_TOKEN_42\n")
    invoice = other / "billing/invoice.py"
    invoice.unlink()
    if swap == "symlink":
        invoice.symlink_to(secret)
    else:
        os.mkfifo(invoice)  # a plain open() would block here for ever
    out = search("printable invoice", [ref], settings=settings, embedder=model, refresh=False)
    top = out["results"][0]
    assert top["path"] == "billing/invoice.py" and top["stale"]
    assert "printable invoice" in top["content"] and "SECRET_TOKEN_42" not in top["content"]
