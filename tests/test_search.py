"""Search over a small repository indexed with the real local model."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from kenning import config
from kenning.errors import UsageError
from kenning.project import project_id
from kenning.retrieval import ProjectRef, resolve_projects
from kenning.retrieval.query import analyze
from kenning.retrieval.ranking import later_parts
from kenning.retrieval.snapshot_source import candidate_of
from kenning.services.chunks import get_chunk
from kenning.services.search import search
from kenning.store import Index
from kenning.store.ids import ChunkId

if TYPE_CHECKING:
    from search_fixtures import Indexed

pytest_plugins = ["search_fixtures"]  # the indexed fixture repositories

RESULT_KEYS = {"id", "project", "path", "start_line", "end_line", "start_byte", "end_byte",
               "kind", "chunk_class", "symbol", "score", "content", "stale", "weak", "revision",
               "changed_since_index", "content_hash", "lines", "confidence"}


def run(state: Indexed, query: str, **kwargs: Any) -> dict:
    refs = kwargs.pop("projects", None) or resolve_projects(config.load(), [state.root])
    return search(query, refs, settings=config.load(), refresh=kwargs.pop("refresh", False),
                  **kwargs)


@pytest.mark.parametrize(("query", "path", "symbol"), [
    ("how long to wait before trying a failed request again", "src/http/retry.py", None),
    ("evict the least recently used entries", "src/storage/cache.py", "LruCache"),
    ("verify that a password matches the stored digest", "src/auth/passwords.py",
     "verify_password"),
    ("match an incoming url to a registered route handler", "web/router.js", None),
])
def test_natural_queries_find_the_right_chunk_first(indexed: Indexed, query: str, path: str,
                                                    symbol: str | None) -> None:
    top = run(indexed, query)["results"][0]
    assert top["path"] == path
    if symbol:
        assert top["symbol"] == symbol


@pytest.mark.parametrize(("query", "symbol"), [
    ("parse_header", "parse_header"),
    ("HttpClient.send", "HttpClient"),
    ("Router", "Router"),
    ("call_with_retries", "call_with_retries"),
    ("verify_password", "verify_password"),
])
def test_identifier_queries_find_the_definition(indexed: Indexed, query: str,
                                                symbol: str) -> None:
    assert run(indexed, query)["results"][0]["symbol"] == symbol


def test_result_schema(indexed: Indexed) -> None:
    result = run(indexed, "parse a header line")
    assert set(result) == {"type", "query", "results", "warnings", "revision", "vectors_deferred",
                           "budget", "no_strong_match"}
    assert result["type"] == "search_result" and result["query"] == "parse a header line"
    hit = result["results"][0]
    assert set(hit) == RESULT_KEYS
    data = (indexed.root / hit["path"]).read_bytes()
    assert hit["content"] == data[hit["start_byte"]:hit["end_byte"]].decode()
    # the lines are those of the bytes: the first holds start_byte, the last the final byte
    assert hit["start_line"] == data.count(b"\n", 0, hit["start_byte"]) + 1
    assert hit["end_line"] == data.count(b"\n", 0, hit["end_byte"] - 1) + 1
    assert ChunkId.parse(hit["id"]).project == hit["project"]
    assert hit["stale"] is False
    chunk = get_chunk(hit["id"], resolve_projects(config.load(), [indexed.root]),
                      settings=config.load())
    assert chunk["content"] == hit["content"] and chunk["path"] == hit["path"]


def test_filters_apply_inside_retrieval(indexed: Indexed) -> None:
    query = "how long to wait before trying a failed request again"
    # the best matches are in src/http, yet a filtered search still fills its page
    hits = run(indexed, query, path_filter="tests")["results"]
    assert hits and all(h["path"].startswith("tests/") for h in hits)
    routes = run(indexed, "match a url to a handler", language="javascript")["results"]
    assert routes and all(h["path"].endswith(".js") for h in routes)
    python = run(indexed, "match a url to a handler", language="python")["results"]
    assert all(h["path"].endswith(".py") for h in python)
    docs = run(indexed, "configuration settings file", kind="docs")["results"]
    assert docs and all(h["path"].endswith(".md") for h in docs)
    code = run(indexed, "configuration settings file", kind="code")["results"]
    assert all(not h["path"].endswith(".md") for h in code)
    functions = run(indexed, query, kind="function")["results"]
    assert functions and all(h["kind"] == "function" for h in functions)
    globbed = run(indexed, "store a password", path_filter="src/*/pass*.py")["results"]
    assert globbed and {h["path"] for h in globbed} == {"src/auth/passwords.py"}
    # [!x] negates as in a shell and in .gitignore (SQLite's GLOB alone reads ! as a member)
    negated = run(indexed, "store a password", path_filter="src/[!a]*")["results"]
    assert negated and not any(h["path"].startswith("src/auth/") for h in negated)
    assert all(h["path"].startswith("src/") for h in negated)


@pytest.mark.parametrize("bad", ["../elsewhere", "src/../../x", "/definitely/not/the/root"])
def test_path_filter_escaping_the_root_is_refused(indexed: Indexed, bad: str) -> None:
    with pytest.raises(UsageError, match="root"):
        run(indexed, "retry", path_filter=bad)


@pytest.mark.parametrize("bad", ["[[[!", "src/[a", "src/[!]", "*.[ch"])
def test_a_glob_whose_class_never_closes_is_refused(indexed: Indexed, bad: str) -> None:
    with pytest.raises(UsageError, match="never closes"):
        run(indexed, "retry", path_filter=bad)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab/[]!^*?", min_size=1, max_size=12))
@example("[!]]")  # not ] (SQLite's GLOB alone reads it as ! then ])
def test_a_glob_that_is_accepted_can_match_in_sqlite(glob: str) -> None:
    import sqlite3

    from kenning.retrieval.filters import Filters

    try:
        keep = Filters(path_filter=glob).bind(Path("/root"))
    except UsageError as exc:
        assert "never closes" in exc.message or "empty" in exc.message or "root" in exc.message
        return
    if keep is None or not keep.path_globs or "[" not in keep.path_globs[0]:
        return
    pattern = keep.path_globs[0]  # the GLOB the store runs
    # a string that fills each class with a member (or, for [!x], with a non-member) matches
    conn = sqlite3.connect(":memory:")
    probes = ["".join(p) for p in _class_members(pattern)]
    assert any(conn.execute("SELECT ? GLOB ?", (probe, pattern)).fetchone()[0]
               for probe in probes), (pattern, probes)


def _class_members(pattern: str) -> list[list[str]]:
    """Candidate strings for ``pattern``: ``*`` and ``?`` as ``a``, each class as each of the
    characters it may hold."""
    outs: list[list[str]] = [[]]
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "[":
            close = pattern.find("]", i + 2 if pattern[i + 1:i + 2] in ("!", "^", "]") else i + 1)
            if pattern[i + 1:i + 3] in ("!]", "^]"):
                close = pattern.find("]", i + 3)
            if close < 0:  # never closed: nothing can match, no probe to make
                return []
            options = list("ab/[]!^*?z")
            outs = [o + [x] for o in outs for x in options][:5000]
            i = close + 1
            continue
        outs = [o + ["a" if c in "*?" else c] for o in outs]
        i += 1
    return outs


def test_tests_are_penalised_unless_asked_for(indexed: Indexed) -> None:
    plain = [h["path"] for h in run(indexed, "retry policy backoff")["results"]]
    assert plain[0] != "tests/test_retry.py"
    asked = [h["path"] for h in run(indexed, "test for the retry policy backoff")["results"]]
    assert asked.index("tests/test_retry.py") < plain.index("tests/test_retry.py")


def test_one_file_cannot_fill_the_page(indexed: Indexed) -> None:
    hits = run(indexed, "retry policy attempts delay backoff", limit=5)["results"]
    assert len({h["path"] for h in hits}) >= 2


def test_irrelevant_query_returns_few_or_no_results(indexed: Indexed) -> None:
    hits = run(indexed, "chocolate cake recipe with fresh strawberries and cream")["results"]
    assert len(hits) <= 2


def test_edit_is_stale_then_searchable_after_refresh(indexed: Indexed) -> None:
    path = indexed.root / "src/storage/cache.py"
    original = path.read_text()
    try:
        path.write_text(original + '''

def warm_up_from_snapshot(cache, snapshot_file):
    for line in open(snapshot_file):
        key, _, value = line.partition("=")
        cache.entries[key] = value.encode()
''')
        before = run(indexed, "evict the least recently used entries")["results"]
        assert before[0]["path"] == "src/storage/cache.py" and before[0]["stale"] is True
        fresh = run(indexed, "warm_up_from_snapshot", refresh=True)["results"]
        assert fresh[0]["symbol"] == "warm_up_from_snapshot" and fresh[0]["stale"] is False
    finally:
        path.write_text(original)
        run(indexed, "evict", refresh=True)


def test_several_projects_are_merged_by_score(indexed: Indexed) -> None:
    refs = resolve_projects(config.load(), [indexed.root, indexed.other])
    assert len(refs) == 2
    result = run(indexed, "area of a circle from its radius", projects=refs)
    top = result["results"][0]
    assert top["path"] == "geometry/shapes.py" and top["symbol"] == "circle_area"
    scores = [h["score"] for h in result["results"]]
    assert scores == sorted(scores, reverse=True)
    mixed = run(indexed, "parse_header", projects=refs)["results"]
    assert mixed[0]["symbol"] == "parse_header"


def test_empty_query_is_refused(indexed: Indexed) -> None:
    with pytest.raises(UsageError):
        run(indexed, "   ")


def test_unknown_project_is_refused(indexed: Indexed, tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    for unknown in (str(missing), "no-such-project"):
        with pytest.raises(UsageError, match="is not a directory, nor a configured project id"):
            resolve_projects(config.load(), [unknown])
    assert resolve_projects(config.load(), [indexed.root]) == [
        ProjectRef(project_id(indexed.root), indexed.root)]


def test_approximate_path_above_the_threshold(indexed: Indexed,
                                             graph_searches: list[int]) -> None:
    from kenning.store import graph

    settings = config.load()
    query = "how long to wait before trying a failed request again"
    exact = run(indexed, query)["results"]
    assert graph_searches == []  # below the threshold: the exact scan
    index = Index.open(indexed.root, settings)
    with index.snapshot() as snap:
        epoch, rows = snap.vector_epoch, snap.vector_rows
        graph.sync(index.dir, int(snap.descriptor["dims"]), epoch, snap.bits)
    try:
        refs = resolve_projects(settings, [indexed.root])
        approx = search(query, refs, settings=config.load({"index.ann_threshold": "1"}),
                        refresh=False)["results"]
    finally:
        graph.path(index.dir, epoch).unlink()
    assert graph_searches == [rows]  # answered by the graph, over every row
    assert [h["id"] for h in approx[:3]] == [h["id"] for h in exact[:3]]


def _split_class() -> str:
    """A Java class too long for one chunk, whose banner comments between methods name it."""
    sections = []
    for i in range(12):
        sections.append(f"""
    /*
    /**********************************************************
    /* NodeTable API, part {i}
    /**********************************************************
     */

    public int lookup{i}(String key) {{
        int slot = key.hashCode() % {i + 7};
        while (slot < entries.length && entries[slot] != null) {{
            slot += {i + 1};
        }}
        return slot;
    }}
""")
    overload = """
    public int lookup0(long key) {
        return lookup0(Long.toString(key));
    }
"""
    return ("package demo;\n\n/**\n * Open-addressing table of named nodes.\n */\n"
            "public class NodeTable {\n    private final String[] entries = new String[64];\n"
            + "".join(sections) + overload + "}\n")


def test_a_split_class_is_found_at_its_declaration(indexed: Indexed, tmp_path: Path) -> None:
    from kenning.indexing.indexer import refresh

    root = tmp_path / "java"
    (root / "demo").mkdir(parents=True)
    (root / "demo" / "NodeTable.java").write_text(_split_class())
    refresh(root, config.load())
    refs = resolve_projects(config.load(), [root])
    top = run(indexed, "NodeTable", projects=refs)["results"][0]
    assert "public class NodeTable" in top["content"]
    index = Index.open(root, config.load())
    with index.snapshot() as snap:
        rows = snap.chunk_rows([cid for cid, _ in snap.symbol_matches(["nodetable"], 500)])
        cands = [replace(candidate_of(row), score=0.1) for row in
                 sorted(rows, key=lambda row: row.start_byte)
                 if (row.symbol or "").startswith("NodeTable")]
        parts = later_parts(snap, cands, analyze("NodeTable.lookup0"))
        banners = later_parts(snap, cands, analyze("NodeTable"))
    overloads = [c.id for c in cands if c.symbol == "NodeTable.lookup0"]
    assert len(overloads) == 2 and not parts & set(overloads)  # each declares itself
    named = [c.id for c in cands if c.symbol == "NodeTable"]
    assert len(named) > 2 and banners == set(named[1:])  # the class starts in its first chunk
