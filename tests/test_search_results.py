"""What one search result is: how many a search returns, and what each one spans and shows
(real tree-sitter chunks in a real index, searched with the local model)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kenning import config
from kenning.indexing.indexer import refresh
from kenning.retrieval import ProjectRef
from kenning.retrieval.pipeline import MAX_LIMIT
from kenning.retrieval.units import Unit
from kenning.services.search import search
from kenning.store.reads import ChunkRow
from kenning.tokens import code_tokens


def _indexed(root: Path, files: dict[str, str]) -> list[ProjectRef]:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    refresh(root, config.load())
    return [ProjectRef("demo", root)]


def _search(refs: list[ProjectRef], query: str, **kwargs: object) -> dict:
    return search(query, refs, settings=config.load(), refresh=False, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def widgets(tmp_path_factory: pytest.TempPathFactory) -> list[ProjectRef]:
    """130 small functions that all say "widget"."""
    root = tmp_path_factory.mktemp("widgets")
    body = "\n\n".join(f"def widget_{i}(count):\n    scaled = count * {i}\n    offset = "
                       f"widget_base()\n    return scaled + offset\n" for i in range(130))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KENNING_HOME", str(root / "home"))
        mp.setenv("KENNING_CONFIG", str(root / "config.toml"))
        return _indexed(root / "repo", {"widgets.py": body})


@pytest.fixture
def in_widgets(widgets: list[ProjectRef], monkeypatch: pytest.MonkeyPatch) -> list[ProjectRef]:
    home = widgets[0].root.parent
    monkeypatch.setenv("KENNING_HOME", str(home / "home"))
    monkeypatch.setenv("KENNING_CONFIG", str(home / "config.toml"))
    return widgets


def test_a_large_limit_is_honoured(in_widgets: list[ProjectRef]) -> None:
    result = _search(in_widgets, "widget", limit=100)
    assert len(result["results"]) == 100
    assert not result["warnings"]


def test_a_limit_above_the_maximum_says_so(in_widgets: list[ProjectRef]) -> None:
    result = _search(in_widgets, "widget", limit=MAX_LIMIT + 50)
    assert len(result["results"]) == 130  # every match, which is under the maximum
    assert any(f"At most {MAX_LIMIT} results" in w for w in result["warnings"])


def _long_python() -> str:
    steps = "".join(f"    total_{i} = reading.value * {i} + offset_{i}\n" for i in range(45))
    return ("import functools\n\n\n@functools.lru_cache\ndef calibrate_sensor(reading):\n"
            '    """Turn a raw sensor reading into degrees."""\n' + steps
            + "    celsius = (total_44 - 32) * 5 / 9  # fahrenheit to celsius conversion\n"
            + "    return celsius\n\n\ndef unrelated_helper(x):\n    return x + 1\n")


def _long_rust() -> str:
    steps = "".join(f"    let slot_{i} = table.bucket({i}).probe(key);\n" for i in range(40))
    return ("/// Finds the slot of a key in the open-addressing table.\n#[inline]\n"
            "pub fn find_slot(table: &Table, key: u64) -> usize {\n" + steps
            + "    slot_39.wrapping_add(tombstone_skip(key))\n}\n")


@pytest.fixture(scope="module")
def long_decls(tmp_path_factory: pytest.TempPathFactory) -> list[ProjectRef]:
    root = tmp_path_factory.mktemp("decls")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KENNING_HOME", str(root / "home"))
        mp.setenv("KENNING_CONFIG", str(root / "config.toml"))
        return _indexed(root / "repo", {"sensor.py": _long_python(), "table.rs": _long_rust()})


@pytest.fixture
def in_decls(long_decls: list[ProjectRef], monkeypatch: pytest.MonkeyPatch) -> list[ProjectRef]:
    home = long_decls[0].root.parent
    monkeypatch.setenv("KENNING_HOME", str(home / "home"))
    monkeypatch.setenv("KENNING_CONFIG", str(home / "config.toml"))
    return long_decls


def _parts(refs: list[ProjectRef], symbol: str) -> list[tuple[int, int]]:
    from kenning.store import Index

    with Index.open(refs[0].root, config.load()).snapshot() as snap:
        ids = [cid for cid, name in snap.symbol_matches(code_tokens(symbol)[:1], 500)
               if name == symbol]
        return sorted((row.start_line, row.end_line) for row in snap.chunk_rows(ids))


@pytest.mark.parametrize(("query", "path", "symbol", "lines"), [
    ("convert fahrenheit to celsius", "sensor.py", "calibrate_sensor", (4, 53)),
    ("calibrate_sensor", "sensor.py", "calibrate_sensor", (4, 53)),
    ("tombstone_skip wrapping_add", "table.rs", "find_slot", (1, 45)),
])
def test_a_declaration_cut_into_chunks_is_one_whole_result(
        in_decls: list[ProjectRef], query: str, path: str, symbol: str,
        lines: tuple[int, int]) -> None:
    parts = _parts(in_decls, symbol)
    assert len(parts) >= 3 and (parts[0][0], parts[-1][1]) == lines  # doc and attribute lead
    hits = [h for h in _search(in_decls, query)["results"] if h["path"] == path]
    assert len([h for h in hits if h["symbol"] == symbol]) == 1  # its windows are one result
    hit = hits[0]
    assert hit["symbol"] == symbol and (hit["start_line"], hit["end_line"]) == lines
    shown = [line for line in hit["content"].splitlines() if not line.startswith("…")]
    markers = [line for line in hit["content"].splitlines() if line.startswith("…")]
    assert markers and len(shown) < lines[1] - lines[0] + 1  # the best window, not all of it
    counted = sum(int(m.split()[1]) for m in markers)
    assert counted + len(shown) == lines[1] - lines[0] + 1  # the markers say what is left out


def test_the_words_a_file_declares(in_decls: list[ProjectRef]) -> None:
    from kenning.retrieval.units import declared_words
    from kenning.store import Index

    with Index.open(in_decls[0].root, config.load()).snapshot() as snap:
        found = declared_words(snap, ["sensor.py", "table.rs", "gone.py"])
    assert found == {"sensor.py": {"calibrate", "sensor", "unrelated", "helper"},
                     "table.rs": {"find", "slot"}}


def test_the_snippet_is_the_window_that_matched(in_decls: list[ProjectRef]) -> None:
    hit = _search(in_decls, "convert fahrenheit to celsius")["results"][0]
    assert "fahrenheit to celsius" in hit["content"]
    # the decorator left out, the signature line, then the lines up to the window left out
    lines = hit["content"].splitlines()
    assert lines[:2] == ["… 1 more line (4-4) …", "def calibrate_sensor(reading):"]
    assert re.fullmatch(r"… \d+ more lines \(6-\d+\) …", lines[2])


def test_get_chunk_returns_the_whole_declaration(in_decls: list[ProjectRef]) -> None:
    from kenning.services.chunks import get_chunk

    hit = _search(in_decls, "convert fahrenheit to celsius")["results"][0]
    whole = get_chunk(hit["id"], in_decls, settings=config.load())
    source = (in_decls[0].root / "sensor.py").read_text().splitlines()
    assert (whole["start_line"], whole["end_line"]) == (4, 53)
    assert whole["content"] == "\n".join(source[3:53])
    part = get_chunk(hit["id"], in_decls, settings=config.load(), scope="chunk")
    assert part["start_line"] > 4 and part["content"] in whole["content"]
    region = get_chunk(hit["id"], in_decls, settings=config.load(), context_lines=3)
    assert (region["start_line"], region["end_line"]) == (1, 56)
    assert region["content"] == "\n".join(source[0:56])


def _cart() -> str:
    methods = "".join(
        f"\n    def total_{i}(items)\n"
        + "".join(f"      subtotal_{j} = items.sum {{ |item| item.price * {j} }}\n"
                  for j in range(8))
        + "      subtotal_0\n    end\n" for i in range(4))
    return ("require 'bigdecimal'\n\nmodule Shop\n  class Cart\n    # Prices are kept in cents.\n"
            + methods + "  end\nend\n")


def _units_of_file(root: Path, path: str) -> tuple[list[ChunkRow], dict[int, Unit]]:
    """The chunks of ``path`` in byte order, read by name, and the units of those that are not
    a unit on their own."""
    from kenning.retrieval.snapshot_source import candidate_of
    from kenning.retrieval.units import units
    from kenning.store import Index

    refresh(root, config.load())
    with Index.open(root, config.load()).snapshot() as snap:
        ids = [chunk.id for chunk in snap.file_chunks([path])[path]]
        rows = sorted(snap.chunk_rows(ids), key=lambda row: row.start_byte)
        assert [row.path for row in rows] == [path] * len(ids)
        return rows, units(snap, [candidate_of(row) for row in rows])


def test_short_pieces_that_declare_nothing_join_the_declaration_after_them(
        in_decls: list[ProjectRef]) -> None:
    root = in_decls[0].root
    (root / "cart.rb").write_text(_cart())
    rows, found = _units_of_file(root, "cart.rb")
    by_line = {row.start_line: found.get(row.id) for row in rows}
    pieces = [(row.start_line, row.end_line, row.kind, row.symbol) for row in rows]
    assert pieces[:3] == [(1, 1, "block", None), (3, 3, "module", "Shop"),
                          (4, 5, "class", "Shop.Cart")]  # what the chunker makes of the file
    imports, opener, header = by_line[1], by_line[3], by_line[4]
    assert imports is not None and opener is not None and header is not None
    # the require line joins the module and class lines, then the class it opens names it
    assert (imports.span[2], imports.span[3], imports.kind, imports.symbol) == (
        1, 5, "class", "Shop.Cart")
    # `module Shop` and `class Cart` are headers of containers whose members follow
    assert (opener.span[2], opener.span[3], opener.symbol) == (3, 17, "Shop")
    assert (header.span[2], header.span[3], header.symbol) == (4, 17, "Shop.Cart")
    assert header.window == header.span  # the header and the member it joined are shown
    assert all(by_line[row.start_line] is None for row in rows[3:])  # whole methods alone


def _accessors() -> str:
    """A class too big for one chunk: three one-line accessors, then longer methods."""
    longer = "".join(
        f"\n  def full_url_{i}\n" + "".join(
            f'    part_{j} = get_header("HTTP_X_FORWARDED_{j}").to_s.strip.downcase\n'
            for j in range(8)) + "    [scheme, host, port].join\n  end\n" for i in range(3))
    return ('class Request\n  def scheme; get_header("rack.url_scheme"); end\n'
            '  def host; get_header("HTTP_HOST"); end\n'
            '  def port; get_header("SERVER_PORT").to_i; end\n' + longer + "end\n")


def test_a_short_declaration_comes_with_its_short_siblings(in_decls: list[ProjectRef]) -> None:
    root = in_decls[0].root
    (root / "request.rb").write_text(_accessors())
    rows, found = _units_of_file(root, "request.rb")
    by_symbol = {row.symbol: found.get(row.id) for row in rows}
    host = by_symbol["Request.host"]
    assert host is not None and (host.span[2], host.span[3], host.symbol) == (2, 4, "Request.host")
    assert host.window == host.span  # the three accessors are shown together
    longer = by_symbol["Request.full_url_0"]
    assert longer is None or longer.span[2] == 6  # a longer method stands on its own


def test_the_cli_numbers_the_window_from_its_own_first_line(
        in_decls: list[ProjectRef], capsys: pytest.CaptureFixture[str]) -> None:
    from kenning.cli import main

    capsys.readouterr()
    main(["search", "convert fahrenheit to celsius", str(in_decls[0].root), "--no-refresh",
          "--limit", "1", "--max-snippet-lines", "80"])
    out = capsys.readouterr().out
    assert "sensor.py:4-53" in out and re.search(r"… \d+ more lines \(6-\d+\) …", out)
    assert re.search(r"^\s*5\s+def calibrate_sensor\(reading\):", out, re.MULTILINE)
    numbered = re.search(r"^\s*(\d+)\s.*fahrenheit to celsius", out, re.MULTILINE)
    assert numbered is not None and numbered.group(1) == "52"  # its line in the file


def test_the_cli_says_what_it_cut_in_one_marker(
        in_decls: list[ProjectRef], capsys: pytest.CaptureFixture[str]) -> None:
    from kenning.cli import main

    def shown(query: str, max_lines: int) -> list[str]:
        capsys.readouterr()
        main(["search", query, str(in_decls[0].root), "--no-refresh", "--limit", "1",
              "--max-snippet-lines", str(max_lines)])
        return [line.strip() for line in capsys.readouterr().out.splitlines() if line.strip()]

    # the lines cut here and those the window leaves out below make one marker
    cut = shown("tombstone_skip wrapping_add", 2)
    assert [line.startswith("…") for line in cut[1:]] == [True, False, True, False, True]
    assert cut[2] == "3 pub fn find_slot(table: &Table, key: u64) -> usize {"  # its signature
    last_shown = int(cut[-2].split()[0])
    assert cut[-1] == f"… {45 - last_shown} more lines ({last_shown + 1}-45) …"
    # one line is one line, and nothing follows the marker for the rest
    cut = shown("convert fahrenheit to celsius", 1)
    assert cut[1] == "… 1 more line (4-4) …" and cut[-1] == "… 48 more lines (6-53) …"
    assert not cut[-2].startswith("…")
