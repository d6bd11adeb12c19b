"""Format-preserving edits of JSON files: add or remove one member, keep every other byte.

Re-serialising a user's settings file would rewrite it in the library's style (reflowed
arrays, other indentation, escapes). Instead the standard library's decoder locates members
(their byte spans), and an edit splices text in or out at those spans: an added member
follows the indentation of its neighbours (or the file's indent unit), and removing it again
restores the original bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from kenning.agents.blocks import newline_of

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\r\n\ufeff"


@dataclass(frozen=True)
class Slot:
    """One member of an object (``key`` set) or element of an array."""

    key: str | None
    start: int
    value_start: int
    value_end: int


@dataclass(frozen=True)
class Node:
    """An object or array: its bracket positions and its slots in order."""

    open: int
    close: int
    slots: tuple[Slot, ...]


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WHITESPACE:
        i += 1
    return i


def _scan(text: str, i: int) -> Node:
    """The container starting at ``text[i]``; ``text`` is already known to be valid JSON."""
    closer = "}" if text[i] == "{" else "]"
    slots: list[Slot] = []
    j = _skip(text, i + 1)
    if text[j] == closer:
        return Node(i, j, ())
    while True:
        start, key = j, None
        if closer == "}":
            key, j = json.decoder.scanstring(text, j + 1)  # type: ignore[attr-defined]
            j = _skip(text, _skip(text, j) + 1)  # past the colon
        value_start = j
        _, j = _DECODER.raw_decode(text, j)
        slots.append(Slot(key, start, value_start, j))
        j = _skip(text, j)
        if text[j] == closer:
            return Node(i, j, tuple(slots))
        j = _skip(text, j + 1)  # past the comma


def _node_at(text: str, path: Sequence[str]) -> Node | None:
    node = _scan(text, _skip(text, 0))
    for key in path:
        slot = _member(node, key)
        if slot is None or text[slot.value_start] not in "{[":
            return None
        node = _scan(text, slot.value_start)
    return node


def _member(node: Node, key: str) -> Slot | None:
    found = [s for s in node.slots if s.key == key]
    return found[-1] if found else None  # JSON's rule: the last duplicate wins


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    match = re.match(r"[ \t]*", text[line_start:])
    return match.group(0) if match else ""


def _indent_unit(text: str) -> str:
    match = re.search(r"\n([ \t]+)\S", text)
    return match.group(1) if match else "  "


def _insert(text: str, node: Node, key: str | None, value: Any) -> str:
    """``text`` with a member (or array element) appended to ``node``."""
    nl = newline_of(text)
    label = "" if key is None else json.dumps(key) + ": "
    if node.slots and nl not in text[node.open : node.close]:  # a one-line container
        member = label + json.dumps(value)
        return text[: node.slots[-1].value_end] + ", " + member + text[node.slots[-1].value_end :]
    unit = _indent_unit(text)
    outer = _line_indent(text, node.open)
    inner = _line_indent(text, node.slots[-1].start) if node.slots else outer + unit
    member = label + json.dumps(value, indent=unit).replace("\n", nl + inner)
    if node.slots:
        at = node.slots[-1].value_end
        return text[:at] + "," + nl + inner + member + text[at:]
    return text[: node.open + 1] + nl + inner + member + nl + outer + text[node.close :]


def _delete(text: str, node: Node, index: int) -> str:
    """``text`` without slot ``index`` of ``node``, undoing :func:`_insert` exactly."""
    slots = node.slots
    if len(slots) == 1:
        return text[: node.open + 1] + text[node.close :]
    if index == len(slots) - 1:
        return text[: slots[index - 1].value_end] + text[slots[index].value_end :]
    return text[: slots[index].start] + text[slots[index + 1].start :]


def _value(text: str, slot: Slot) -> Any:
    return json.loads(text[slot.value_start : slot.value_end])


def load(text: str) -> Any:
    """The parsed document; raises ValueError (with line and column) when it is not JSON."""
    return json.loads(text.lstrip("\ufeff"))


def empty(text: str) -> bool:
    return not text.strip(_WHITESPACE) or load(text) == {}


def set_member(text: str | None, path: Sequence[str], key: str, value: Any) -> str:
    """``text`` with ``path/key`` = ``value``, creating missing objects along ``path``.

    The caller has checked that ``path/key`` is absent.
    """
    if text is None or not text.strip(_WHITESPACE):
        doc: Any = {key: value}
        for name in reversed(path):
            doc = {name: doc}
        return json.dumps(doc, indent=2) + "\n"
    for depth in range(len(path), -1, -1):
        node = _node_at(text, path[:depth])
        if node is None:
            continue
        # path[:depth] exists: wrap the value in the objects that are still missing
        nested, name = value, key
        for missing in reversed(path[depth:]):
            nested, name = {name: nested}, missing
        return _insert(text, node, name, nested)
    raise AssertionError("the root object always exists")


def append_element(text: str | None, path: Sequence[str], value: Any) -> str:
    """``text`` with ``value`` appended to the array at ``path`` (created when missing)."""
    node = None if text is None or not text.strip(_WHITESPACE) else _node_at(text, path)
    if text is None or node is None:
        return set_member(text, path[:-1], path[-1], [value])
    return _insert(text, node, None, value)


def missing(text: str | None, path: Sequence[str]) -> list[tuple[str, ...]]:
    """The containers along ``path`` (``("hooks",)``, ``("hooks", "SessionStart")``) that
    ``text`` lacks: those that adding a member at ``path`` creates."""
    if text is None or not text.strip(_WHITESPACE):
        return [tuple(path[:depth]) for depth in range(1, len(path) + 1)]
    return [tuple(path[:depth]) for depth in range(1, len(path) + 1)
            if _node_at(text, path[:depth]) is None]


def remove_where(
    text: str, path: Sequence[str], match: Callable[[str | None, Any], bool],
    prunable: Collection[tuple[str, ...]],
) -> str:
    """``text`` without the slots of the container at ``path`` for which ``match(key, value)``.

    Afterwards the containers along ``path`` that are ``prunable`` are removed when left
    empty, innermost first, stopping at the first one that stays.
    """
    node = _node_at(text, path)
    if node is None:
        return text
    for index in range(len(node.slots) - 1, -1, -1):
        if match(node.slots[index].key, _value(text, node.slots[index])):
            text = _delete(text, node, index)
            node = _node_at(text, path)
            assert node is not None
    for depth in range(len(path), 0, -1):
        node = _node_at(text, path[:depth])
        parent = _node_at(text, path[: depth - 1])
        if tuple(path[:depth]) not in prunable or node is None or node.slots or parent is None:
            break
        index = max(i for i, s in enumerate(parent.slots) if s.key == path[depth - 1])
        text = _delete(text, parent, index)
    return text
