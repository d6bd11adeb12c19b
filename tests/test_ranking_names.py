"""Names many declarations share, and stubs beside their definitions (a real index, searched
with the local model)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kenning import config
from kenning.indexing.indexer import refresh
from kenning.retrieval import ProjectRef
from kenning.services.search import search

METHODS = "\n".join(f'''
    def {verb}(self, amount):
        """{verb.capitalize()} the value by ``amount`` and keep the history."""
        before = self.value
        self.value = self.value {op} amount
        self.history.append(("{verb}", before, self.value))
        return self
''' for verb, op in (("grow", "+"), ("shrink", "-"), ("scale", "*"), ("divide", "/"),
                    ("shift", "<<"), ("mask", "&")))
CLASSES = "\n\n".join(f'''class {name}:
    """A {name.lower()} record."""

    def __init__(self, value, label=None, history=None):
        self.value = value
        self.label = label or "{name.lower()}"
        self.history = list(history or [])
        self.created = len(self.history)
{METHODS}''' for name in ("Point", "Circle", "Square", "Colour", "Vector", "Matrix", "Account",
                        "Ledger"))

FILES = {
    "lib/shapes.py": CLASSES,
    "lib/_make.py": '''"""Builds the methods of record classes from their fields."""


def _make_init(cls, fields):
    """Write the source of an initialiser for ``fields`` and attach it."""
    args = ", ".join(fields)
    body = "\\n".join(f"    self.{name} = {name}" for name in fields) or "    pass"
    script = f"def __init__(self, {args}):\\n{body}\\n"
    namespace = {}
    exec(compile(script, "<fields>", "exec"), namespace)
    cls.__init__ = namespace["__init__"]
    return cls
''',
    "lib/funcs.py": '''def evolve(inst, **changes):
    """Create a new instance, based on ``inst`` with ``changes`` applied."""
    cls = inst.__class__
    values = dict(inst.__dict__)
    values.update(changes)
    return cls(**values)
''',
    "lib/funcs.pyi": '''from typing import Any, TypeVar

_T = TypeVar("_T")

def evolve(inst: _T, **changes: Any) -> _T: ...
def lonely_helper(count: int) -> int: ...
''',
    "web/router.js": '''function route(path, handler) {
  const parts = path.split("/").filter(Boolean);
  return { parts, handler, match: (url) => url.split("/").filter(Boolean).length === parts.length };
}

module.exports = { route };
''',
    "web/router.d.ts": '''export interface Route { parts: string[]; }
export declare function route(path: string, handler: () => void): Route;
''',
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[ProjectRef], Path]:
    base = tmp_path_factory.mktemp("names")
    for rel, text in FILES.items():
        (base / "repo" / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / "repo" / rel).write_text(text)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KENNING_HOME", str(base / "home"))
        mp.setenv("KENNING_CONFIG", str(base / "config.toml"))
        refresh(base / "repo", config.load())
    return [ProjectRef("names", base / "repo")], base


def _paths(project: tuple[list[ProjectRef], Path], query: str,
           monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str | None]]:
    refs, base = project
    monkeypatch.setenv("KENNING_HOME", str(base / "home"))
    monkeypatch.setenv("KENNING_CONFIG", str(base / "config.toml"))
    found = search(query, refs, settings=config.load(), refresh=False)
    return [(r["path"], r["symbol"]) for r in found["results"]]


def test_where_a_shared_special_method_is_generated_comes_first(
        project: tuple[list[ProjectRef], Path], monkeypatch: pytest.MonkeyPatch) -> None:
    found = _paths(project, "how does the library generate the __init__ method", monkeypatch)
    assert found[0] == ("lib/_make.py", "_make_init")


@pytest.mark.parametrize(("query", "first"), [
    ("evolve", ("lib/funcs.py", "evolve")),
    ("create a new instance with changes applied", ("lib/funcs.py", "evolve")),
    ("route", ("web/router.js", "route")),
])
def test_a_definition_ranks_above_its_stub(project: tuple[list[ProjectRef], Path], query: str,
                                           first: tuple[str, str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    found = _paths(project, query, monkeypatch)
    assert found[0] == first
    assert all(i > 0 for i, (path, _) in enumerate(found) if path.endswith((".pyi", ".d.ts")))


def test_a_name_only_a_stub_declares_returns_the_stub(
        project: tuple[list[ProjectRef], Path], monkeypatch: pytest.MonkeyPatch) -> None:
    assert _paths(project, "lonely_helper", monkeypatch)[0] == ("lib/funcs.pyi", "lonely_helper")


def test_a_declaration_in_many_chunks_is_one_declarer() -> None:
    from kenning.retrieval.query import analyze
    from kenning.retrieval.ranking import COMMON_NAME, Candidate, _Asked

    def chunk(i: int, path: str, symbol: str) -> Candidate:
        return Candidate(i, path, 10 * i, 10 * i + 9, 100 * i, 100 * i + 90, "elixir", "macro",
                         symbol, 1.0)

    # the clauses of one macro, each its own chunk, and two other modules' declarations
    clauses = [chunk(i, "lib/schema.ex", "Ecto.Schema.has_many") for i in range(COMMON_NAME + 5)]
    others = [chunk(90, "lib/assoc.ex", "Assoc.has_many"), chunk(91, "lib/repo.ex",
                                                                  "Repo.has_many")]
    asked = _Asked.of(analyze("has_many association definitions"), clauses + others)
    assert asked.declarers == {"has_many": 3}
    assert asked.shared(clauses[0]) <= COMMON_NAME  # so its score is not shrunk


def test_a_class_asked_by_name_is_found_at_its_head_not_at_a_banner_inside_it() -> None:
    from kenning.retrieval.query import analyze
    from kenning.retrieval.ranking import Candidate, rank

    def chunk(i: int, line: int, symbol: str, score: float) -> Candidate:
        return Candidate(i, "node/ObjectNode.java", line, line + 4, line * 40, line * 40 + 160,
                         "java", "class", symbol, score)

    head = chunk(1, 18, "ObjectNode", 0.10)
    banner = chunk(2, 661, "ObjectNode", 0.30)  # "Extended ObjectNode API" between methods
    other = chunk(3, 83, "JsonNodeCreator.objectNode", 0.12)
    ranked = rank([head, banner, other], analyze("ObjectNode"), parts={banner.id})
    assert [(c.id, c.start_line) for c in ranked][:1] == [(1, 18)]
    assert banner.id not in {c.id for c in ranked}


WRAP_FILES = {
    "text/wrap.py": '''# Wrapping long lines of text to a width: long lines are wrapped at spaces,
# long words broken where they must be, and wrapped lines indented.
# Licensed under the MIT licence; see LICENSE for the terms.
import re
import shutil
import unicodedata

_SPACE = re.compile(r"\\\\s+")


def wrap_lines(text, width=None, indent=""):
    """Break ``text`` into lines no longer than ``width`` columns."""
    width = width or shutil.get_terminal_size().columns
    lines, line = [], indent
    for word in _SPACE.split(text):
        if len(line) + len(word) + 1 > width and line.strip():
            lines.append(line)
            line = indent
        line += word + " "
    lines.append(line)
    return [unicodedata.normalize("NFC", part.rstrip()) for part in lines]
''',
    "text/colour.py": '''def colour(text, code):
    """Surround ``text`` with the terminal escape for colour ``code``."""
    return f"\\\\x1b[{code}m{text}\\\\x1b[0m"
''',
}


def test_wrap_lines_is_found_before_the_imports_and_banner_of_its_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for rel, text in WRAP_FILES.items():
        (tmp_path / "repo" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "repo" / rel).write_text(text)
    monkeypatch.setenv("KENNING_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KENNING_CONFIG", str(tmp_path / "config.toml"))
    refresh(tmp_path / "repo", config.load())
    found = search("how does it wrap long lines", [ProjectRef("wrap", tmp_path / "repo")],
                   settings=config.load(), refresh=False)["results"]
    assert (found[0]["path"], found[0]["symbol"]) == ("text/wrap.py", "wrap_lines")
    assert not any(r["path"] == "text/wrap.py" and r["start_line"] == 1 and not r["symbol"]
                   for r in found)
