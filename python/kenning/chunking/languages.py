"""Every language kenning knows, one entry each (``LANGUAGES``): the file names that are
written in it, and where tree-sitter parses it, what a declaration is, which nodes call, which
languages call its declarations, what a re-export looks like and which stack traces name its
files. Adding a language is adding its entry here; ``tests/test_languages.py`` checks that a
parsed language has every part and that its grammar knows each node type named.

What a declaration is in each tree-sitter grammar (``LanguageSpec``; node type names checked
against samples parsed with tree-sitter-language-pack 0.13): ``decls`` maps a node type to the
chunk kind it produces. ``wrappers`` are nodes that carry one declaration plus decorators,
``export``, ``template <...>`` and the like: the chunk spans the wrapper, the kind and name
come from the declaration inside. ``transparent`` nodes group declarations without being one
chunk (namespaces, ``#ifdef`` blocks): their members are chunked one by one; ``qualifying``
transparent nodes (Ruby and Rust modules) also prefix member symbols. ``doc_prefixes`` start
the lines of comments and attributes that belong to the declaration below.

Elixir has no declaration nodes: every ``defmodule``, ``def`` or ``defmacro`` is a ``call``,
told apart by its target identifier (``calls``; ``@callback`` is an attribute). Its ``@doc``,
``@spec``, ``@impl``... attributes above a definition are attached to it, and the clauses of
one function next to each other (``def f(0)``, ``def f(n)``) make one declaration.
``defstruct``, ``defexception``, ``use`` and ``@moduledoc`` describe the module and stay in its
header piece.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class LanguageSpec:
    decls: dict[str, str]
    wrappers: frozenset[str] = frozenset()
    transparent: frozenset[str] = frozenset()
    qualifying: frozenset[str] = frozenset()
    doc_prefixes: tuple[str, ...] = ("//", "/*", "*")
    # Node types whose kind is the first keyword among their tokens (Swift, Kotlin classes).
    keyword_kinds: frozenset[str] = frozenset()
    # Elixir: a ``call`` whose target identifier is a key here declares that kind.
    calls: dict[str, str] = field(default_factory=dict)
    # Whether a function inside a type is a method (not in Elixir, whose modules hold functions).
    methods: bool = True
    # Whether a small head packs with the first part of a too-big range after it rather than
    # standing alone: ``defmodule X do`` with the opening of a long ``@moduledoc``.
    head_opens_long: bool = False


HASH_DOC = ("#",)

_JS_DECLS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "class": "class",
    "method_definition": "method",
    "variable_declarator": "function",  # only with a function value: see syntax._is_decl
}
_JS_WRAPPERS = frozenset({"export_statement", "lexical_declaration", "variable_declaration"})
_TS_DECLS = {
    **_JS_DECLS,
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "enum_declaration": "enum",
    "type_alias_declaration": "type",
    "function_signature": "function",
    "abstract_method_signature": "method",
}
_TS = LanguageSpec(
    decls=_TS_DECLS,
    wrappers=_JS_WRAPPERS | {"ambient_declaration", "expression_statement"},
    transparent=frozenset({"internal_module", "module"}),
)
_C_DECLS = {
    "function_definition": "function",
    "struct_specifier": "struct",
    "union_specifier": "struct",
    "enum_specifier": "enum",
    "type_definition": "type",
}
_C_TRANSPARENT = frozenset(
    {"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"}
)


@dataclass(frozen=True)
class Language:
    """One language: the parts without a default are the ones every parsed language states
    (None or empty where it has none)."""

    name: str  # as chunks store it, `--lang` takes it and tree-sitter names its grammar
    extensions: tuple[str, ...]  # lower case, with the dot
    # Declarations, for the tree-sitter grammar of ``name``; None: the language is not parsed
    # (line windows, or Markdown sections).
    syntax: LanguageSpec | None
    # call node type -> the field that holds the callee ("" for its first named child)
    call_nodes: Mapping[str, str]
    # Languages whose code calls each other's declarations by name share a family (C and
    # C++, JavaScript and TypeScript, Java and Kotlin): calls link within one.
    family: str
    # What a re-export of ``{name}`` (escaped; braces doubled) looks like in a line of it.
    reexport: str | None
    # The stack-trace format whose frames name its files (``retrieval.tracebacks``): python,
    # java (any JVM language), go, rust, javascript (V8 and Firefox), c (sanitizers).
    frames: str | None
    filenames: tuple[str, ...] = ()  # whole file names: Makefile
    interpreters: tuple[str, ...] = ()  # of a `#!` line: a script without an extension
    aliases: tuple[str, ...] = ()  # names people use for it besides ``name``: golang
    # prose (its chunks are docs) and data (json, yaml: vendored or generated when large)
    role: Literal["code", "prose", "data"] = "code"


def _text_only(name: str, *extensions: str, frames: str | None = None,
               filenames: tuple[str, ...] = (), aliases: tuple[str, ...] = (),
               role: Literal["code", "prose", "data"] = "code") -> Language:
    """A language kenning detects but does not parse."""
    return Language(name, extensions, syntax=None, call_nodes={}, family=name, reexport=None,
                    frames=frames, filenames=filenames, aliases=aliases, role=role)


# what a re-export of `{name}` looks like
_RUST_REEXPORT = r"\bpub(?:\([^)]*\))?\s+use\s+[^;]*\b{name}\b[^;]*;"
_SCRIPT_REEXPORT = (r"\bexport\s+(?:type\s+)?(?:\{{[^}}]*\b{name}\b[^}}]*\}}|\*\s+as\s+{name}\b)"
                    r"\s*from\b")
_PYTHON_REEXPORT = (r"^\s*from\s+[\w.]+\s+import\s+(?:\([^)]*\b{name}\b[^)]*\)"
                    r"|[^\n]*\b{name}\b)")

_ENTRIES = [
    Language(
        "python", (".py", ".pyi", ".pyw"),
        syntax=LanguageSpec(
            decls={"function_definition": "function", "class_definition": "class"},
            wrappers=frozenset({"decorated_definition"}),
            doc_prefixes=("#",),
        ),
        call_nodes={"call": "function"},
        family="python", reexport=_PYTHON_REEXPORT, frames="python",
        interpreters=("python",), aliases=("python3",),
    ),
    Language(
        "javascript", (".js", ".mjs", ".cjs", ".jsx"),
        syntax=LanguageSpec(decls=_JS_DECLS, wrappers=_JS_WRAPPERS),
        call_nodes={"call_expression": "function", "new_expression": "constructor"},
        family="javascript", reexport=_SCRIPT_REEXPORT, frames="javascript",
        interpreters=("node",),
    ),
    Language(
        "typescript", (".ts", ".mts", ".cts"),
        syntax=_TS,
        call_nodes={"call_expression": "function", "new_expression": "constructor"},
        family="javascript", reexport=_SCRIPT_REEXPORT, frames="javascript",
    ),
    Language(
        "tsx", (".tsx",),
        syntax=_TS,
        call_nodes={"call_expression": "function", "new_expression": "constructor"},
        family="javascript", reexport=_SCRIPT_REEXPORT, frames="javascript",
    ),
    Language(
        "go", (".go",),
        syntax=LanguageSpec(
            decls={
                "function_declaration": "function",
                "method_declaration": "method",
                "type_declaration": "type",
            },
        ),
        call_nodes={"call_expression": "function"},
        family="go", reexport=None, frames="go", aliases=("golang",),
    ),
    Language(
        "rust", (".rs",),
        syntax=LanguageSpec(
            decls={
                "function_item": "function",
                "function_signature_item": "function",
                "struct_item": "struct",
                "union_item": "struct",
                "enum_item": "enum",
                "trait_item": "trait",
                "impl_item": "impl",
                "macro_definition": "macro",
                "type_item": "type",
            },
            transparent=frozenset({"mod_item", "foreign_mod_item"}),
            qualifying=frozenset({"mod_item"}),
            doc_prefixes=("//", "/*", "*", "#["),
        ),
        call_nodes={"call_expression": "function", "macro_invocation": "macro"},
        family="rust", reexport=_RUST_REEXPORT, frames="rust",
    ),
    Language(
        "java", (".java",),
        syntax=LanguageSpec(
            decls={
                "class_declaration": "class",
                "interface_declaration": "interface",
                "enum_declaration": "enum",
                "record_declaration": "record",
                "annotation_type_declaration": "interface",
                "method_declaration": "method",
                "constructor_declaration": "method",
                "compact_constructor_declaration": "method",
            },
            doc_prefixes=("//", "/*", "*", "@"),
        ),
        call_nodes={"method_invocation": "name", "object_creation_expression": "type"},
        family="java", reexport=None, frames="java",
    ),
    Language(
        "kotlin", (".kt", ".kts"),
        syntax=LanguageSpec(
            decls={
                "class_declaration": "class",
                "object_declaration": "object",
                "companion_object": "object",
                "function_declaration": "function",
                "secondary_constructor": "method",
                "type_alias": "type",
            },
            keyword_kinds=frozenset({"class_declaration"}),
            doc_prefixes=("//", "/*", "*", "@"),
        ),
        call_nodes={"call_expression": ""},
        family="java", reexport=None, frames="java",
    ),
    Language(
        "csharp", (".cs",),
        syntax=LanguageSpec(
            decls={
                "class_declaration": "class",
                "struct_declaration": "struct",
                "interface_declaration": "interface",
                "enum_declaration": "enum",
                "record_declaration": "record",
                "record_struct_declaration": "record",
                "delegate_declaration": "type",
                "method_declaration": "method",
                "constructor_declaration": "method",
                "destructor_declaration": "method",
                "operator_declaration": "method",
                "local_function_statement": "function",
            },
            transparent=frozenset({"namespace_declaration"}),
            doc_prefixes=("//", "/*", "*", "["),
        ),
        call_nodes={"invocation_expression": "function", "object_creation_expression": "type"},
        family="csharp", reexport=None, frames=None, aliases=("c#",),
    ),
    Language(
        "php", (".php",),
        syntax=LanguageSpec(
            decls={
                "class_declaration": "class",
                "interface_declaration": "interface",
                "trait_declaration": "trait",
                "enum_declaration": "enum",
                "function_definition": "function",
                "method_declaration": "method",
            },
            transparent=frozenset({"namespace_definition"}),
            doc_prefixes=("//", "/*", "*", "#["),
        ),
        call_nodes={"function_call_expression": "function", "member_call_expression": "name",
                    "scoped_call_expression": "name", "object_creation_expression": ""},
        family="php", reexport=None, frames=None, interpreters=("php",),
    ),
    Language(
        "ruby", (".rb", ".rake", ".gemspec"),
        syntax=LanguageSpec(
            decls={
                "class": "class",
                "method": "function",
                "singleton_method": "method",
            },
            transparent=frozenset({"module"}),
            qualifying=frozenset({"module"}),
            doc_prefixes=HASH_DOC,
        ),
        call_nodes={"call": "method"},
        family="ruby", reexport=None, frames=None,
        filenames=("Rakefile", "Gemfile"), interpreters=("ruby",),
    ),
    Language(
        "c", (".c", ".h"),
        syntax=LanguageSpec(decls=_C_DECLS, transparent=_C_TRANSPARENT),
        call_nodes={"call_expression": "function"},
        family="c", reexport=None, frames="c",
    ),
    Language(
        "cpp", (".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".ipp", ".inl"),
        syntax=LanguageSpec(
            decls={**_C_DECLS, "class_specifier": "class"},
            wrappers=frozenset({"template_declaration"}),
            transparent=_C_TRANSPARENT | {"namespace_definition", "linkage_specification"},
        ),
        call_nodes={"call_expression": "function"},
        family="c", reexport=None, frames="c",
    ),
    Language(
        "swift", (".swift",),
        syntax=LanguageSpec(
            decls={
                "class_declaration": "class",
                "protocol_declaration": "interface",
                "function_declaration": "function",
                "protocol_function_declaration": "method",
                "init_declaration": "method",
                "deinit_declaration": "method",
                "subscript_declaration": "method",
                "typealias_declaration": "type",
            },
            keyword_kinds=frozenset({"class_declaration"}),
            doc_prefixes=("//", "/*", "*", "@"),
        ),
        call_nodes={"call_expression": ""},
        family="swift", reexport=None, frames=None,
    ),
    Language(
        "scala", (".scala", ".sc"),
        syntax=LanguageSpec(
            decls={
                "class_definition": "class",
                "object_definition": "object",
                "trait_definition": "trait",
                "enum_definition": "enum",
                "function_definition": "function",
                "function_declaration": "function",
                "given_definition": "object",
                "type_definition": "type",
            },
            doc_prefixes=("//", "/*", "*", "@"),
        ),
        call_nodes={"call_expression": "function"},
        family="scala", reexport=None, frames="java",
    ),
    Language(
        "lua", (".lua",),
        syntax=LanguageSpec(decls={"function_declaration": "function"}, doc_prefixes=("--",)),
        call_nodes={"function_call": "name"},
        family="lua", reexport=None, frames=None, interpreters=("lua",),
    ),
    Language(
        "bash", (".sh", ".bash", ".zsh"),
        syntax=LanguageSpec(decls={"function_definition": "function"}, doc_prefixes=HASH_DOC),
        call_nodes={"command": "name"},
        family="bash", reexport=None, frames=None,
        interpreters=("bash", "sh", "zsh"), aliases=("shell",),
    ),
    Language(
        "elixir", (".ex", ".exs"),
        syntax=LanguageSpec(
            decls={},
            calls={
                "defmodule": "module",
                "defprotocol": "interface",
                "defimpl": "impl",
                "def": "function",
                "defp": "function",
                "defdelegate": "function",
                "defmacro": "macro",
                "defmacrop": "macro",
                "defguard": "macro",
                "defguardp": "macro",
                "@callback": "function",
                "@macrocallback": "macro",
            },
            methods=False,
            head_opens_long=True,
            doc_prefixes=HASH_DOC,
        ),
        call_nodes={"call": "target"},
        family="elixir", reexport=None, frames=None,
    ),
    _text_only("objc", ".m", ".mm", aliases=("objective-c",)),
    _text_only("dart", ".dart"),
    _text_only("erlang", ".erl"),
    _text_only("haskell", ".hs"),
    _text_only("ocaml", ".ml"),
    _text_only("clojure", ".clj"),
    _text_only("r", ".r"),
    _text_only("julia", ".jl"),
    _text_only("zig", ".zig"),
    _text_only("nim", ".nim"),
    _text_only("perl", ".pl", ".pm"),
    _text_only("powershell", ".ps1"),
    _text_only("groovy", ".groovy", ".gradle", frames="java"),
    _text_only("sql", ".sql"),
    _text_only("proto", ".proto"),
    _text_only("graphql", ".graphql"),
    _text_only("solidity", ".sol"),
    _text_only("hcl", ".tf", ".hcl", aliases=("terraform",)),
    _text_only("vue", ".vue", frames="javascript"),
    _text_only("svelte", ".svelte", frames="javascript"),
    _text_only("html", ".html", ".htm"),
    _text_only("css", ".css"),
    _text_only("scss", ".scss"),
    _text_only("json", ".json", role="data"),
    _text_only("yaml", ".yaml", ".yml", role="data"),
    _text_only("toml", ".toml", role="data"),
    _text_only("xml", ".xml", role="data"),
    _text_only("cmake", ".cmake", filenames=("CMakeLists.txt",)),
    _text_only("nix", ".nix"),
    _text_only("dockerfile", filenames=("Dockerfile",), aliases=("docker",)),
    _text_only("make", filenames=("Makefile", "GNUmakefile"), aliases=("makefile",)),
    _text_only("starlark", filenames=("BUILD", "BUILD.bazel", "WORKSPACE"), aliases=("bazel",)),
    _text_only("markdown", ".md", ".markdown", ".mdx", role="prose"),
    _text_only("rst", ".rst", role="prose"),
    _text_only("text", ".txt", filenames=("README", "LICENSE"), aliases=("plaintext",),
               role="prose"),
    _text_only("asciidoc", ".adoc", ".asciidoc", role="prose"),
    _text_only("org", ".org", role="prose"),
]
LANGUAGES: dict[str, Language] = {language.name: language for language in _ENTRIES}
# The parsed languages' declarations, by grammar.
GRAMMARS: dict[str, LanguageSpec] = {
    language.name: language.syntax for language in _ENTRIES if language.syntax is not None}
BY_EXTENSION = {ext: language.name for language in _ENTRIES for ext in language.extensions}
BY_FILENAME = {name: language.name for language in _ENTRIES for name in language.filenames}
BY_INTERPRETER = {name: language.name for language in _ENTRIES for name in language.interpreters}
ALIASES = {alias: language.name for language in _ENTRIES for alias in language.aliases}


def family(language: str | None) -> str | None:
    """The family of ``language`` (itself for a language kenning does not know)."""
    known = LANGUAGES.get(language or "")
    return known.family if known is not None else language


def frame_extensions(frames: str) -> tuple[str, ...]:
    """The extensions (without the dot) of the files that ``frames`` traces name."""
    return tuple(ext[1:] for language in _ENTRIES if language.frames == frames
                 for ext in language.extensions)


def named(role: Literal["code", "prose", "data"]) -> frozenset[str]:
    """The languages of ``role``."""
    return frozenset(language.name for language in _ENTRIES if language.role == role)


# Kinds whose members (methods) are chunked one by one when the whole does not fit.
CONTAINER_KINDS = frozenset(
    {
        "class", "struct", "enum", "trait", "interface", "impl", "object", "record", "extension",
        "module",
    }
)  # fmt: skip
# Keywords that name the kind of a Swift or Kotlin ``class_declaration``.
KIND_KEYWORDS = {
    "class": "class",
    "struct": "struct",
    "enum": "enum",
    "extension": "extension",
    "actor": "class",
    "interface": "interface",
}
