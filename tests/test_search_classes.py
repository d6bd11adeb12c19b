"""Test code, docs, generated text, completions and legacy copies: classified, ranked below the
implementation unless asked for, and selected by --kind inside retrieval (real index)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kenning import config
from kenning.errors import UsageError
from kenning.indexing.classes import categories, chunk_class, superseded
from kenning.indexing.indexer import refresh
from kenning.retrieval import ProjectRef
from kenning.services.search import search

LIB = '''/// Expands a glob pattern into the file paths that match it.
pub fn expand_glob(pattern: &str, root: &Path) -> Vec<PathBuf> {
    let matcher = GlobMatcher::new(pattern);
    walk(root).filter(|path| matcher.is_match(path)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expand_glob_matches_rust_files() {
        let found = expand_glob("*.rs", Path::new("fixtures"));
        assert_eq!(found.len(), 2);
    }
}
'''
FILES = {
    "src/lib.rs": LIB,
    "doc/finder.1": ".TH FINDER 1\n.SH NAME\nfinder \\- expand a glob pattern into matching "
                    "file paths\n.SH OPTIONS\n.TP\n.B \\-g, \\-\\-glob\nMatch a glob pattern.\n",
    "contrib/completion/_finder": "#compdef finder\n_arguments '--glob[expand a glob pattern "
                                  "into matching file paths]:pattern'\n",
    "README.md": "# finder\n\nExpands a glob pattern into the file paths that match it.\n",
    "godoc-current.txt": "func ExpandGlob(pattern string, root string) []string\n"
                         "    ExpandGlob expands a glob pattern into matching file paths.\n",
}


def _indexed(tmp_path_factory: pytest.TempPathFactory, name: str,
             files: dict[str, str]) -> list[ProjectRef]:
    """A project of ``files``, indexed under a home of its own beside it."""
    root = tmp_path_factory.mktemp(name)
    repo = root / "repo"
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    with pytest.MonkeyPatch.context() as mp:
        _use_home_of([ProjectRef(name, repo)], mp)
        refresh(repo, config.load())
    return [ProjectRef(name, repo)]


def _use_home_of(refs: list[ProjectRef], monkeypatch: pytest.MonkeyPatch) -> list[ProjectRef]:
    home = refs[0].root.parent
    monkeypatch.setenv("KENNING_HOME", str(home / "home"))
    monkeypatch.setenv("KENNING_CONFIG", str(home / "config.toml"))
    return refs


@pytest.fixture(scope="module")
def finder(tmp_path_factory: pytest.TempPathFactory) -> list[ProjectRef]:
    return _indexed(tmp_path_factory, "finder", FILES)


@pytest.fixture
def in_finder(finder: list[ProjectRef], monkeypatch: pytest.MonkeyPatch) -> list[ProjectRef]:
    return _use_home_of(finder, monkeypatch)


def _paths(refs: list[ProjectRef], query: str, **kwargs: object) -> list[tuple[str, str | None]]:
    result = search(query, refs, settings=config.load(), refresh=False, **kwargs)  # type: ignore[arg-type]
    return [(h["path"], h["symbol"]) for h in result["results"]]


@pytest.mark.parametrize(("path", "language", "symbol", "expected"), [
    ("src/lib.rs", "rust", "tests.expand_glob_matches_rust_files", "test"),
    ("src/lib.rs", "rust", "expand_glob", "code"),
    ("internal/parse_test.go", "go", "TestParse", "test"),
    ("src/router.spec.ts", "typescript", None, "test"),
    ("packages/core/__tests__/router.ts", "typescript", None, "test"),
    ("src/test/java/org/x/Parser.java", "java", None, "test"),
    ("src/main/java/org/x/ParserTest.java", "java", None, "test"),
    ("lib/rack/request_spec.rb", "ruby", None, "test"),
    ("testdata/input.go", "go", None, "test"),
    ("docs/v2/guide.md", "markdown", None, "docs"),
    ("doc/fd.1", None, None, "docs"),
    ("man/man1/fd.1", None, None, "docs"),
    ("godoc-current.txt", "text", None, "generated"),
    ("Cargo.lock", None, None, "generated"),
    ("CHANGELOG.md", "markdown", None, "docs"),
    ("RELEASE.md", "markdown", None, "docs"),
    ("docs/release-notes.rst", "rst", None, "docs"),
    (".github/workflows/release.yml", "yaml", None, "code"),
    ("api/v1/service_grpc.pb.go", "go", None, "generated"),
    ("gen-py/tutorial/Calculator.py", "python", None, "generated"),
    ("src/proto/user_pb.js", "javascript", None, "generated"),
    ("contrib/completion/_fd", None, None, "completion"),
    ("completions/fd.bash", "bash", None, "completion"),
    ("_examples/rest/main.go", "go", None, "example"),
    ("benches/walk.rs", "rust", None, "example"),
    ("pydantic/v1/fields.py", "python", None, "code"),
])
def test_classes_of_files_and_regions(path: str, language: str | None, symbol: str | None,
                                      expected: str) -> None:
    assert chunk_class(path, language, symbol) == expected


def test_legacy_modules_are_compat() -> None:
    assert "compat" in categories("src/legacy/router.ts")
    assert "compat" in categories("lib/_legacy.py")
    assert "compat" not in categories("src/router.ts")


def test_a_version_folder_gives_way_to_its_current_counterpart() -> None:
    paths = ["pydantic/v1/fields.py", "pydantic/fields.py", "api/v1/user.go", "api/v2/user.go",
             "exposed/v1/core/Table.kt"]
    assert superseded(paths) == {"pydantic/v1/fields.py", "api/v1/user.go"}
    assert superseded(paths, "the v1 fields validator") == set()  # the query names it


def test_an_alternative_gives_way_to_what_it_is_the_alternative_of() -> None:
    paths = ["runtime/time_alt/wheel.rs", "runtime/time/sleep.rs", "client-darwin-legacy/a.kt",
             "client-darwin/b.kt", "parse_old.py", "parse.py", "lone_alt/x.rs"]
    assert superseded(paths) == {"runtime/time_alt/wheel.rs", "client-darwin-legacy/a.kt",
                                 "parse_old.py"}
    assert "runtime/time_alt/wheel.rs" not in superseded(paths, "the alt timer wheel")


def test_compat_modules_are_compat_with_a_leading_underscore() -> None:
    assert "compat" in categories("fastapi/_compat/v2.py")


def test_behaviour_queries_rank_the_implementation_first(in_finder: list[ProjectRef]) -> None:
    found = _paths(in_finder, "expand a glob pattern into matching file paths")
    assert found[0] == ("src/lib.rs", "expand_glob")
    later = {"doc/finder.1", "contrib/completion/_finder", "README.md", "godoc-current.txt"}
    assert {path for path, _ in found[1:]} >= later  # each ranked below the implementation
    asked = _paths(in_finder, "test that a glob pattern expands into matching file paths")
    assert _inline_test(asked) < _inline_test(found)  # saying "test" lifts the test


def _inline_test(found: list[tuple[str, str | None]]) -> int:
    """The rank of the `#[cfg(test)] mod tests` (or its test function) in ``found``."""
    return next(i for i, (_, symbol) in enumerate(found) if (symbol or "").startswith("tests"))


@pytest.mark.parametrize(("kind", "expected"), [
    ("test", {("src/lib.rs", "tests.expand_glob_matches_rust_files"), ("src/lib.rs", "tests")}),
    ("docs", {("README.md", "finder"), ("doc/finder.1", None)}),  # the man page too
    ("generated", {("godoc-current.txt", None)}),
    ("completion", {("contrib/completion/_finder", None)}),
])
def test_kind_selects_a_class_inside_retrieval(in_finder: list[ProjectRef], kind: str,
                                               expected: set[tuple[str, str | None]]) -> None:
    found = set(_paths(in_finder, "expand a glob pattern into matching file paths", kind=kind))
    assert found and found <= expected


def test_kind_code_is_the_implementation_alone(in_finder: list[ProjectRef]) -> None:
    found = _paths(in_finder, "expand a glob pattern into matching file paths", kind="code")
    assert found[0] == ("src/lib.rs", "expand_glob")
    # neither prose, nor the man page, the completion script, the API dump or the inline tests
    assert all(path == "src/lib.rs" and not (symbol or "").startswith("tests")
               for path, symbol in found)


def test_an_unknown_kind_names_the_classes(in_finder: list[ProjectRef]) -> None:
    with pytest.raises(UsageError) as caught:
        _paths(in_finder, "glob", kind="tset")
    assert "test" in (caught.value.hint or "")


def test_classes_are_plural_friendly(in_finder: list[ProjectRef], tmp_path: Path) -> None:
    assert set(_paths(in_finder, "expand a glob pattern", kind="tests")) <= {
        ("src/lib.rs", "tests.expand_glob_matches_rust_files"), ("src/lib.rs", "tests")}


STRINGER = '''// Code generated by "stringer -type=Color"; DO NOT EDIT.

package paint

import "strconv"

const _Color_name = "RedGreenBlue"

var _Color_index = [...]uint8{0, 3, 8, 12}

// String returns the name of the colour.
func (i Color) String() string {
	if i < 0 || i >= Color(len(_Color_index)-1) {
		return "Color(" + strconv.FormatInt(int64(i), 10) + ")"
	}
	return _Color_name[_Color_index[i]:_Color_index[i+1]]
}
'''
COLOR = '''package paint

// Color is the colour a ball is painted.
type Color int

const (
	Red Color = iota
	Green
	Blue
)

// Paint names the colour a ball gets, as its String method spells it.
func Paint(c Color) string {
	return "painted " + c.String()
}
'''
PAINT_FILES = {
    "paint/color_string.go": STRINGER,
    "paint/color.go": COLOR,
    # hand-written release notes that speak of generated code are docs, never generated text
    "CHANGELOG.md": "# Changelog\n\n## 1.2.0\n\n- The name of a colour comes from the generated "
                    "String method; do not edit color_string.go by hand, run go generate.\n",
}


@pytest.fixture(scope="module")
def paint(tmp_path_factory: pytest.TempPathFactory) -> list[ProjectRef]:
    return _indexed(tmp_path_factory, "paint", PAINT_FILES)


def test_a_file_whose_header_says_generated_is_generated_text(
        paint: list[ProjectRef], monkeypatch: pytest.MonkeyPatch) -> None:
    _use_home_of(paint, monkeypatch)
    query = "the name of a colour from its String method"
    code = {path for path, _ in _paths(paint, query, kind="code")}
    assert code == {"paint/color.go"}  # the stringer output is not the implementation
    generated = {path for path, _ in _paths(paint, query, kind="generated")}
    assert generated == {"paint/color_string.go"}  # and the changelog is not generated
    assert {path for path, _ in _paths(paint, query, kind="docs")} == {"CHANGELOG.md"}
    ranked = [path for path, _ in _paths(paint, "Color String name")]
    assert ranked.index("paint/color.go") < ranked.index("paint/color_string.go")


@pytest.mark.parametrize(("head", "generated"), [
    ('// Code generated by "stringer -type=Color"; DO NOT EDIT.\n\npackage paint\n', True),
    ("// Copyright 2024 The Authors.\n// Licensed under MIT.\n\n// Code generated by "
     "protoc-gen-go. DO NOT EDIT.\n// source: user.proto\n\npackage user\n", True),
    ("# @generated by ./tools/codegen.py\nTABLE = {}\n", True),
    ("// <auto-generated>\n//     This code was generated by a tool.\n// </auto-generated>\n",
     True),
    ("# This file is autogenerated by pip-compile; do not edit it by hand.\nrequests==2\n", True),
    ("/* Automatically generated file. Do not modify. */\nint x;\n", True),
    ("# Changelog\n\n- Fixed the generated String method.\n", False),
    ("def make_id():\n    '''An auto-generated id.'''\n", False),
    ("package paint\n\n// DO NOT EDIT the table below without updating the docs.\n", False),
    ("\n" * 12 + "// Code generated by hand-rolled script. DO NOT EDIT.\n", False),  # not a header
])
def test_generated_headers(head: str, generated: bool) -> None:
    from kenning.chunking.generated import says_generated

    assert says_generated(head.encode()) is generated
