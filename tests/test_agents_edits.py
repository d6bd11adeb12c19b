"""Round trips of the format-preserving editors on generated documents: add, then remove, and
every byte is back."""

from __future__ import annotations

import json
from typing import Any

import tomlkit
from hypothesis import given, settings
from hypothesis import strategies as st
from kenning.agents import jsonedit, markdown, tomledit
from kenning.agents.blocks import append_block, cut_block

ENTRY = {"command": "kenning", "args": ["mcp"]}
GROUP = {"matcher": "startup", "hooks": [{"type": "command", "command": "kenning index &"}]}

keys = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)
scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=8,
)
styles = st.sampled_from([
    {"indent": 2}, {"indent": 4}, {"indent": "\t"}, {"indent": None},
    {"indent": 2, "ensure_ascii": False}, {"indent": None, "separators": (",", ":")},
])


def _documents(extra: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda doc, style, final_newline, crlf: _render(doc, style, final_newline, crlf),
        st.dictionaries(keys.filter(lambda k: k not in {"mcpServers", "hooks"}), values,
                        max_size=4).flatmap(lambda d: extra.map(lambda e: {**d, **e})),
        styles, st.booleans(), st.booleans(),
    )


def _render(doc: dict[str, Any], style: dict[str, Any], final_newline: bool, crlf: bool) -> str:
    text = json.dumps(doc, **style) + ("\n" if final_newline else "")
    return text.replace("\n", "\r\n") if crlf else text


mcp_parents = st.sampled_from([{}, {"mcpServers": {}}, {"mcpServers": {"other": {"x": 1}}}])
hook_parents = st.sampled_from([
    {}, {"hooks": {}}, {"hooks": {"Stop": []}}, {"hooks": {"SessionStart": [{"hooks": []}]}},
])


@settings(max_examples=150, deadline=None)
@given(_documents(mcp_parents))
def test_json_member_round_trip(text: str) -> None:
    added = jsonedit.set_member(text, ["mcpServers"], "kenning", ENTRY)
    doc = jsonedit.load(added)
    assert doc["mcpServers"]["kenning"] == ENTRY
    assert {k: v for k, v in doc.items() if k != "mcpServers"} == {
        k: v for k, v in jsonedit.load(text).items() if k != "mcpServers"}
    removed = jsonedit.remove_where(added, ["mcpServers"], lambda k, _: k == "kenning",
                                    prunable=jsonedit.missing(text, ["mcpServers"]))
    assert removed == text  # an empty "mcpServers": {} of the user's included


@settings(max_examples=150, deadline=None)
@given(_documents(hook_parents))
def test_json_array_element_round_trip(text: str) -> None:
    added = jsonedit.append_element(text, ["hooks", "SessionStart"], GROUP)
    assert jsonedit.load(added)["hooks"]["SessionStart"][-1] == GROUP
    removed = jsonedit.remove_where(added, ["hooks", "SessionStart"], lambda _, v: v == GROUP,
                                    prunable=jsonedit.missing(text, ["hooks", "SessionStart"]))
    assert removed == text


toml_keys = st.text("abcdefghij_-", min_size=1, max_size=6).filter(lambda k: k != "mcp_servers")
toml_values = st.integers() | st.text(max_size=8) | st.lists(st.integers(), max_size=3)
toml_docs = st.dictionaries(
    toml_keys, toml_values | st.dictionaries(toml_keys, toml_values, max_size=3), max_size=4
)


@settings(max_examples=100, deadline=None)
@given(toml_docs, st.sampled_from([None, {}, {"docs": {"command": "d"}}]), st.booleans(),
       st.sampled_from(["", "# a comment\n", "\n\n"]))
def test_toml_table_round_trip(data: dict[str, Any], servers: dict[str, Any] | None,
                               strip_newline: bool, prefix: str) -> None:
    doc = dict(data)
    if servers is not None:
        doc["mcp_servers"] = servers
    text = prefix + tomlkit.dumps(doc)
    if strip_newline:
        text = text.rstrip("\n")
    added = tomledit.add_table(text, ("mcp_servers", "kenning"), ENTRY)
    assert tomledit.get(tomledit.load(added), ("mcp_servers", "kenning")) == ENTRY
    assert tomledit.remove_table(added, ("mcp_servers", "kenning")) == text


@settings(max_examples=150, deadline=None)
@given(st.text(st.characters(blacklist_characters="\r<"), max_size=60), st.booleans())
def test_markdown_block_round_trip(text: str, crlf: bool) -> None:
    if crlf:
        text = text.replace("\n", "\r\n")
    added = markdown.set_block(text, "Use kenning.", "CLAUDE.md")
    assert markdown.find_block(added, "CLAUDE.md") is not None
    assert markdown.set_block(added, "Use kenning.", "CLAUDE.md") == added  # idempotent
    removed = markdown.remove_block(added, "CLAUDE.md")
    assert removed == (text if text.strip() else None)


def test_block_in_the_middle_keeps_one_blank_line() -> None:
    text = append_block("# Top\n", "BLOCK") + "\n# Added later\n"
    start = text.index("BLOCK")
    assert cut_block(text, start, start + len("BLOCK")) == "# Top\n\n# Added later\n"
