"""Format-preserving edits of a TOML file: add or remove one ``[a.b]`` table.

The table is appended as text after the user's content, and removing it cuts exactly that text,
so comments, blank lines and key order elsewhere stay byte for byte. tomlkit checks every
result: the edit must leave a valid document whose data differs only by the table. Where the
text cut cannot be proven exact (a table rewritten by hand with sub-tables in between), the
removal falls back to tomlkit's structural delete, which still keeps comments and order.
"""

from __future__ import annotations

import re
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from kenning.agents.blocks import append_block, cut_block


def load(text: str) -> dict[str, Any]:
    """The parsed document as plain data; raises TOMLKitError when it is not valid TOML."""
    return tomlkit.parse(text).unwrap()


def get(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _render(path: tuple[str, ...], value: dict[str, Any]) -> str:
    header = "[" + ".".join(tomlkit.key(k).as_string() for k in path) + "]"
    body = tomlkit.dumps(value).rstrip("\n")
    return f"{header}\n{body}"


def _without(data: dict[str, Any], path: tuple[str, ...], *, prune: bool) -> dict[str, Any]:
    """A copy of ``data`` without ``path``; ``prune`` also drops parents left empty."""
    if len(path) == 1:
        return {k: v for k, v in data.items() if k != path[0]}
    head, rest = path[0], path[1:]
    inner = _without(data[head], rest, prune=prune)
    copy = dict(data)
    if inner or not prune:
        copy[head] = inner
    else:
        del copy[head]
    return copy


def add_table(text: str | None, path: tuple[str, ...], value: dict[str, Any]) -> str:
    """``text`` with the table ``path`` = ``value`` appended; the caller checked it is absent."""
    new = append_block(text or "", _render(path, value))
    load(new)  # raises when the table cannot be added this way (e.g. an inline parent table)
    return new


def _table_span(text: str, path: tuple[str, ...]) -> tuple[int, int] | None:
    """Where the ``[path]`` table's header and keys are, excluding trailing blank lines."""
    dotted = r"\s*\.\s*".join(re.escape(k) for k in path)
    header = re.search(rf"(?m)^[ \t]*\[\s*{dotted}\s*\][ \t]*(#[^\r\n]*)?\r?$", text)
    if header is None:
        return None
    header_end = end = header.start() + len(header.group(0).rstrip())
    for line in re.finditer(r"(?m)^.*$", text[header_end:]):
        stripped = line.group(0).strip()
        if stripped.startswith("["):
            break
        if stripped and not stripped.startswith("#"):
            end = header_end + line.start() + len(line.group(0).rstrip())
    return header.start(), end


def remove_table(text: str, path: tuple[str, ...]) -> str:
    """``text`` without the table ``path`` (and a parent table left empty by the removal)."""
    data = load(text)
    expected = (_without(data, path, prune=True), _without(data, path, prune=False))
    span = _table_span(text, path)
    if span is not None:
        cut = cut_block(text, *span)
        try:
            if load(cut) in expected:
                return cut
        except TOMLKitError:
            pass
    doc = tomlkit.parse(text)
    containers: list[Any] = [doc]
    for key in path[:-1]:
        containers.append(containers[-1][key])
    del containers[-1][path[-1]]
    for depth in range(len(path) - 1, 0, -1):  # drop parents the removal left empty
        if containers[depth]:
            break
        del containers[depth - 1][path[depth - 1]]
    return tomlkit.dumps(doc)
