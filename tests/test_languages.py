"""The language registry: every entry has each of its parts, and each part reaches the code
that uses it (detection, chunking, calls, re-exports, stack traces, filters)."""

from __future__ import annotations

import re

import pytest
from kenning.chunking import DOCS_LANGUAGES
from kenning.chunking.languages import (
    BY_EXTENSION,
    BY_FILENAME,
    BY_INTERPRETER,
    GRAMMARS,
    LANGUAGES,
    family,
)
from kenning.indexing import sources
from kenning.indexing.kinds import DATA_LANGUAGES
from kenning.retrieval import tracebacks
from kenning.retrieval.filters import canonical_language
from tree_sitter_language_pack import get_language

PARSED = sorted(GRAMMARS)
# Declaration node types that only other versions of a grammar have (``calls._query`` skips
# them): the C# grammar of tree-sitter-language-pack 0.13 names a record struct otherwise.
OTHER_VERSIONS = {("csharp", "record_struct_declaration")}
# A line re-exporting ``Thing``, by language: a language with a re-export pattern needs one.
REEXPORTS = {
    "rust": "pub use thing_core::{Other, Thing};",
    "javascript": 'export { Thing } from "./thing";',
    "typescript": 'export type { Thing } from "./thing";',
    "tsx": 'export * as Thing from "./thing";',
    "python": "from .thing import (\n    Other,\n    Thing,\n)",
}
# A frame of each stack-trace format naming ``src/thing{ext}``.
FRAMES = {
    "python": "src/thing{ext}:12: in run",
    "java": "\tat org.example.Thing.run(Thing{ext}:12)",
    "go": "\tsrc/thing{ext}:12 +0x1d",
    "rust": "             at src/thing{ext}:12:5",
    "javascript": "    at run (src/thing{ext}:12:5)",
    "c": "    #0 0x4005d6 in run src/thing{ext}:12:5",
}


@pytest.mark.parametrize("name", PARSED)
def test_a_parsed_language_has_every_part_and_its_grammar_knows_each_node(name: str) -> None:
    language = LANGUAGES[name]
    spec = GRAMMARS[name]
    assert language.extensions or language.filenames
    assert spec.decls or spec.calls  # Elixir declares by calls
    assert language.call_nodes, f"{name} lists no call nodes"
    head = LANGUAGES[language.family]  # a family is named after a parsed language of it
    assert head.syntax is not None and head.family == language.family
    grammar = get_language(name)  # type: ignore[arg-type]
    named = [*spec.decls, *spec.wrappers, *spec.transparent, *spec.keyword_kinds,
             *language.call_nodes]
    unknown = [node for node in named
               if not grammar.id_for_node_kind(node, True) and (name, node) not in OTHER_VERSIONS]
    assert not unknown, f"the {name} grammar has no node types {unknown}"
    fields = [f for f in language.call_nodes.values() if f and grammar.field_id_for_name(f) is None]
    assert not fields, f"the {name} grammar has no fields {fields}"


def test_each_file_name_belongs_to_one_language_and_is_detected_as_it() -> None:
    extensions = [ext for language in LANGUAGES.values() for ext in language.extensions]
    filenames = [name for language in LANGUAGES.values() for name in language.filenames]
    assert len(extensions) == len(BY_EXTENSION) and len(filenames) == len(BY_FILENAME)
    for language in LANGUAGES.values():
        for ext in language.extensions:
            assert ext.startswith(".") and ext == ext.lower()
            assert sources.detect_language(f"src/thing{ext}") == language.name
        for filename in language.filenames:
            assert sources.detect_language(f"src/{filename}") == language.name
        for interpreter in language.interpreters:
            head = f"#!/usr/bin/env {interpreter}\n".encode()
            assert sources._shebang_language(head) == language.name
    assert set(BY_INTERPRETER) == {i for lang in LANGUAGES.values() for i in lang.interpreters}


def test_names_and_aliases_are_what_a_language_filter_takes() -> None:
    for language in LANGUAGES.values():
        assert canonical_language(language.name.upper()) == language.name
        for alias in language.aliases:
            assert canonical_language(alias) == language.name
    assert frozenset(LANGUAGES) == sources.LANGUAGES


def test_the_roles_say_which_languages_are_prose_and_data() -> None:
    assert {"markdown", "rst", "text", "asciidoc", "org"} == DOCS_LANGUAGES
    assert {"json", "yaml", "xml", "toml"} == DATA_LANGUAGES


def test_families_group_the_languages_that_call_each_other() -> None:
    groups: dict[str, set[str]] = {}
    for name in PARSED:
        groups.setdefault(LANGUAGES[name].family, set()).add(name)
    shared = {head: names for head, names in groups.items() if len(names) > 1}
    assert shared == {"c": {"c", "cpp"}, "javascript": {"javascript", "typescript", "tsx"},
                      "java": {"java", "kotlin"}}
    assert family("haskell") == "haskell" and family("unknownlang") == "unknownlang"
    assert family(None) is None


def test_each_re_export_pattern_finds_its_sample_and_not_a_neighbour() -> None:
    with_pattern = {name for name, language in LANGUAGES.items() if language.reexport}
    assert with_pattern == set(REEXPORTS)
    for name, line in REEXPORTS.items():
        shape = LANGUAGES[name].reexport
        assert shape is not None
        assert re.search(shape.format(name="Thing"), line, re.MULTILINE), name
        assert not re.search(shape.format(name="Thin"), line, re.MULTILINE), name


@pytest.mark.parametrize("name", sorted(n for n, lang in LANGUAGES.items() if lang.frames))
def test_the_frames_of_a_language_s_files_are_read_as_its_trace_format(name: str) -> None:
    language = LANGUAGES[name]
    assert language.frames in FRAMES
    for ext in language.extensions:
        trace = tracebacks.parse(FRAMES[language.frames].format(ext=ext))
        assert trace is not None, (name, ext)
        assert trace.frames[0].language == language.frames and trace.frames[0].line == 12
