"""A tool call's arguments checked against the tool's input schema before the SDK reads them.

The SDK's argument model ignores names it does not know and coerces types as pydantic's lax
mode does ("5" and true become integers, "true" and 1 booleans, after it has parsed each string
as JSON), so a misspelt argument or a wrong type would be served as something the caller did
not ask for. Here the raw arguments must name parameters of the tool and hold a JSON type its
schema gives them; their values (ranges, the filters' aliases) are the tool's to judge.
"""

from __future__ import annotations

from typing import Any

_NAMES = {"boolean": "a boolean", "integer": "an integer", "number": "a number",
          "string": "a string", "array": "an array", "object": "an object", "null": "null"}


def _types(schema: dict[str, Any]) -> set[str]:
    """The JSON types a property's schema allows (empty: any)."""
    declared = schema.get("type")
    if declared is not None:
        return set(declared) if isinstance(declared, list) else {declared}
    return {kind for key in ("anyOf", "oneOf") for part in schema.get(key, [])
            for kind in _types(part)}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), "null")


def problem(tool: str, schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """What is wrong with ``arguments`` of ``tool`` (one sentence), or None."""
    properties: dict[str, Any] = schema.get("properties", {})
    for name, value in sorted(arguments.items()):
        if name not in properties:
            return (f"{tool}: {name}: not an argument of this tool, which takes "
                    f"{', '.join(sorted(properties))}.")
        allowed = _types(properties[name])
        kind = _json_type(value)
        if allowed and kind not in allowed and not (kind == "integer" and "number" in allowed):
            wanted = " or ".join(_NAMES.get(json, json) for json in sorted(allowed))
            return f"{tool}: {name}: {_NAMES[kind]} where {wanted} is wanted."
    return None
