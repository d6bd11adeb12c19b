"""The names a piece of code calls and the declarations inside a chunk, read from the
tree-sitter tree the chunker parsed.

Each grammar's call nodes are listed in its language's entry (``languages.LANGUAGES``) with the
field that holds the callee (``""``: its first named child); a tree-sitter query finds them all
in one pass in C. A callee expression is reduced to the name it ends with: ``g(1)``,
``self.client.send()``, ``Foo::new()``, ``new Foo<T>()`` call ``g``, ``send``, ``new`` and
``Foo``. The declarations a chunk holds besides its own (the methods of a class small enough to
be one chunk, nested functions) are found the same way from the grammar's declaration nodes: a
call reaches them too. Search links a declaration to the declarations of the names it calls,
within the project, by name alone (``retrieval.calls``): no types are resolved.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from kenning.chunking.languages import CONTAINER_KINDS, GRAMMARS, LANGUAGES
from kenning.records import Member

if TYPE_CHECKING:
    from kenning.chunking.cutter import Cutter
    from kenning.chunking.syntax import SyntaxChunker

# (start byte, end byte, kind, name) of a declaration node
Declared = tuple[int, int, str, str]

# Nodes that are a name: the end of the reduction.
_NAMES = frozenset({
    "identifier", "field_identifier", "property_identifier", "simple_identifier",
    "type_identifier", "constant", "name", "command_name",
})  # fmt: skip
# Where a callee expression keeps the name it ends with: ``a.b`` (attribute, field, property,
# name), ``a::b`` (name), ``obj.method`` (Ruby, Lua), ``Mod.fun`` (Elixir's right),
# ``f::<T>`` (Rust's function).
_TAIL_FIELDS = ("name", "attribute", "field", "property", "method", "right", "function")
# Generic wrappers whose name comes first and type arguments last: ``M<int>``, ``Foo<T>``.
_NAME_FIRST = frozenset({"generic_name", "generic_type"})
_MAX_STEPS = 8  # deeper callee expressions name nothing a search could use
MAX_NAME = 100  # longer names are no function names (generated tables, minified code)


@cache
def _query(grammar: str, what: str) -> Any:
    from tree_sitter import Query
    from tree_sitter_language_pack import get_language

    language = get_language(grammar)  # type: ignore[arg-type]
    if what == "calls":
        patterns = [f"({node} {field}: (_) @found)" if field else f"({node} . (_) @found)"
                    for node, field in LANGUAGES[grammar].call_nodes.items()
                    if language.id_for_node_kind(node, True)]
    else:  # the declaration table names some types only other versions of a grammar have
        patterns = [f"({node}) @found" for node in GRAMMARS[grammar].decls
                    if language.id_for_node_kind(node, True)]
    return Query(language, "\n".join(patterns)) if patterns else None


def _captured(grammar: str, what: str, root: Any) -> list[Any]:
    from tree_sitter import QueryCursor

    query = _query(grammar, what)
    return [] if query is None else list(QueryCursor(query).captures(root).get("found", ()))


def callee_name(node: Any, data: bytes) -> str | None:
    """The name a callee expression ends with, or None when it ends with none (a call of a
    call's result, a subscript, a lambda)."""
    for _ in range(_MAX_STEPS):
        if node.type in _NAMES:
            name = data[node.start_byte:node.end_byte].decode("utf-8", "replace").strip()
            return name if 0 < len(name) <= MAX_NAME and " " not in name else None
        children = node.named_children
        if node.type in _NAME_FIRST and children:
            node = children[0]
            continue
        following = next((found for field in _TAIL_FIELDS
                          if (found := node.child_by_field_name(field)) is not None), None)
        if following is None:
            if not children:
                return None
            following = children[-1]
        node = following
    return None


def calls_in(grammar: str, root: Any, data: bytes) -> list[tuple[int, str]]:
    """``(byte offset, name)`` of each call in the tree, in file order; empty for a grammar
    whose calls are not listed."""
    if grammar not in GRAMMARS or not LANGUAGES[grammar].call_nodes:
        return []
    definers = GRAMMARS[grammar].calls  # Elixir's `def`...
    found = []
    for node in _captured(grammar, "calls", root):
        name = callee_name(node, data)
        if name is not None and name not in definers:
            found.append((node.start_byte, name))
    found.sort()
    return found


def declarations_in(grammar: str, root: Any, chunker: SyntaxChunker) -> list[Declared]:
    """Every named declaration in the tree, in file order (none for a grammar whose
    declarations are calls: Elixir)."""
    spec = GRAMMARS[grammar]
    if not spec.decls:
        return []
    found = []
    for node in _captured(grammar, "declarations", root):
        decl = chunker.classify(node)
        if decl is None or not decl.name or decl.node != node:
            continue
        outer = node  # with its decorators, `export`, `template <...>`
        while outer.parent is not None and outer.parent.type in spec.wrappers:
            outer = outer.parent
        found.append((outer.start_byte, outer.end_byte, decl.kind, decl.name))
    found.sort()
    return found


def calls_between(calls: Sequence[tuple[int, str]], start: int, end: int,
                  cutter: Cutter) -> tuple[tuple[str, int], ...]:
    """``(name, line)`` of the ``calls`` (sorted by offset) made in bytes [start, end), a
    name once per line, sorted."""
    lo = bisect.bisect_left(calls, (start, ""))
    hi = bisect.bisect_left(calls, (end, ""))
    return tuple(sorted({(name, cutter.line_of(at) + 1) for at, name in calls[lo:hi]}))


def members_between(declared: Sequence[Declared], start: int, end: int, symbol: str | None,
                    cutter: Cutter, methods: bool) -> tuple[Member, ...]:
    """The declarations starting in bytes [start, end) of a chunk named ``symbol``, but the
    chunk's own (the first, when its name ends the symbol), each qualified by the chunk's
    symbol and the declarations around it, from the start of its first line."""
    lo = bisect.bisect_left(declared, (start,))
    hi = bisect.bisect_left(declared, (end,))
    inside = list(declared[lo:hi])
    own_kind = None
    if inside and symbol and _last(inside[0][3]) == _last(symbol):
        own_kind = inside.pop(0)[2]
    members = []
    for i, (first, last, kind, name) in enumerate(inside):
        around = [d for d in inside[:i] if d[0] <= first and last <= d[1]]
        line_start = cutter.line_start(first)
        if not cutter.data[line_start:first].strip():
            first = line_start  # with its indent, as a chunk keeps it
        parent = around[-1][2] if around else own_kind
        qualified = ".".join([*([symbol] if symbol else []), *(d[3] for d in around), name])
        members.append(Member(_last(name), qualified,
                              "method" if kind == "function" and parent in CONTAINER_KINDS
                              and methods else kind, cutter.line_of(first) + 1,
                              cutter.line_of(max(first, last - 1)) + 1, first, last))
    return tuple(members)


def _last(name: str) -> str:
    """The part of a qualified name calls use: ``Run`` of the Go method ``S.Run``."""
    return name.rpartition(".")[2]
