"""What a declaration is in each tree-sitter grammar (node type names checked against samples
parsed with tree-sitter-language-pack 0.13).

``decls`` maps a node type to the chunk kind it produces. ``wrappers`` are nodes that carry one
declaration plus decorators, ``export``, ``template <...>`` and the like: the chunk spans the
wrapper, the kind and name come from the declaration inside. ``transparent`` nodes group
declarations without being one chunk (namespaces, ``#ifdef`` blocks): their members are chunked
one by one; ``qualifying`` transparent nodes (Ruby and Rust modules) also prefix member symbols.
``doc_prefixes`` start the lines of comments and attributes that belong to the declaration below.

Elixir has no declaration nodes: every ``defmodule``, ``def`` or ``defmacro`` is a ``call``,
told apart by its target identifier (``calls``; ``@callback`` is an attribute). Its ``@doc``,
``@spec``, ``@impl``... attributes above a definition are attached to it, and the clauses of
one function next to each other (``def f(0)``, ``def f(n)``) make one declaration.
``defstruct``, ``defexception``, ``use`` and ``@moduledoc`` describe the module and stay in its
header piece.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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

LANGUAGES: dict[str, LanguageSpec] = {
    "python": LanguageSpec(
        decls={"function_definition": "function", "class_definition": "class"},
        wrappers=frozenset({"decorated_definition"}),
        doc_prefixes=("#",),
    ),
    "javascript": LanguageSpec(decls=_JS_DECLS, wrappers=_JS_WRAPPERS),
    "typescript": _TS,
    "tsx": _TS,
    "go": LanguageSpec(
        decls={
            "function_declaration": "function",
            "method_declaration": "method",
            "type_declaration": "type",
        },
    ),
    "rust": LanguageSpec(
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
    "java": LanguageSpec(
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
    "kotlin": LanguageSpec(
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
    "csharp": LanguageSpec(
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
    "php": LanguageSpec(
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
    "ruby": LanguageSpec(
        decls={
            "class": "class",
            "method": "function",
            "singleton_method": "method",
        },
        transparent=frozenset({"module"}),
        qualifying=frozenset({"module"}),
        doc_prefixes=HASH_DOC,
    ),
    "c": LanguageSpec(decls=_C_DECLS, transparent=_C_TRANSPARENT),
    "cpp": LanguageSpec(
        decls={**_C_DECLS, "class_specifier": "class"},
        wrappers=frozenset({"template_declaration"}),
        transparent=_C_TRANSPARENT | {"namespace_definition", "linkage_specification"},
    ),
    "swift": LanguageSpec(
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
    "scala": LanguageSpec(
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
    "lua": LanguageSpec(decls={"function_declaration": "function"}, doc_prefixes=("--",)),
    "bash": LanguageSpec(decls={"function_definition": "function"}, doc_prefixes=HASH_DOC),
    "elixir": LanguageSpec(
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
}

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
