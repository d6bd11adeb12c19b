"""A search that finds nothing relevant says so: results carry ``weak`` (JSON and MCP), and the
human output says it in one line (a real index searched with the local model)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from index_helpers import kenning_cli
from kenning.mcpserver import render

if TYPE_CHECKING:
    from search_fixtures import Indexed

pytest_plugins = ["search_fixtures"]


def _search(capsys: pytest.CaptureFixture[str], indexed: Indexed, query: str) -> dict:
    code, out, _ = kenning_cli(capsys, "search", query, str(indexed.root), "--json-output",
                               "--no-refresh")
    assert code == 0
    return dict(json.loads(out))


def test_a_name_no_chunk_contains_makes_every_result_weak(
        indexed: Indexed, capsys: pytest.CaptureFixture[str]) -> None:
    found = _search(capsys, indexed, "parse_header_folded")  # a name deleted or never written
    assert found["results"] and all(r["weak"] for r in found["results"])
    code, out, err = kenning_cli(capsys, "search", "parse_header_folded", str(indexed.root),
                                 "--no-refresh")
    assert code == 0 and out
    assert "Nothing relevant found" in err and err.count("Nothing relevant found") == 1


def test_a_declared_name_is_not_weak(indexed: Indexed,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    found = _search(capsys, indexed, "parse_header")
    assert found["results"][0]["symbol"] == "parse_header"
    assert not found["results"][0]["weak"]
    code, _, err = kenning_cli(capsys, "search", "parse_header", str(indexed.root),
                               "--no-refresh")
    assert code == 0 and "Nothing relevant found" not in err


def test_a_result_under_the_relevance_floor_is_weak(indexed: Indexed,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # two words: the floor does not drop candidates (it needs three), so it marks them
    found = _search(capsys, indexed, "volcano eruption")
    assert found["results"] and all(r["weak"] for r in found["results"])
    assert not any(r["weak"] for r in _search(capsys, indexed, "retry backoff")["results"][:1])


def test_mcp_says_weak(indexed: Indexed, capsys: pytest.CaptureFixture[str]) -> None:
    found = _search(capsys, indexed, "parse_header_folded")
    out = render.search_result(found, detail="snippets", max_tokens=8000, show_project=False)
    assert "Nothing relevant found" in out.text and "weak match" in out.text
    assert all(r["weak"] for r in out.structured["results"])


# A question whose answer this repository does not hold (no chunk says "upload" or "cloud"),
# whose results pass the relevance floor, and one it answers.
ABSENT = "upload request bodies to cloud storage"
PRESENT = "check a password against its stored hash"


def test_an_absent_answer_has_no_strong_match_and_a_present_one_has(
        indexed: Indexed, capsys: pytest.CaptureFixture[str]) -> None:
    absent, present = _search(capsys, indexed, ABSENT), _search(capsys, indexed, PRESENT)
    assert absent["no_strong_match"] is True and all(r["weak"] for r in absent["results"])
    assert present["no_strong_match"] is False
    assert present["results"][0]["path"] == "src/auth/passwords.py"
    assert not present["results"][0]["weak"]
    for r in absent["results"] + present["results"]:
        assert 0 <= r["confidence"] <= 1
    # one scale: the answer is more probable than anything the absent question gets
    assert present["results"][0]["confidence"] > max(r["confidence"] for r in absent["results"])


def test_human_output_says_no_strong_match_first(indexed: Indexed,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = kenning_cli(capsys, "search", ABSENT, str(indexed.root), "--no-refresh")
    assert code == 0 and "confidence 0." in out
    assert err.splitlines()[0].startswith(f'No strong match for "{ABSENT}"')
    _, out, err = kenning_cli(capsys, "search", PRESENT, str(indexed.root), "--no-refresh")
    assert "No strong match" not in err and "confidence" in out


def test_mcp_says_no_strong_match_first(indexed: Indexed,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    found = _search(capsys, indexed, ABSENT)
    out = render.search_result(found, detail="locations", max_tokens=8000, show_project=False)
    assert out.text.startswith(f'No strong match for "{ABSENT}"')
    assert out.structured["no_strong_match"] is True
    assert all("confidence" in r for r in out.structured["results"])
    assert f"confidence {found['results'][0]['confidence']:.2f}" in out.text
    present = render.search_result(_search(capsys, indexed, PRESENT), detail="locations",
                                   max_tokens=8000, show_project=False)
    assert "No strong match" not in present.text
    assert present.structured["no_strong_match"] is False
