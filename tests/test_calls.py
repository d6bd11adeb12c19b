"""Callers and callees: the names each chunk calls, read from real tree-sitter trees, stored in
a real index, and linked by name to the declarations of a small multi-file project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from index_helpers import kenning_cli
from kenning import config
from kenning.chunking import chunk_file
from kenning.indexing.indexer import refresh
from kenning.retrieval import ProjectRef
from kenning.services.chunks import get_chunk
from kenning.services.search import search
from kenning.store import Index
from search_fixtures import write_repo

# One function per language that calls a plain function, a method and a constructor or
# associated function, as code in that language does.
SOURCES = {
    "python": ("def run(self):\n    helper(1)\n    self.client.send(b'x')\n"
               "    return Parser()\n", {"helper", "send", "Parser"}),
    "go": ("package x\n\nfunc Run(c *Client) {\n\thelper(1)\n\tc.conn.Send(nil)\n"
           "\t_ = NewParser()\n}\n", {"helper", "Send", "NewParser"}),
    "rust": ("fn run(c: &Client) {\n    helper(1);\n    c.conn.send(&[]);\n"
             "    let p = Parser::new();\n    let q = build::<u8>();\n    println!(\"x\");\n}\n",
             {"helper", "send", "new", "build", "println"}),
    "java": ("class A {\n  void run() {\n    helper(1);\n    this.client.send(x);\n"
             "    Parser p = new Parser();\n    List<String> l = new ArrayList<>();\n  }\n}\n",
             {"helper", "send", "Parser", "ArrayList"}),
    "kotlin": ("fun run(c: Client) {\n    helper(1)\n    c.conn.send(x)\n    val p = Parser()\n}\n",
               {"helper", "send", "Parser"}),
    "javascript": ("function run(c) {\n  helper(1);\n  c.conn.send(x);\n"
                   "  return new Parser();\n}\n", {"helper", "send", "Parser"}),
    "typescript": ("function run(c: Client): Parser {\n  helper<number>(1);\n  c.conn.send(x);\n"
                   "  return new Parser();\n}\n", {"helper", "send", "Parser"}),
    "c": ("int run(struct client *c) {\n  helper(1);\n  c->ops->send(c);\n  return 0;\n}\n",
          {"helper", "send"}),
    "cpp": ("int run(Client& c) {\n  helper(1);\n  c.conn.send(x);\n  ns::Parser::make();\n"
            "  return apply<int>(2);\n}\n", {"helper", "send", "make", "apply"}),
    "csharp": ("class A {\n  void Run() {\n    Helper(1);\n    this.client.Send(x);\n"
               "    var p = new Parser();\n  }\n}\n", {"Helper", "Send", "Parser"}),
    "ruby": ("def run\n  helper(1)\n  client.send_data(x)\n  Parser.new\nend\n",
             {"helper", "send_data", "new"}),
}


def _calls(source: str, language: str) -> set[str]:
    found = chunk_file("f", source.encode(), language, max_tokens=512,
                       count_tokens=lambda text: len(text.split()))
    return {name for chunk in found for name, _ in chunk.calls}


@pytest.mark.parametrize("language", sorted(SOURCES))
def test_the_names_a_declaration_calls_are_read_from_its_tree(language: str) -> None:
    source, expected = SOURCES[language]
    assert _calls(source, language) == expected


def test_each_chunk_keeps_the_calls_made_within_it() -> None:
    source = "def a():\n    first()\n\n\ndef b():\n    second()\n    second(); second()\n"
    found = chunk_file("f.py", source.encode(), "python", max_tokens=512,
                       count_tokens=lambda text: len(text.split()))
    assert {c.symbol: c.calls for c in found} == {"a": (("first", 2),),
                                                  "b": (("second", 6), ("second", 7))}


def test_a_chunk_keeps_the_declarations_inside_it() -> None:
    source = ("class Cache:\n    def get(self, key):\n        def miss():\n            pass\n"
              "        return miss()\n\n    @property\n    def size(self):\n        return 0\n")
    found = chunk_file("f.py", source.encode(), "python", max_tokens=512,
                       count_tokens=lambda text: len(text.split()))
    (cache,) = found
    assert [(m.name, m.symbol, m.kind, m.start_line, m.end_line) for m in cache.members] == [
        ("get", "Cache.get", "method", 2, 5), ("miss", "Cache.get.miss", "function", 3, 4),
        ("size", "Cache.size", "method", 7, 9)]
    go = "package x\n\nfunc (s *Server) Run() {\n\ts.stop()\n}\n"
    (_, run) = chunk_file("f.go", go.encode(), "go", max_tokens=512,
                          count_tokens=lambda text: len(text.split()))
    assert (run.symbol, run.members) == ("Server.Run", ())  # its own declaration, no member


def test_prose_and_elixir_definitions_call_nothing() -> None:
    assert _calls("# Title\n\nCall `helper()` here.\n", "markdown") == set()
    elixir = "defmodule A do\n  def run do\n    helper(1)\n    B.send(x)\n  end\nend\n"
    assert _calls(elixir, "elixir") == {"helper", "send"}


PROJECT = {
    "app/server.py": '''from lib.net import send_request


def handle_request(request):
    """Answer one request: render it and send the page."""
    page = render_page(request)
    return send_request(page)


def render_page(request):
    return "<p>" + request + "</p>"
''',
    "lib/net.py": '''def send_request(body):
    """Send the body over the socket."""
    return encode_body(body)


def encode_body(body):
    return body.encode()
''',
    "lib/other.go": '''package lib

// Go code that happens to call a function of the same name.
func Use() { handle_request(nil) }
''',
    "tests/test_server.py": '''from app.server import handle_request


def test_handle_request():
    assert handle_request("x")
''',
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("calls")
    root = write_repo(base / "repo", PROJECT)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KENNING_HOME", str(base / "home"))
        refresh(root, config.load())
    return root, base / "home"


@pytest.fixture
def home(project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KENNING_HOME", str(project[1]))
    return project[0]


def _links(hit: dict[str, object], key: str) -> list[tuple[str, str | None]]:
    return [(link["path"], link["symbol"]) for link in hit[key]]  # type: ignore[attr-defined]


def _hit(results: list[dict[str, object]], symbol: str) -> dict[str, object]:
    return next(hit for hit in results if hit["symbol"] == symbol)


def test_the_index_stores_each_chunks_calls(home: Path) -> None:
    with Index.open(home, config.load()).snapshot() as snap:
        rows = snap.declaring(["handle_request"], 10)
        (row, name), = rows
        assert (row[1], row[6], name) == ("app/server.py", "handle_request", "handle_request")
        parts = snap.declaration_parts([row[0]])[row[0]]
        assert snap.called_names([p[0] for p in parts]) == {"render_page", "send_request"}


def test_search_results_carry_their_callers_and_callees(home: Path) -> None:
    found = search("handle a request and send the page", [ProjectRef("p", home)],
                   settings=config.load(), limit=6, calls=True)["results"]
    handler = _hit(found, "handle_request")
    # its callees across files, by name; the Go function of the same name calls no Python
    assert sorted(_links(handler, "callees")) == [("app/server.py", "render_page"),
                                                 ("lib/net.py", "send_request")]
    assert _links(handler, "callers") == [("tests/test_server.py", "test_handle_request")]
    sender = _hit(found, "send_request")
    assert _links(sender, "callers") == [("app/server.py", "handle_request")]
    assert _links(sender, "callees") == [("lib/net.py", "encode_body")]
    caller = sender["callers"][0]  # type: ignore[index]
    assert (caller["start_line"], caller["end_line"]) == (4, 7)
    read = get_chunk(caller["id"], [ProjectRef("p", home)], settings=config.load())
    assert (read["symbol"], read["start_line"], read["end_line"]) == ("handle_request", 4, 7)


def test_links_prefer_the_same_file_and_names_declared_once(home: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    from kenning.retrieval.calls import ELSEWHERE, SAME_FILE, SAME_FOLDER, nearness

    assert nearness("a/b.py", "a/b.py") == SAME_FILE
    assert nearness("a/b.py", "a/c.py") == SAME_FOLDER
    assert nearness("a/b.py", "z/c.py") == ELSEWHERE
    root = tmp_path / "repo"
    root.mkdir()
    (root / "one.py").write_text("def run():\n    build()\n    emit()\n\n\n"
                                 "def build():\n    pass\n")
    (root / "two.py").write_text("def build():\n    pass\n\n\ndef emit():\n    pass\n")
    (root / "three.py").write_text("def build():\n    pass\n")
    monkeypatch.setenv("KENNING_HOME", str(tmp_path / "home"))
    result = search("run", [ProjectRef("q", root)], settings=config.load(), calls=True)
    run = _hit(result["results"], "run")
    # emit is declared once; build three times, and the one in run's own file comes first
    assert _links(run, "callees")[:2] == [("two.py", "emit"), ("one.py", "build")]


def test_without_calls_results_carry_no_links(home: Path) -> None:
    found = search("send the body", [ProjectRef("p", home)], settings=config.load())
    assert all("callers" not in hit and "callees" not in hit for hit in found["results"])


def test_library_hits_carry_typed_links(home: Path) -> None:
    import kenning

    result = kenning.search("send the body over the socket", home, calls=True)
    sender = next(hit for hit in result.results if hit.symbol == "send_request")
    assert sender.callers is not None and sender.callees is not None
    assert [link.symbol for link in sender.callers] == ["handle_request"]
    assert isinstance(sender.callers[0], kenning.CallLink)
    assert kenning.SearchResult.from_dict(result.to_dict()) == result
    plain = kenning.search("send the body over the socket", home)
    assert plain.results[0].callers is None and "callers" not in plain.results[0].to_dict()


def test_cli_calls_flag(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = kenning_cli(capsys, "search", "send the body over the socket", str(home),
                               "--calls", "--json-output")
    assert code == 0
    sender = _hit(json.loads(out)["results"], "send_request")
    assert _links(sender, "callers") == [("app/server.py", "handle_request")]
    code, out, _ = kenning_cli(capsys, "search", "send the body over the socket", str(home),
                               "--calls")
    assert code == 0
    assert "called by: handle_request app/server.py:4-7" in out
    assert "calls: encode_body lib/net.py:6-7" in out


def test_a_name_called_all_over_the_project_links_last(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    # `items` is called everywhere (on dicts); `tally` only by run: both declared once
    (root / "run.py").write_text("def run(counts):\n    for k, v in counts.items():\n"
                                 "        tally(k, v)\n")
    (root / "lib.py").write_text("class Jar:\n    def items(self):\n        return []\n\n\n"
                                 "def tally(k, v):\n    pass\n")
    (root / "uses.py").write_text("".join(f"def use{n}(d):\n    return d.items()\n\n\n"
                                          for n in range(6)))
    monkeypatch.setenv("KENNING_HOME", str(tmp_path / "home"))
    result = search("run", [ProjectRef("q", root)], settings=config.load(), calls=True)
    run = _hit(result["results"], "run")
    assert _links(run, "callees") == [("lib.py", "tally"), ("lib.py", "Jar.items")]


MEMBERS = {  # the source, and the line of load
    "rust": ("struct Cache;\nimpl Cache {\n    pub fn get(&self) -> u8 { self.load() }\n"
             "    fn load(&self) -> u8 { 0 }\n}\n", 4),
    "java": ("class Cache {\n    @Override\n    public int get() { return load(); }\n"
             "    private int load() { return 0; }\n}\n", 4),
    "typescript": ("export class Cache {\n  get(): number { return this.load(); }\n"
                   "  private load(): number { return 0; }\n}\n", 3),
    "cpp": ("class Cache {\n public:\n  int get() { return load(); }\n"
            "  int load() { return 0; }\n};\n", 4),
}


@pytest.mark.parametrize("language", sorted(MEMBERS))
def test_the_methods_of_a_one_chunk_type_are_its_members(language: str) -> None:
    source, load_line = MEMBERS[language]
    found = chunk_file("f", source.encode(), language, max_tokens=512,
                       count_tokens=lambda text: len(text.split()))
    holder = next(chunk for chunk in found if chunk.members)
    get, load = holder.members
    assert (get.name, get.symbol, get.kind) == ("get", "Cache.get", "method")
    assert (load.name, load.symbol, load.start_line) == ("load", "Cache.load", load_line)
    assert ("load", get.end_line) in holder.calls  # the call inside get, on get's line


def test_links_follow_an_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def target():\n    pass\n")
    (root / "b.py").write_text("def user():\n    target()\n")
    monkeypatch.setenv("KENNING_HOME", str(tmp_path / "home"))
    ref = [ProjectRef("e", root)]

    def callers() -> list[tuple[str, str | None]]:
        found = search("target", ref, settings=config.load(), calls=True)["results"]
        return _links(_hit(found, "target"), "callers")

    assert callers() == [("b.py", "user")]
    (root / "b.py").write_text("def user():\n    return None\n")
    assert callers() == []
    (root / "c.py").write_text("def other():\n    return target()\n")
    assert callers() == [("c.py", "other")]
    with Index.open(root, config.load()).snapshot() as snap:  # no row of the old b.py is left
        assert [row[1] for row, _, _ in snap.calling(["target"], 10)] == ["c.py"]
