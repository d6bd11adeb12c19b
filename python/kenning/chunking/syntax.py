"""Declaration chunks from a tree-sitter tree.

A region (the file, a class body, a namespace) is tiled in order: each declaration claims its
lines plus the doc comments and attributes right above it; what lies between declarations
(imports, constants, statements) is packed into ``block`` pieces. A declaration that does not
fit is split: a class into a header piece and one piece per member, anything else at its
statement boundaries, every part keeping the declaration's symbol and signature.

Elixir declarations are ``call`` nodes named by their target (``def``, ``defmodule``...): the
attributes above one (``@doc``, ``@spec``, ``@impl``...) are claimed as nodes, since a
``@doc`` heredoc's lines look like nothing, and the clauses of one function next to each other
are one declaration whose parts are packed together when the whole does not fit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from kenning.chunking.cutter import PACK_LINES, Cutter, Piece, Segment
from kenning.chunking.languages import CONTAINER_KINDS, KIND_KEYWORDS, LanguageSpec

_BODY_TYPES = frozenset(
    {
        "block", "class_body", "enum_class_body", "declaration_list", "field_declaration_list",
        "template_body", "body_statement", "statement_block", "enum_body", "interface_body",
        "protocol_body", "compound_statement", "function_body", "enum_declaration_list",
    }
)  # fmt: skip
_NAME_TYPES = frozenset(
    {
        "identifier", "type_identifier", "simple_identifier", "field_identifier", "constant",
        "name", "word", "property_identifier", "qualified_identifier", "destructor_name",
        "operator_name", "scoped_identifier", "scoped_type_identifier", "namespace_identifier",
    }
)  # fmt: skip
_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function", "class"}
)
_CLOSERS = re.compile(rb"(?:[\s})\];,]|\bend\b|\bfi\b|\bdone\b|\besac\b)*")
_SPACES = re.compile(r"\s+")
_GENERICS = re.compile(r"<[^<>]*>")
_NOT_HEADER = ("@", "#[", "[", "//", "/*", "*", "#", "--")
MAX_SIGNATURE = 300
# Elixir attributes that describe the module, not the definition below them.
_MODULE_ATTRIBUTES = frozenset(
    {"moduledoc", "behaviour", "compile", "before_compile", "after_compile", "on_definition"}
)
# Elixir attributes that belong to the next definition even across a blank line.
_DEFINITION_ATTRIBUTES = frozenset({"doc", "spec", "impl", "deprecated", "since"})


@dataclass(frozen=True, slots=True)
class Decl:
    node: Any  # the declaration itself (inside any wrapper)
    kind: str
    name: str | None


def error_fraction(root: Any) -> float:
    """Share of the file's bytes inside ERROR nodes (0.0 for a clean parse)."""
    if not root.has_error:
        return 0.0
    size = max(1, root.end_byte - root.start_byte)
    bad = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error:
            bad += node.end_byte - node.start_byte
        elif node.has_error:
            stack.extend(node.children)
    return float(bad / size)


class SyntaxChunker:
    def __init__(self, cutter: Cutter, spec: LanguageSpec) -> None:
        self.cut = cutter
        self.spec = spec
        cutter.head_opens_long = spec.head_opens_long
        self.data = cutter.data

    def run(self, root: Any) -> list[Piece]:
        label = Piece(0, 0, "block", filler=True)
        pieces = self.layout(root.named_children, 0, len(self.data), None, False, label)
        return self.merge_neighbours(pieces)

    # -- regions ----------------------------------------------------------------------------
    def layout(
        self,
        children: list[Any],
        lo: int,
        hi: int,
        qualifier: str | None,
        in_type: bool,
        filler: Piece,
    ) -> list[Piece]:
        """Tile [lo, hi) with the declarations among ``children`` and the code between them."""
        pieces: list[Piece] = []
        cursor, gap = lo, []
        i = 0
        while i < len(children):
            child = children[i]
            decl = group = None
            if child.start_byte >= cursor:
                decl = self.classify(child)
                group = None if decl is not None else self.find_group(child)
            if decl is None and group is None:
                gap.append(child)
                i += 1
                continue
            parts = [child]
            if decl is not None and self.spec.calls:
                attached = self.attached(gap, cursor, child.start_byte)
                del gap[len(gap) - len(attached) :]
                last = self.last_clause(children, i, decl)
                parts = [*attached, *children[i : last + 1]]
                i = last
            start = self.claim_start(parts[0].start_byte, cursor)
            pieces += self.filler(cursor, start, gap, filler)
            end = self.claim_end(
                children[i], children[i + 1] if i + 1 < len(children) else None, hi
            )
            if decl is not None:
                pieces += self.declaration(decl, parts, start, end, qualifier, in_type)
            else:
                pieces += self.group(group, start, end, qualifier, filler)
            cursor, gap = end, []
            i += 1
        pieces += self.filler(cursor, hi, gap, filler)
        return pieces

    def attached(self, gap: list[Any], floor: int, start: int) -> list[Any]:
        """The comments and attributes at the end of ``gap`` that belong to the Elixir
        definition starting at ``start``: a blank line ends them, but not below ``@doc``,
        ``@spec`` or ``@impl``, which always describe the next definition."""
        found: list[Any] = []
        for node in reversed(gap):
            name = self._attribute(node)
            if node.start_byte < floor or (node.type != "comment" and name is None):
                break
            if name in _MODULE_ATTRIBUTES:
                break
            apart = self.data.count(b"\n", node.end_byte, start) > 1
            if apart and name not in _DEFINITION_ATTRIBUTES:
                break
            found.append(node)
            start = node.start_byte
        return found[::-1]

    def last_clause(self, children: list[Any], i: int, decl: Decl) -> int:
        """Index of the last clause of the Elixir function ``children[i]`` starts: the same
        definition of the same name, with only comments and attributes between."""
        last = i
        if decl.name is None or decl.kind in CONTAINER_KINDS:
            return last
        key = (self._definer(decl.node), decl.name)
        for j in range(i + 1, len(children)):
            node = children[j]
            other = self.classify(node)
            if other is None and (node.type == "comment" or self._attribute(node) is not None):
                continue
            if other is None or (self._definer(other.node), other.name) != key:
                break
            last = j
        return last

    def filler(self, start: int, end: int, nodes: list[Any], label: Piece) -> list[Piece]:
        if start >= end:
            return []
        bounds = [start]
        for node in nodes:
            cut = self.cut.snap(node.start_byte, bounds[-1])
            if start < cut < end and cut > bounds[-1]:
                bounds.append(cut)
        bounds.append(end)
        segments = [(a, b, None) for a, b in zip(bounds, bounds[1:], strict=False)]
        owners = {self.cut.snap(n.start_byte, start): n for n in nodes}
        segments = [(a, b, owners.get(a)) for a, b, _ in segments]
        return self.cut.pack(segments, label)

    def group(
        self, node: Any, start: int, end: int, qualifier: str | None, filler: Piece
    ) -> list[Piece]:
        """A namespace, module or ``#ifdef``: its members are chunked as if at its level."""
        if node.type in self.spec.qualifying:
            qualifier = _join(qualifier, self.name(node))
            filler = Piece(0, 0, "module", qualifier, self.signature(node), filler=True)
        body = self.body(node)
        members = (body if body is not None else node).named_children
        return self.layout(members, start, end, qualifier, False, filler)

    def declaration(
        self,
        decl: Decl,
        parts: list[Any],
        start: int,
        end: int,
        qualifier: str | None,
        in_type: bool,
    ) -> list[Piece]:
        """``parts``: the node that holds the declaration, or (Elixir) its attributes and
        clauses in order."""
        kind = "method" if decl.kind == "function" and in_type else decl.kind
        symbol = _join(qualifier, decl.name)
        label = Piece(0, 0, kind, symbol, self.signature(decl.node))
        if self.cut.fits_cheaply(start, end):
            return [label.at(start, end)]
        if kind in CONTAINER_KINDS:
            body = self.body(decl.node)
            members = body.named_children if body is not None else []
            if any(self.classify(m) or self.find_group(m) for m in members):
                return self.layout(
                    members, start, end, symbol or qualifier, self.spec.methods, label
                )
        if len(parts) > 1:
            return self.cut.pack(self.clause_segments(parts, start, end), label)
        return self.cut.split(start, end, parts[0], label)

    def clause_segments(self, parts: list[Any], start: int, end: int) -> list[Segment]:
        """Segments of an Elixir definition: one per clause with the attributes above it when
        that fits, else the attributes, the clause's head and its statements, so that a
        ``@doc`` packs with the head and first statements rather than alone."""
        bounds = [start, *(self.cut.snap(p.start_byte, start) for p in parts[1:]), end]
        segments: list[Segment] = []
        first = 0  # the first part of the current clause's unit
        for i, part in enumerate(parts):
            attribute = part.type == "comment" or self._attribute(part) is not None
            if attribute and i + 1 < len(parts):
                continue  # travels with the clause below
            unit, a, b = bounds[first], bounds[i], bounds[i + 1]
            if unit < b and self.cut.fits(unit, b):
                segments.append((unit, b, part))
            else:
                for j in range(first, i):
                    if bounds[j] < bounds[j + 1]:
                        segments += self.cut.node_segments(parts[j], bounds[j], bounds[j + 1])
                if a < b:
                    segments += self._opened(part, a, b)
            first = i + 1
        return segments

    def _opened(self, node: Any, start: int, end: int) -> list[Segment]:
        """[start, end) cut at the head and at each statement of ``node``'s ``do`` block."""
        body = self.body(node)
        if body is None:
            return self.cut.node_segments(node, start, end)
        bounds, owners = [start], [None]
        for child in body.named_children:
            cut = self.cut.snap(child.start_byte, bounds[-1])
            if bounds[-1] < cut < end and cut == self.cut.line_start(cut):
                bounds.append(cut)
                owners.append(child)
        bounds.append(end)
        return [
            (a, b, owner) for a, b, owner in zip(bounds, bounds[1:], owners, strict=False) if a < b
        ]

    # -- boundaries -------------------------------------------------------------------------
    def claim_start(self, offset: int, floor: int) -> int:
        """Start of a declaration's first line, taking the doc comments and attributes above."""
        start = self.cut.snap(offset, floor)
        if start != self.cut.line_start(offset):
            return start
        row = self.cut.line_of(start)
        starts = self.cut.line_starts
        while row > 0 and starts[row - 1] >= floor:
            line = self.data[starts[row - 1] : starts[row]].strip()
            if not line or not line.decode("utf-8", "replace").startswith(self.spec.doc_prefixes):
                break
            row -= 1
        return starts[row]

    def claim_end(self, node: Any, following: Any, hi: int) -> int:
        """End of the declaration's last line, unless the next sibling starts on that line."""
        end = self.cut.line_end(max(node.start_byte, node.end_byte - 1))
        if following is not None and following.start_byte < end:
            end = node.end_byte
        return int(max(node.end_byte, min(end, hi)))

    # -- what a node is ---------------------------------------------------------------------
    def classify(self, node: Any, depth: int = 0) -> Decl | None:
        if self.spec.calls:
            return self._call_decl(node)
        kind = self.spec.decls.get(node.type)
        if kind is None:
            if node.type in self.spec.wrappers and depth < 3:
                for child in node.named_children:
                    found = self.classify(child, depth + 1)
                    if found is not None:
                        return found
            return None
        if node.type == "variable_declarator":
            value = node.child_by_field_name("value")
            if value is None or value.type not in _FUNCTION_VALUES:
                return None
        if node.type.endswith("_specifier") and node.child_by_field_name("body") is None:
            return None  # `struct foo;` or a use of the type, not its definition
        if node.type in self.spec.keyword_kinds:
            kind = self._keyword_kind(node, kind)
        elif node.type == "type_declaration":  # Go
            spec = node.named_children[0] if node.named_children else None
            shape = spec.child_by_field_name("type") if spec is not None else None
            if shape is not None:
                kind = {"struct_type": "struct", "interface_type": "interface"}.get(
                    shape.type, "type"
                )
        elif node.type == "type_definition":  # C typedef
            inner = node.child_by_field_name("type")
            if inner is not None and inner.child_by_field_name("body") is not None:
                kind = self.spec.decls.get(inner.type, kind)
        declarator = node.child_by_field_name("declarator")
        # C++ `int Client::send(...)`: a method defined outside its class.
        if kind == "function" and declarator is not None:
            kind = "method" if "::" in self._text(declarator).split("(", 1)[0] else kind
        return Decl(node, kind, self.name(node))

    def _definer(self, node: Any) -> str | None:
        """What an Elixir definition is made with: ``def``, ``defmodule``, ``@callback``..."""
        if node.type == "unary_operator":
            attribute = self._attribute(node)
            return None if attribute is None else f"@{attribute}"
        if node.type != "call":
            return None
        target = node.child_by_field_name("target")
        return self._text(target) if target is not None and target.type == "identifier" else None

    def _call_decl(self, node: Any) -> Decl | None:
        """An Elixir ``def``/``defmodule``/``@callback``... named by its first argument."""
        definer = self._definer(node)
        kind = self.spec.calls.get(definer) if definer is not None else None
        if definer is None or kind is None:
            return None
        call = node.child_by_field_name("operand") if definer.startswith("@") else node
        args = next((c for c in call.named_children if c.type == "arguments"), None)
        if args is None or not args.named_children:
            return Decl(node, kind, None)
        head = args.named_children[0]
        name: str | None = None
        if kind in ("function", "macro"):
            # `def f(x) when ...`; `@callback f(x) :: t`
            while head.type == "binary_operator" and self._field_text(head, "operator") in (
                "when",
                "::",
            ):
                head = head.child_by_field_name("left")
            if head.type == "call":
                call_target = head.child_by_field_name("target")
                if call_target is not None and call_target.type == "identifier":
                    name = self._text(call_target)
            elif head.type == "identifier":
                name = self._text(head)
            elif head.type in ("binary_operator", "unary_operator"):
                name = self._field_text(head, "operator")
        else:
            name = self._text(head)
            # `defimpl Proto, for: Type` defines the module Proto.Type.
            keywords = [k for k in args.named_children if k.type == "keywords"]
            pairs = [pair for k in keywords for pair in k.named_children]
            for pair in pairs:
                if self._text(pair.named_children[0]).strip() == "for:":
                    name = f"{name}.{self._text(pair.named_children[-1])}"
        return Decl(node, kind, _SPACES.sub("", name) if name else None)

    def _attribute(self, node: Any) -> str | None:
        """The name of an Elixir module attribute (``@doc ...`` gives ``doc``), else None."""
        if node.type != "unary_operator" or self._field_text(node, "operator") != "@":
            return None
        operand = node.child_by_field_name("operand")
        if operand is not None and operand.type == "call":
            operand = operand.child_by_field_name("target")
        if operand is None or operand.type != "identifier":
            return None
        return self._text(operand)

    def _field_text(self, node: Any, field: str) -> str | None:
        found = node.child_by_field_name(field)
        return None if found is None else self._text(found)

    def find_group(self, node: Any, depth: int = 0) -> Any:
        """The namespace-like node that ``node`` is or wraps (``declare module``), else None."""
        if node.type in self.spec.transparent:
            if node.type.startswith("preproc_") or self.body(node) is not None:
                return node
        elif node.type in self.spec.wrappers and depth < 2:
            for child in node.named_children:
                found = self.find_group(child, depth + 1)
                if found is not None:
                    return found
        return None

    def _keyword_kind(self, node: Any, default: str) -> str:
        for child in node.children:
            if child.type == "modifiers" and "enum" in self._text(child):
                return "enum"
            if not child.is_named and child.type in KIND_KEYWORDS:
                return KIND_KEYWORDS[child.type]
        return default

    def body(self, node: Any) -> Any:
        if self.spec.calls:  # Elixir: `do ... end`
            return next((c for c in node.named_children if c.type == "do_block"), None)
        body = node.child_by_field_name("body")
        if body is not None and body.named_child_count:
            return body
        for child in node.named_children:
            if child.type in _BODY_TYPES:
                return child
        return body

    def name(self, node: Any) -> str | None:
        found = node.child_by_field_name("name")
        if node.type == "impl_item":  # Rust: the implementing type names the block
            found = node.child_by_field_name("type")
            while found is not None and found.child_by_field_name("type") is not None:
                found = found.child_by_field_name("type")
        elif found is None and node.child_by_field_name("declarator") is not None:
            found = node.child_by_field_name("declarator")  # C and C++: dig to the identifier
            while found is not None and found.type not in _NAME_TYPES:
                found = found.child_by_field_name("declarator") or next(
                    (c for c in found.named_children if c.type in _NAME_TYPES), None
                )
        elif found is None and node.type == "type_declaration" and node.named_children:
            return self.name(node.named_children[0])  # Go: the first type_spec
        if found is None:
            found = next((c for c in node.named_children if c.type in _NAME_TYPES), None)
        if found is None:
            return None
        name = _GENERICS.sub("", self.cut.text(found.start_byte, found.end_byte))
        name = name.replace("::", ".").replace(":", ".").replace("\\", ".").strip()
        receiver = node.child_by_field_name("receiver")  # Go methods: qualify by the receiver
        if receiver is not None:
            match = re.search(r"[A-Za-z_]\w*(?=\s*(?:\[[^\]]*\])?\s*\)$)", self._text(receiver))
            if match:
                name = f"{match.group(0)}.{name}"
        return name or None

    def signature(self, node: Any) -> str | None:
        body = self.body(node)
        end = body.start_byte if body is not None and body.start_byte > node.start_byte else None
        if end is None and self.spec.calls:
            end = self._inline_do(node)
        if end is None:
            end = self.cut.line_end(node.start_byte)
        lines = self.cut.text(node.start_byte, end).splitlines()
        # Annotations, attributes and comments are not the header: keep what follows them.
        header = [line for line in lines if not line.strip().startswith(_NOT_HEADER)]
        lines = header or lines[:1]
        text = _SPACES.sub(" ", " ".join(lines)).strip().rstrip("{").rstrip()
        return text[:MAX_SIGNATURE] or None

    def _inline_do(self, node: Any) -> int | None:
        """End of the head of an Elixir ``def f(x), do: ...`` (before the comma), else None."""
        args = next((c for c in node.named_children if c.type == "arguments"), None)
        if args is None:
            return None
        before = None
        for child in args.named_children:
            if child.type == "keywords" and any(
                self._text(p.named_children[0]).strip() == "do:" for p in child.named_children
            ):
                return before.end_byte if before is not None else None
            before = child
        return None

    def _text(self, node: Any) -> str:
        return self.cut.text(node.start_byte, node.end_byte)

    # -- neighbours -------------------------------------------------------------------------
    def merge_neighbours(self, pieces: list[Piece]) -> list[Piece]:
        """Closing braces or ``end`` join the piece before; adjacent blocks of one scope join."""
        out: list[Piece] = []
        for piece in pieces:
            if out:
                prev = out[-1]
                text = self.data[piece.start : piece.end]
                closer = _CLOSERS.fullmatch(text) is not None
                same = prev.filler and piece.filler and prev.symbol == piece.symbol
                if (closer or same) and self._joinable(prev, piece):
                    out[-1] = replace(prev, end=piece.end)
                    continue
            out.append(piece)
        return out

    def _joinable(self, prev: Piece, piece: Piece) -> bool:
        return self.cut.lines(prev.start, piece.end) <= PACK_LINES and self.cut.fits_cheaply(
            prev.start, piece.end
        )


def _join(qualifier: str | None, name: str | None) -> str | None:
    if qualifier and name:
        return f"{qualifier}.{name}"
    return name or qualifier
