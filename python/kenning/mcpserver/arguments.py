"""A tool call's arguments checked against the tool's input schema before the SDK reads them.

The SDK's argument model ignores names it does not know and coerces types as pydantic's lax
mode does ("5" and true become integers, "true" and 1 booleans, after it has parsed each string
as JSON), so a misspelt argument or a wrong type would be served as something the caller did
not ask for. Here the raw arguments must name parameters of the tool and hold the JSON types
its schema gives; anything else is the ``bad_input`` error.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match


def problem(tool: str, schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """What is wrong with ``arguments`` of ``tool`` (one sentence), or None."""
    properties = schema.get("properties", {})
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        return (f"{tool}: {unknown[0]}: not an argument of this tool, which takes "
                f"{', '.join(sorted(properties))}.")
    error = best_match(Draft202012Validator(schema).iter_errors(arguments))
    if error is None:
        return None
    where = ".".join(str(part) for part in error.absolute_path) or "the arguments"
    return f"{tool}: {where}: {error.message}."
