"""Error bodies carry stable codes, not class names, and every code is documented."""

from __future__ import annotations

import re
from pathlib import Path

from kenning import errors

DOCS = Path(__file__).resolve().parents[1] / "docs" / "mcp.md"
# codes clients already match on: a class may be added, these never change
GOLDEN = {
    "KenningError": "error", "UsageError": "bad_input", "StaleChunkId": "stale_chunk_id",
    "ConfigError": "bad_config", "EmbedderError": "embedder_failed",
    "EmbedderUnavailable": "embedder_unavailable", "ModelNotFound": "model_not_found",
    "IndexError_": "index_unreadable", "IndexMissing": "index_missing",
    "IndexBusy": "index_busy", "IndexDamaged": "index_damaged",
    "AgentSetupError": "agent_setup_failed",
}


def every_error_class() -> list[type[errors.KenningError]]:
    found, todo = [], [errors.KenningError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return found


def test_error_json_is_golden() -> None:
    body = errors.StaleChunkId("The id is from an older index generation.",
                               hint="Search again.").to_dict()
    assert body == {"error": "stale_chunk_id",
                    "message": "The id is from an older index generation.",
                    "hint": "Search again."}
    assert errors.IndexMissing("No index yet.").to_dict() == {
        "error": "index_missing", "message": "No index yet.", "hint": None}
    codes = {cls.__name__: cls.code for cls in every_error_class()}
    assert {name: codes[name] for name in GOLDEN} == GOLDEN


def test_every_code_is_a_documented_identifier() -> None:
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", DOCS.read_text(), re.MULTILINE))
    codes = {cls.code for cls in every_error_class()} | {errors.INTERNAL_ERROR}
    for code in codes:
        assert re.fullmatch(r"[a-z][a-z_]*", code), code
    assert codes <= documented, f"undocumented in docs/mcp.md: {sorted(codes - documented)}"
