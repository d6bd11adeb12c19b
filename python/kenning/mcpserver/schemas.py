"""The tools' JSON schemas as MCP (2025-06-18 and later) reads them: each tool's ``outputSchema``
(the structured content of a successful answer; the SDK validates every answer against it
before it leaves), and input schemas in which an optional argument is absent, never null.

An output schema names what an agent or a program relies on and allows more (``extra``), so a
field added to the library's JSON does not break a client.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


def absent(enum: list[str] | None = None) -> Any:
    """``json_schema_extra`` for an optional argument: its schema without the ``null`` a
    ``str | None`` brings (some clients' validators, Gemini's among them, refuse a union with
    null) and without a default; leaving it out is how a client says "none"."""

    def edit(schema: dict[str, Any]) -> None:
        schema.pop("default", None)
        choices = schema.pop("anyOf", None)
        if choices:
            schema.update(next(c for c in choices if c.get("type") != "null"))
        if enum is not None:
            schema["enum"] = enum

    return edit


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Link(_Open):
    """A caller or callee of a result."""

    id: str
    path: str
    start_line: int
    end_line: int
    symbol: str | None = None


class Hit(_Open):
    id: str
    project: str
    path: str
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    kind: str
    chunk_class: str | None = Field(None, description=(
        "What the file is to the project: code, test, docs, vendored, fixture, data, ..."))
    symbol: str | None
    score: float
    confidence: float | None = Field(None, ge=0, le=1, description=(
        "The chance that the result answers (calibrated); below the weak threshold the "
        "result is weak."))
    content: str | None = Field(description="The source, inside untrusted-content markers; "
                                            "null when shown as a location only.")
    stale: bool
    weak: bool = False
    uri: str = Field(description="The chunk as an MCP resource (resources/read).")
    callers: list[Link] | None = None
    callees: list[Link] | None = None


class LeftOut(_Open):
    notice: str


class Budget(BaseModel):
    tokens: int
    used: int


class SearchAnswer(_Open):
    """code_search's and code_related's structured content: kenning's search result JSON."""

    type: Literal["search_result", "related_result"]
    results: list[Hit]
    warnings: list[str]
    detail: Literal["snippets", "locations"]
    nonce: str
    max_tokens: int
    budget: Budget | None = None
    left_out: LeftOut | None = None
    no_strong_match: bool = Field(False, description=(
        "Every result is weak: the answer may not be in the project."))


class ChunkAnswer(_Open):
    type: Literal["chunk"]
    id: str
    path: str
    start_line: int
    end_line: int
    kind: str
    symbol: str | None
    content: str = Field(description="The body, inside untrusted-content markers.")
    body_may_be_stale: bool
    nonce: str
    uri: str
    left_out: LeftOut | None = None


class ProjectState(_Open):
    project: str
    state: str


class StatusAnswer(_Open):
    type: Literal["index_status"]
    embedder: dict[str, Any]
    projects: list[ProjectState]


class ReindexAnswer(_Open):
    type: Literal["reindex"]
    projects: list[ProjectState]


class Repository(_Open):
    project: str
    score: float
    hits: int
    top_paths: list[str]
    root: str | None


class RepositoriesAnswer(_Open):
    type: Literal["repositories"]
    query: str
    repositories: list[Repository]
    without_hits: list[str]
    warnings: list[str]
