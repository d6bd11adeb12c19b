"""The names a piece of code calls, read from the tree-sitter tree the chunker parsed.

Each grammar's call nodes are listed with the field that holds the callee (``""``: its first
named child); a tree-sitter query finds them all in one pass in C. A callee expression is
reduced to the name it ends with: ``g(1)``, ``self.client.send()``, ``Foo::new()``,
``new Foo<T>()`` call ``g``, ``send``, ``new`` and ``Foo``. Search links a declaration to the
declarations of the names it calls, within the project, by name alone (``retrieval.calls``):
no types are resolved.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from functools import cache
from typing import Any

# grammar -> call node type -> the field that holds the callee ("" for its first named child)
CALL_NODES: dict[str, dict[str, str]] = {
    "python": {"call": "function"},
    "go": {"call_expression": "function"},
    "rust": {"call_expression": "function", "macro_invocation": "macro"},
    "java": {"method_invocation": "name", "object_creation_expression": "type"},
    "kotlin": {"call_expression": ""},
    "javascript": {"call_expression": "function", "new_expression": "constructor"},
    "typescript": {"call_expression": "function", "new_expression": "constructor"},
    "tsx": {"call_expression": "function", "new_expression": "constructor"},
    "c": {"call_expression": "function"},
    "cpp": {"call_expression": "function"},
    "csharp": {"invocation_expression": "function", "object_creation_expression": "type"},
    "ruby": {"call": "method"},
    "php": {"function_call_expression": "function", "member_call_expression": "name",
            "scoped_call_expression": "name", "object_creation_expression": ""},
    "swift": {"call_expression": ""},
    "scala": {"call_expression": "function"},
    "lua": {"function_call": "name"},
    "bash": {"command": "name"},
    "elixir": {"call": "target"},
}

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
def _query(grammar: str) -> Any:
    from tree_sitter import Query
    from tree_sitter_language_pack import get_language

    patterns = [f"({node} {field}: (_) @callee)" if field else f"({node} . (_) @callee)"
                for node, field in CALL_NODES[grammar].items()]
    return Query(get_language(grammar), "\n".join(patterns))  # type: ignore[arg-type]


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
    if grammar not in CALL_NODES:
        return []
    from tree_sitter import QueryCursor

    from kenning.chunking.languages import LANGUAGES

    definers = LANGUAGES[grammar].calls if grammar in LANGUAGES else {}  # Elixir's `def`...
    found = []
    for node in QueryCursor(_query(grammar)).captures(root).get("callee", ()):
        name = callee_name(node, data)
        if name is not None and name not in definers:
            found.append((node.start_byte, name))
    found.sort()
    return found


def names_between(calls: Sequence[tuple[int, str]], start: int, end: int) -> tuple[str, ...]:
    """The distinct names of ``calls`` (sorted by offset) made in bytes [start, end), sorted."""
    lo = bisect.bisect_left(calls, (start, ""))
    hi = bisect.bisect_left(calls, (end, ""))
    return tuple(sorted({name for _, name in calls[lo:hi]}))
