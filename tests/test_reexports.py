"""A name that no chunk of the project declares is found where the project re-exports it."""

from __future__ import annotations

from pathlib import Path

import pytest
from index_helpers import make_repo
from kenning import config
from kenning.project import project_id
from kenning.retrieval import ProjectRef
from kenning.retrieval.query import analyze
from kenning.retrieval.reexports import lead_with_reexports
from kenning.retrieval.symbols import LAST_PART
from kenning.services.search import search


def _reexports(path: str, language: str, text: str, name: str = "FromWidget") -> bool:
    """Whether the chunk ``text``, found by the lexical branch, heads the symbol branch."""
    rankings: dict[str, list[tuple[int, float]]] = {"lexical": [(7, 9.0)], "symbol": []}
    lead_with_reexports(analyze(name), rankings, lambda ids: [(7, path, language)],
                        lambda ids: {7: text})
    return rankings["symbol"] == [(7, LAST_PART)]


@pytest.mark.parametrize(("path", "language", "text"), [
    ("src/extract/mod.rs", "rust", "pub use widget_core::extract::{\n    FromWidget, Other,\n};"),
    ("src/lib.rs", "rust", "pub(crate) use self::extract::FromWidget;"),
    ("src/index.ts", "typescript", "export { Other, FromWidget } from './widget';"),
    ("src/index.ts", "typescript", "export type { FromWidget } from './types';"),
    ("src/index.js", "javascript", "export * as FromWidget from './widget';"),
    ("pkg/__init__.py", "python", "from .widgets import (\n    Other,\n    FromWidget,\n)"),
    ("pkg/__init__.py", "python", "from pkg.widgets import FromWidget as FromWidget"),
])
def test_a_reexport_is_recognised(path: str, language: str, text: str) -> None:
    assert _reexports(path, language, text)


@pytest.mark.parametrize(("path", "language", "text"), [
    ("src/handler.rs", "rust", "use widget_core::extract::FromWidget;"),  # private: a use
    ("src/lib.rs", "rust", "pub use widget_core::extract::FromWidgetParts;"),  # another name
    ("src/app.ts", "typescript", "import { FromWidget } from './widget';"),
    ("pkg/widgets.py", "python", "from pkg.core import FromWidget"),  # a module, no package
    ("src/Main.java", "java", "import widget.FromWidget;"),  # no re-exports in Java
])
def test_an_import_or_another_name_is_no_reexport(path: str, language: str, text: str) -> None:
    assert not _reexports(path, language, text)


FACADE = {
    # the facade re-exports the trait that a core crate outside the project declares
    "src/extract/mod.rs": "//! Types and traits for extracting data from widgets.\n\n"
                          "pub mod shape;\n\npub use widget_core::extract::{FromWidget, Parts};\n",
    # and its modules implement and call it, which mentions the name more often
    "src/extract/shape.rs": "use widget_core::extract::FromWidget;\n\npub struct Shape;\n\n"
                            "impl FromWidget for Shape {\n    fn from_widget(w: FromWidget) -> Self"
                            " {\n        // a FromWidget for shapes\n        Shape\n    }\n}\n",
    "src/handler.rs": "use widget_core::extract::FromWidget;\n\n/// Runs FromWidget for each "
                      "argument of a handler.\npub fn run<T: FromWidget>(w: &T) -> bool {\n"
                      "    true\n}\n",
}


def _first(root: Path, query: str) -> tuple[str, str]:
    found = search(query, [ProjectRef(project_id(root), root)], settings=config.load(), limit=5)
    return found["results"][0]["path"], found["results"][0]["content"]


def test_the_reexport_answers_for_a_name_the_project_does_not_declare(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "facade", FACADE)
    path, content = _first(root, "FromWidget")
    assert path == "src/extract/mod.rs" and "pub use widget_core" in content


def test_a_declaration_in_the_project_comes_before_its_reexport(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "facade", {
        **FACADE, "src/extract/mod.rs": "pub mod shape;\n\npub use self::shape::FromWidget;\n",
        "src/extract/shape.rs": "/// Builds a value from a widget.\npub trait FromWidget {\n"
                                "    fn from_widget() -> Self;\n}\n"})
    path, content = _first(root, "FromWidget")
    assert path == "src/extract/shape.rs" and "pub trait FromWidget" in content


def test_a_declaration_found_leaves_the_symbol_branch_alone() -> None:
    rankings: dict[str, list[tuple[int, float]]] = {"lexical": [(7, 9.0)], "symbol": [(3, 4.0)]}
    lead_with_reexports(analyze("FromWidget"), rankings, lambda ids: [(7, "src/lib.rs", "rust")],
                        lambda ids: {7: "pub use core::FromWidget;"})
    assert rankings["symbol"] == [(3, 4.0)]

