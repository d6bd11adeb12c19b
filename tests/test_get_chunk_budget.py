"""get_chunk of a declaration too long to read whole: its head and the chunk named, with markers
and a note for the lines left out (a real index searched with the local model)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kenning import config
from kenning.indexing.indexer import refresh
from kenning.mcpserver import render
from kenning.retrieval import ProjectRef
from kenning.services.chunks import CHUNK_MAX_LINES, HEAD_LINES, get_chunk
from kenning.services.search import search

STEPS = "\n".join(f"    total_{i} = total_{i - 1} + weights[{i % 7}] * {i}" for i in range(1, 900))
GIANT = f'''def blend_weights(weights, total_0=0):
    """Blend the weights into one running total, step by step."""
{STEPS}
    reconciled = total_899 * 2  # reconcile the ledger against the audit trail
    return reconciled
'''


@pytest.fixture
def giant(tmp_path: Path) -> list[ProjectRef]:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "blend.py").write_text(GIANT)
    refresh(tmp_path / "repo", config.load())
    return [ProjectRef("giant", tmp_path / "repo")]


def test_a_giant_declaration_comes_as_its_head_and_the_chunk_named(
        giant: list[ProjectRef]) -> None:
    found = search("reconcile the ledger against the audit trail", giant,
                   settings=config.load(), refresh=False)
    hit = found["results"][0]
    assert hit["symbol"] == "blend_weights" and hit["end_line"] - hit["start_line"] > 900
    chunk = get_chunk(hit["id"], giant, settings=config.load())
    lines = chunk["content"].splitlines()
    assert len(lines) < CHUNK_MAX_LINES
    assert lines[0] == "def blend_weights(weights, total_0=0):"  # the signature, then its doc
    assert lines[HEAD_LINES - 1].startswith("    total_")
    marker = re.compile(r"… (\d+) more lines \((\d+)-(\d+)\) …")
    gaps = [m.groups() for line in lines if (m := marker.fullmatch(line))]
    assert len(gaps) >= 1 and gaps[0][1] == str(HEAD_LINES + 1)
    assert "reconcile the ledger" in chunk["content"]  # the chunk the id names
    note = chunk["note"]
    assert note and f"lines {HEAD_LINES + 1}-" in note and "left out" in note
    assert all(f"{a}-{b}" in note for _, a, b in gaps)
    # the MCP rendering keeps the note, and says what its own cut leaves out as not shown
    out = render.chunk(chunk, max_tokens=600)
    assert "left out" in out.text and "are not shown; read them from blend.py" in out.text


def test_a_short_declaration_comes_whole(giant: list[ProjectRef], tmp_path: Path) -> None:
    (tmp_path / "repo" / "small.py").write_text("def small(x):\n    return x + 1\n")
    refresh(tmp_path / "repo", config.load())
    hit = search("small", giant, settings=config.load(), refresh=False)["results"][0]
    chunk = get_chunk(hit["id"], giant, settings=config.load())
    assert chunk["content"] == "def small(x):\n    return x + 1" and chunk["note"] is None
