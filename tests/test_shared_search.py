"""Search with ``search.backend`` shared and both, over milvus-lite (or KENNING_TEST_MILVUS_URI):
the published projects are ranked as local ones are, snippets come from a matching local file
or else from the engine, and an unreachable engine leaves the local results with a warning."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from index_helpers import make_repo
from kenning import config
from kenning.errors import StaleChunkId, UsageError
from kenning.retrieval import ProjectRef
from kenning.services.chunks import get_chunk
from kenning.services.search import search
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


LONG = ("import functools\n\n\n@functools.lru_cache\ndef calibrate_sensor(reading):\n"
        '    """Turn a raw sensor reading into degrees."""\n'
        + "".join(f"    total_{i} = reading.value * {i} + offset_{i}\n" for i in range(45))
        + "    celsius = (total_44 - 32) * 5 / 9  # fahrenheit to celsius conversion\n"
        + "    return celsius\n\n\ndef unrelated_helper(x):\n    return x + 1\n")
OTHER_FILES = {**OTHER, "sensor/calibrate.py": LONG}
# the projects a test publishes for itself say other things than the module's
RECEIPT = {"receipts/print.py": 'def print_receipt(sale):\n    """Format a sale as a receipt '
           'for the till."""\n    return str(sale)\n'}


def _settings(backend: str, uri: str) -> config.Settings:
    return config.load({"search.backend": backend, "shared.uri": uri,
                        "embedder.batch_size": "8", "embedder.concurrency": "1"})


@dataclass
class World:
    home: Path
    here: Path  # indexed here, not published
    other: Path  # published, as from another machine
    uri: str


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, module_shared_uri: str, model: Any) -> World:
    """The fixture repository indexed here, and another project published; once per module
    (tests that change what is published publish projects of their own)."""
    from kenning.indexing.indexer import refresh

    base = tmp_path_factory.mktemp("world")
    found = World(base / "home", make_repo(base / "here"), make_repo(base / "other", OTHER_FILES),
                  module_shared_uri)
    with pytest.MonkeyPatch.context() as patch:
        _use_home(patch, found.home)
        settings = _settings("local", found.uri)
        assert refresh(found.here, settings, embedder=model).status == "complete"
        publish(found.other, settings, embedder=model)
    return found


def _use_home(patch: pytest.MonkeyPatch, home: Path) -> None:
    patch.setenv("KENNING_HOME", str(home / "data"))
    patch.setenv("KENNING_CONFIG", str(home / "config.toml"))


@pytest.fixture
def two(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path, str]]:
    """The module's projects, in its home; the other checkout is put back as published after
    a test changed it."""
    _use_home(monkeypatch, world.home)
    yield world.here, world.other, world.uri
    for name, text in OTHER_FILES.items():
        path = world.other / name
        if path.is_symlink() or not path.is_file() or path.read_text() != text:
            path.unlink(missing_ok=True)
            path.write_text(text)


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
    out = search("printable invoice", [ref], settings=settings, embedder=model,
                 shared_projects=[ref.id])
    top = out["results"][0]
    assert top["path"] == "billing/invoice.py" and not top["stale"]
    invoice = other / "billing/invoice.py"
    invoice.write_text(invoice.read_text().replace("printable invoice", "PDF invoice"))
    out = search("printable invoice", [ref], settings=settings, embedder=model,
                 shared_projects=[ref.id])
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
        [ordinal] = [chunk.id for chunk in snap.file_chunks([hits[0]["path"]])[hits[0]["path"]]
                     if chunk.start_line == hits[0]["start_line"]]
        assert hits[0]["id"] == snap.chunk_id(pid, ordinal)


def test_an_unknown_project_on_the_shared_backend_is_one_sentence(
        two: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    from index_helpers import kenning_cli

    here, _, uri = two
    monkeypatch.setenv("KENNING_SHARED_URI", uri)
    monkeypatch.chdir(here)
    code, out, err = kenning_cli(capsys, "search", "invoice totals", "--backend", "shared",
                                 "--project", "no-such-project", "--no-refresh")
    assert code == 2 and not out, (out, err)
    assert "No project 'no-such-project' is published in the shared index at" in err


def test_remove_index_shared_takes_a_project_out(two: Any, model: Any, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch):
    from click.testing import CliRunner
    from kenning.cli import cli

    here, _, uri = two
    monkeypatch.setenv("KENNING_SHARED_URI", uri)
    gone = make_repo(tmp_path / "gone", RECEIPT)
    publish(gone, config.load(), embedder=model)
    pid = _ref(gone, config.load(), model).id
    result = CliRunner().invoke(cli, ["remove-index", "--shared", pid, "--json-output"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["chunks"] >= 1
    settings = _settings("shared", uri)
    out = search("receipt for the till", [_ref(here, settings, model)], settings=settings,
                 embedder=model)
    assert out["results"] and not any(r["project"] == pid for r in out["results"])
    assert Index.open(gone, settings, embedder=model).exists()  # the local index stays
    again = CliRunner().invoke(cli, ["remove-index", "--shared", pid])
    assert isinstance(again.exception, UsageError) and again.exception.exit_code == 2
    assert str(again.exception).startswith(f"{pid} is not in the shared index")


def test_status_says_how_far_the_checkout_is_ahead_of_what_was_published(
        two: Any, model: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch):
    from index_helpers import kenning_cli
    from kenning.indexing.indexer import refresh

    _, _, uri = two
    monkeypatch.setenv("KENNING_SHARED_URI", uri)
    solo = make_repo(tmp_path / "solo", RECEIPT)
    publish(solo, config.load(), embedder=model)
    code, out, _ = kenning_cli(capsys, "status", str(solo), "--json-output")
    published = json.loads(out)["published"]
    assert code == 0 and published["generation"] == 1
    assert (published["local_generations_ahead"], published["files_ahead"]) == (
        0, {"added": 0, "changed": 0, "removed": 0})
    (solo / "receipts/print.py").write_text("def print_receipt(sale):\n    return ''\n")
    (solo / "receipts/tax.py").write_text("def tax(amount):\n    return amount * 0.2\n")
    assert refresh(solo, config.load(), embedder=model).status == "complete"
    code, out, _ = kenning_cli(capsys, "status", str(solo), "--json-output")
    published = json.loads(out)["published"]
    assert (published["local_generations_ahead"], published["files_ahead"]) == (
        1, {"added": 1, "changed": 1, "removed": 0})
    code, out, _ = kenning_cli(capsys, "status", str(solo))
    assert code == 0 and ("local snapshot 1 generation ahead, 2 files to publish (1 added, "
                          "1 changed, 0 removed)") in out


def test_get_chunk_reads_a_project_only_in_the_shared_index(two: Any, model: Any):
    here, other, uri = two
    settings = _settings("shared", uri)
    refs = [_ref(here, settings, model)]  # no checkout of the other project among them
    out = search("turn a raw sensor reading into degrees", refs, settings=settings,
                 embedder=model)
    top = out["results"][0]
    assert top["path"] == "sensor/calibrate.py"
    whole = get_chunk(top["id"], refs, settings=settings, embedder=model)
    # the whole declaration, as the engine holds it, as a checkout of it would give
    checkout = get_chunk(top["id"], [_ref(other, settings, model)], settings=settings,
                         embedder=model)
    assert whole == checkout and whole["note"] is None
    assert whole["content"].startswith("@functools.lru_cache\ndef calibrate_sensor")
    assert whole["content"].endswith("return celsius") and not whole["stale"]
    part = get_chunk(top["id"], refs, settings=settings, embedder=model, scope="chunk")
    assert part["scope"] == "chunk" and part["content"] in whole["content"]
    assert part["end_line"] - part["start_line"] < whole["end_line"] - whole["start_line"]
    around = get_chunk(top["id"], refs, settings=settings, embedder=model, context_lines=3)
    assert around["content"] == whole["content"]
    assert "No context lines" in around["note"]
    import kenning  # the Python API's record carries the note

    assert kenning.get_chunk(top["id"], here, settings=settings, context_lines=3).note == (
        around["note"])


def test_a_budget_packs_results_of_the_shared_index_too(two: Any, model: Any):
    from kenning.errors import UsageError
    from kenning.retrieval.budget import context_tokens

    here, _, uri = two
    settings = _settings("shared", uri)
    refs = [_ref(here, settings, model)]
    out = search("turn a raw sensor reading into degrees", refs, settings=settings,
                 embedder=model, budget_tokens=200)
    assert out["results"][0]["path"] == "sensor/calibrate.py"
    assert 0 < out["budget"]["used"] == sum(context_tokens(r["content"])
                                            for r in out["results"]) <= 200
    assert all(r["lines"] and r["content_hash"] is None for r in out["results"])
    with pytest.raises(UsageError, match="expect_hash checks the lines of a project checked"):
        get_chunk(out["results"][0]["id"], refs, settings=settings, embedder=model,
                  expect_hash="0123456789ab")


def test_a_shared_chunk_id_goes_stale_when_its_file_is_published_again(two: Any, model: Any,
                                                                       tmp_path: Path):
    here, _, uri = two
    settings = _settings("shared", uri)
    solo = make_repo(tmp_path / "solo", RECEIPT)
    publish(solo, settings, embedder=model)
    refs = [_ref(here, settings, model)]
    pid = _ref(solo, settings, model).id
    found = search("receipt for the till", refs, settings=settings, embedder=model,
                   shared_projects=[pid])["results"][0]
    assert "print_receipt" in get_chunk(found["id"], refs, settings=settings,
                                         embedder=model)["content"]
    receipt = solo / "receipts/print.py"
    receipt.write_text(receipt.read_text().replace("for the till", "as a PDF"))
    publish(solo, settings, embedder=model)
    with pytest.raises(StaleChunkId, match="no longer in the shared index"):
        get_chunk(found["id"], refs, settings=settings, embedder=model)
    fresh = search("receipt as a PDF", refs, settings=settings, embedder=model,
                   shared_projects=[pid])["results"][0]
    assert "as a PDF" in get_chunk(fresh["id"], refs, settings=settings,
                                      embedder=model)["content"]
    with pytest.raises(UsageError, match="No project 'nowhere/else'"):
        get_chunk("nowhere/else:00000000:1:1", refs, settings=settings, embedder=model)


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
    out = search("printable invoice", [ref], settings=settings, embedder=model, refresh=False,
                 shared_projects=[ref.id])
    top = out["results"][0]
    assert top["path"] == "billing/invoice.py" and top["stale"]
    assert "printable invoice" in top["content"] and "SECRET_TOKEN_42" not in top["content"]


DECLARATIONS = {"shop/cart.py": "import decimal\n\n\nclass Cart:\n"
                "    def total(self): return self._sum()\n"
                "    def count(self): return len(self.items)\n"
                "    def empty(self): return not self.items\n\n"
                "    def apply_discount(self, code):\n"
                "        \"\"\"Apply a discount code to every line of the shopping cart.\"\"\"\n"
                + "".join(f"        line_{i} = self.items[{i}].price * decimal.Decimal("
                          f"'0.{i:02d}') if code == 'SAVE{i}' else None\n" for i in range(60))
                + "        return self\n"}


# more files on the subject, for the signals that compare files
SHOP = {"shop/catalog.py": 'def find_product(catalog, name):\n    """The product of the shop\'s '
        'catalog with this name, for adding to a cart."""\n    return catalog.get(name)\n',
        "shop/checkout.py": 'def checkout(cart, coupon=None):\n    """Pay for the items in '
        'the shopping cart, with a discount coupon if given."""\n    total = cart.total()\n'
        '    if coupon:\n        total -= coupon.amount\n    return total\n\n\n'
        'def receipt_lines(cart):\n    """One line per item in the cart."""\n'
        '    return [str(item) for item in cart.items]\n'}


def test_shared_results_span_the_units_local_ones_do(tmp_path: Path, model: Any,
                                                     shared_uri: str):
    """A declaration cut into several chunks is one result spanning it, and a one-line accessor
    comes with its siblings, from the engine as from the local index: same spans, same
    snippets, the same order and scores (from the same candidates: the vector branch, exact on
    both with so few rows)."""
    from index_helpers import make_repo

    root = make_repo(tmp_path / "shop", {**DECLARATIONS, **SHOP})
    local = _settings("local", shared_uri)
    publish(root, local, embedder=model)
    ref = _ref(root, local, model)
    with Index.open(root, local, embedder=model).snapshot() as snap:
        parts = [row for row in snap.file_chunks(["shop/cart.py"])["shop/cart.py"]
                 if row.symbol == "Cart.apply_discount"]
    assert len(parts) > 1  # the declaration is cut into several chunks
    for query in ("apply a discount code to the shopping cart", "number of items in the cart",
                  "how is a discount applied to the cart?"):  # a question: declared names count
        outs = [search(query, [ref], settings=_settings(backend, shared_uri), embedder=model,
                       branches={"dense"}, shared_projects=[ref.id])["results"]
                for backend in ("local", "shared")]
        assert [(r["path"], r["start_line"], r["end_line"], r["content"]) for r in outs[1]] == \
            [(r["path"], r["start_line"], r["end_line"], r["content"]) for r in outs[0]]
        # the same scores: the signals that read whole files (the names they declare) read the
        # engine's rows as they read the local ones
        assert [r["score"] for r in outs[1]] == pytest.approx([r["score"] for r in outs[0]],
                                                              rel=1e-3)
    assert any(r["start_line"] < r["end_line"] - 60 for r in outs[1])  # a whole declaration


def test_the_engine_finds_a_reexport_as_the_local_index_does(tmp_path: Path, model: Any,
                                                             shared_uri: str):
    """A name no chunk declares: its re-export heads the results from the engine's rows too."""
    from test_reexports import FACADE

    root = make_repo(tmp_path / "facade", FACADE)
    publish(root, _settings("local", shared_uri), embedder=model)
    found = search("FromWidget", [_ref(root, _settings("local", shared_uri), model)],
                   settings=_settings("shared", shared_uri), embedder=model)["results"]
    assert found[0]["path"] == "src/extract/mod.rs" and "pub use widget_core" in found[0]["content"]


class _Recording:
    """The model, noting the texts it embeds as queries."""

    def __init__(self, model: Any) -> None:
        self.inner, self.asked = model, list[str]()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_query(self, text: str) -> Any:
        self.asked.append(text)
        return self.inner.embed_query(text)


@pytest.mark.parametrize("backend", ["local", "shared", "both"])
def test_only_a_local_search_leaves_the_projects_name_out(tmp_path: Path, model: Any,
                                                          shared_uri: str, backend: str):
    """The shared index also answers for other projects, whose questions may say this name."""
    root = make_repo(tmp_path / "receipts", RECEIPT)
    publish(root, _settings("local", shared_uri), embedder=model)
    recording = _Recording(model)
    search("how does receipts format a sale for the till",
           [_ref(root, _settings("local", shared_uri), model)],
           settings=_settings(backend, shared_uri), embedder=recording)
    kept = "how does receipts format a sale for the till"
    assert recording.asked == [kept if backend != "local" else kept.replace("receipts ", "")]
