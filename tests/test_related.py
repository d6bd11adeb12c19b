"""`related`: the code most like the declaration at a location, from a real index of a small
multi-file project with the real embedded model, through the library, the CLI and a real MCP
client session; and every bad location refused with one sentence."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import kenning
import pytest
from index_helpers import indexed_in, kenning_cli, use_home
from kenning import config
from kenning.errors import UsageError
from kenning.indexing.indexer import refresh
from kenning.retrieval import ProjectRef
from kenning.services.related import related
from search_fixtures import write_repo
from test_mcp_server import serve, text_of

FILES = {
    "store/cache.py": '''class LruCache:
    """A bounded cache that evicts the least recently used entry."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.entries = {}

    def evict(self):
        """Drop the least recently used entry once the cache is full."""
        oldest = next(iter(self.entries))
        del self.entries[oldest]

    def put(self, key, value):
        if len(self.entries) >= self.capacity:
            self.evict()
        self.entries[key] = value
''',
    "store/disk.py": '''class DiskCache:
    """A cache of files on disk, bounded in bytes."""

    def __init__(self, folder, limit):
        self.folder = folder
        self.limit = limit
        self.files = []

    def evict(self):
        """Delete the oldest file once the folder holds more than its limit."""
        oldest = self.files.pop(0)
        oldest.unlink()
''',
    "store/policy.py": '''def trim(cache, budget):
    """Evict entries until the cache fits its budget."""
    while cache.size() > budget:
        cache.evict()
''',
    "net/client.py": '''import json


def fetch_json(url, session):
    """Download a URL and decode its JSON body."""
    body = session.get(url).read()
    return json.loads(body)
''',
    "docs/notes.md": "# Notes\n\nCaches evict entries when they are full.\n",
    "data.bin": "",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("related")
    root = write_repo(base / "repo", FILES)
    (root / "data.bin").write_bytes(b"\x00\x01\x02binary")
    (root / ".git").mkdir()
    return indexed_in(root, base / "home")


@pytest.fixture
def root(project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    use_home(monkeypatch, project[1])
    return project[0]


def _related(root: Path, location: str, **options: Any) -> dict[str, Any]:
    return related(location, [ProjectRef("p", root)], settings=config.load(), cwd=root,
                   **options)


def _symbols(result: dict[str, Any]) -> list[str | None]:
    return [hit["symbol"] for hit in result["results"]]


def test_related_finds_the_same_name_and_the_caller_and_leaves_itself_out(root: Path) -> None:
    result = _related(root, "store/cache.py:10")  # inside LruCache.evict
    subject = result["subject"]
    assert (subject["path"], subject["symbol"], subject["start_line"], subject["end_line"]) == (
        "store/cache.py", "LruCache.evict", 8, 11)
    found = _symbols(result)
    assert "DiskCache.evict" in found  # the same name elsewhere
    assert "trim" in found  # its caller
    assert "LruCache" not in found and "LruCache.evict" not in found
    assert all(not (hit["path"] == "store/cache.py" and hit["start_line"] <= 10 <= hit["end_line"])
               for hit in result["results"])
    # the result has a search's shape
    assert result["type"] == "related_result" and result["location"] == "store/cache.py:10"
    assert set(result["results"][0]) >= {"id", "project", "path", "start_line", "end_line",
                                         "kind", "symbol", "score", "content", "stale", "weak"}


def test_a_line_between_declarations_takes_the_one_below(root: Path) -> None:
    assert _related(root, "store/cache.py:12")["subject"]["symbol"] == "LruCache.put"


def test_filters_and_calls_apply(root: Path) -> None:
    only_disk = _related(root, "store/cache.py:9", path_filter="store/disk.py")
    assert {hit["path"] for hit in only_disk["results"]} == {"store/disk.py"}
    linked = _related(root, "store/cache.py:9", with_calls=True)
    trim = next(hit for hit in linked["results"] if hit["symbol"] == "trim")
    # the callees of trim: evict is declared twice, the same folder's both; size by none
    assert sorted(link["symbol"] for link in trim["callees"]) == ["DiskCache.evict",
                                                                 "LruCache.evict"]
    evict = next(link for link in trim["callees"] if link["symbol"] == "LruCache.evict")
    assert (evict["path"], evict["start_line"], evict["end_line"]) == ("store/cache.py", 8, 11)


def test_the_path_may_be_relative_to_the_working_directory_or_absolute(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(root / "store")
    from_here = related("cache.py:9", [ProjectRef("p", root)], settings=config.load())
    absolute = _related(root, f"{root / 'store' / 'cache.py'}:9")
    from_root = related("store/cache.py:9", [ProjectRef("p", root)], settings=config.load())
    assert from_here["subject"] == absolute["subject"] == from_root["subject"]
    assert from_here["subject"]["symbol"] == "LruCache.evict"
    link = root.parent / "link"  # another name of the root's folder
    link.symlink_to(root, target_is_directory=True)
    try:
        linked = _related(root, f"{link / 'store' / 'cache.py'}:9")
    finally:
        link.unlink()
    assert linked["subject"] == absolute["subject"]


@pytest.mark.parametrize(("location", "says"), [
    ("store/cache.py", "is not a location"),
    ("store/cache.py:x", "is not a location"),
    ("store/cache.py:0", "lines start at 1"),
    ("store/cache.py:400", "past the end of store/cache.py, which has 16 lines"),
    ("store/missing.py:1", "store/missing.py is not indexed"),
    ("data.bin:1", "data.bin is not indexed"),
    ("../outside.py:1", "is outside the project root"),
    ("/etc/hostname:1", "is outside the project root"),
    ("store/cache.py:" + "9" * 5000, "is no line of any file"),  # past int()'s digit limit
    ("store/cache.py:\u0669", "is not a location"),  # an Arabic-Indic nine is no line number
    ("~no-such-user-of-kenning/cache.py:1", "home folder of an unknown user"),
])
def test_a_bad_location_is_refused_with_one_sentence(root: Path, location: str,
                                                     says: str) -> None:
    with pytest.raises(UsageError) as caught:
        _related(root, location)
    assert says in caught.value.message
    assert caught.value.message.count(". ") == 0  # one sentence (the hint says the fix)


@pytest.mark.parametrize("paths", ["~no-such-user-of-kenning", "x" * 5000])
def test_projects_that_cannot_be_looked_up_are_a_usage_error(root: Path, paths: str) -> None:
    with pytest.raises(UsageError, match="is not a directory, nor a configured project id"):
        kenning.related("store/cache.py:9", paths)


def test_a_location_may_name_a_column_and_a_huge_line_is_refused(root: Path) -> None:
    assert _related(root, "store/cache.py:9:5")["subject"]["symbol"] == "LruCache.evict"
    for line in (10 ** 5000, -10 ** 5000):  # given apart: never written out in the message
        with pytest.raises(UsageError, match="is no line of any file"):
            kenning.related("store/cache.py", root, line=line)


def test_an_ignored_file_is_not_indexed(root: Path) -> None:
    (root / ".gitignore").write_text("scratch.py\n")
    (root / "scratch.py").write_text("def scratch():\n    pass\n")
    try:
        with pytest.raises(UsageError, match="scratch.py is not indexed"):
            _related(root, "scratch.py:1")
    finally:
        (root / ".gitignore").unlink()
        (root / "scratch.py").unlink()
        refresh(root, config.load())


def test_library(root: Path) -> None:
    result = kenning.related("store/cache.py:9", root, calls=True)
    assert isinstance(result, kenning.RelatedResult)
    assert result.subject.symbol == "LruCache.evict"
    assert "DiskCache.evict" in [hit.symbol for hit in result.results]
    assert all(hit.callers is not None for hit in result.results)
    assert kenning.RelatedResult.from_dict(result.to_dict()) == result
    same = kenning.related("store/cache.py", root, line=9)
    assert same.subject == result.subject
    with pytest.raises(kenning.UsageError, match="past the end"):
        kenning.related("store/cache.py", root, line=99)
    with pytest.raises(kenning.UsageError, match="line must be"):
        kenning.related("store/cache.py", root, line="9")  # type: ignore[arg-type]


def test_cli(root: Path, capsys: pytest.CaptureFixture[str],
             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(root)
    code, out, err = kenning_cli(capsys, "related", "store/cache.py:9", "--json-output")
    assert code == 0, err
    data = json.loads(out)
    assert data["subject"]["symbol"] == "LruCache.evict"
    assert "DiskCache.evict" in _symbols(data)
    code, out, err = kenning_cli(capsys, "related", "store/cache.py:9", "--kind", "code",
                                 "-n", "3", "--calls")
    assert code == 0, err
    assert "Related to LruCache.evict at store/cache.py:8-11" in err
    assert "store/disk.py:9-12  DiskCache.evict" in out and "docs/notes.md" not in out
    assert "    def evict(self):" in out  # the method as its file indents it
    assert "calls: LruCache.evict store/cache.py:8-11, DiskCache.evict store/disk.py:9-12" in out
    # the links of the method shown, not of the class that holds it (which nothing calls)
    lines = out.splitlines()
    shown = next(i for i, line in enumerate(lines) if line.startswith("store/disk.py:9-12"))
    assert lines[shown + 1].startswith("  called by: ")
    assert "trim store/policy.py:1-4" in lines[shown + 1]
    for bad, says in [("store/cache.py:99", "past the end"),
                      ("nowhere.py:1", "not indexed"), ("../outside.py:1", "outside")]:
        code, out, err = kenning_cli(capsys, "related", bad)
        assert code == 2 and out == ""
        assert err.startswith("Error: ") and says in err


def test_cli_an_absolute_location_is_of_the_project_it_is_in(
        root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # in no project: as `search PATH`, the path's project answers
    code, out, err = kenning_cli(capsys, "related", f"{root}/store/cache.py:9", "--no-refresh",
                                 "--json-output")
    assert code == 0, err
    assert json.loads(out)["subject"]["symbol"] == "LruCache.evict"


def test_mcp_code_related(root: Path, project: tuple[Path, Path], tmp_path: Path) -> None:
    home = project[1]
    env = {**{k: os.environ[k] for k in ("PYTHONPATH", "KENNING_KERNELS") if k in os.environ},
           "KENNING_HOME": str(home / "data"), "KENNING_CONFIG": str(home / "config.toml")}
    with serve(env, root, tmp_path / "mcp.log") as client:
        found = client.ok("code_related", location="store/cache.py:9", include_calls=True)
        data = found.structured_content
        assert data["type"] == "related_result"
        assert data["subject"]["symbol"] == "LruCache.evict"
        hits = data["results"]
        assert "DiskCache.evict" in [hit["symbol"] for hit in hits]
        assert all("callers" in hit and "callees" in hit for hit in hits)
        assert "related to LruCache.evict at store/cache.py:8-11" in text_of(found)
        called_by = [line for line in text_of(found).splitlines()
                     if line.startswith("called by: ")]
        assert any("trim store/policy.py:1-4 (id " in line for line in called_by)
        assert "<untrusted-content" in hits[0]["content"]
        small = client.ok("code_related", location="store/cache.py:9", detail="locations",
                          limit=1).structured_content
        assert len(small["results"]) == 1 and small["results"][0]["content"] is None
        for bad, says in [("store/cache.py:99", "past the end"),
                          ("store/nowhere.py:1", "not indexed"),
                          ("/etc/hostname:1", "outside the project root"),
                          ("store/cache.py", "not a location")]:
            error = client.error("code_related", location=bad)
            assert error["error"] == "bad_input" and says in error["message"]
        search = client.ok("code_search", query="evict entries until the cache fits its budget",
                           include_calls=True).structured_content
        trim = next(hit for hit in search["results"] if hit["symbol"] == "trim")
        assert {link["symbol"] for link in trim["callees"]} == {"LruCache.evict",
                                                                "DiskCache.evict"}


def test_the_callers_of_a_method_are_the_declarations_around_its_calls(root: Path) -> None:
    from kenning.retrieval import calls
    from kenning.store import Index

    with Index.open(root, config.load()).snapshot() as snap:
        (row, _), = [r for r in snap.declaring(["evict"], 10) if r[0][1] == "store/cache.py"]
        assert row[6] == "LruCache.evict" and row[8] == 1  # a member of the class's one chunk
        subject = calls.Subject((row[0],), row[1], row[4], row[6], (row[2], row[3]))
        found = {(link.path, link.symbol, link.start_line, link.end_line)
                 for link in calls.callers(snap, subject, 5)}
        whole = calls.subjects(snap, [row[0]])[row[0]]
        from_class = {link.symbol for link in calls.callees(snap, whole, 5)}
    # put, its sibling in the same chunk, calls it; so does trim in another file
    assert found == {("store/cache.py", "LruCache.put", 13, 16),
                     ("store/policy.py", "trim", 1, 4)}
    # the class calls its own evict: no callee of the class, which holds it
    assert "LruCache.evict" not in from_class
