"""`kenning impact`: the declarations a git diff changes, with their callers, callees, tests
and similar code, from a real index of a small git repository (the real embedded model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from index_helpers import git, indexed_in, use_home
from kenning import config
from kenning.cli import cli
from kenning.errors import UsageError
from kenning.indexing.indexer import refresh
from kenning.retrieval import ProjectRef
from kenning.services.impact import FileChange, impact, parse_diff
from search_fixtures import write_repo
from test_related import FILES

TEST_FILE = '''from store.cache import LruCache


def test_put_evicts_the_oldest_entry():
    cache = LruCache(1)
    cache.put("a", 1)
    cache.put("b", 2)
    assert list(cache.entries) == ["b"]
'''
EVICT_BODY = "        oldest = next(iter(self.entries))\n"
NEW_EVICT = "        oldest = min(self.entries, key=self.entries.get)\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("impact")
    files = {k: v for k, v in FILES.items() if k != "data.bin"}
    root = write_repo(base / "repo", {**files, "tests/test_cache.py": TEST_FILE})
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    git(root, "checkout", "-qb", "work")
    return indexed_in(root, base / "home")


@pytest.fixture
def root(project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    use_home(monkeypatch, project[1])
    return project[0]


def _impact(root: Path, *revisions: str, **options: Any) -> dict[str, Any]:
    return impact(ProjectRef("p", root), config.load(), list(revisions), **options)


def _by_symbol(found: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["symbol"]: d for d in found["declarations"]}


def test_a_changed_method_comes_with_its_callers_tests_and_look_alikes(root: Path) -> None:
    cache = root / "store" / "cache.py"
    original = cache.read_text()
    cache.write_text(original.replace(EVICT_BODY, NEW_EVICT))
    (root / "store" / "fresh.py").write_text("def warm(cache):\n    cache.put('k', 0)\n")
    try:
        found = _impact(root)
        assert found["revisions"] == ["HEAD"]
        changed = _by_symbol(found)
        assert set(changed) == {"LruCache.evict", "warm"}  # the method, not its whole class
        evict = changed["LruCache.evict"]
        assert evict["path"] == "store/cache.py" and evict["start_line"] == 8
        assert evict["changed_lines"] == [[10, 10]]
        assert "LruCache.put" in {c["symbol"] for c in evict["callers"]}
        assert "trim" in {c["symbol"] for c in evict["callers"]}
        assert [t["path"] for t in evict["tests"]][:1] == ["tests/test_cache.py"]
        assert "DiskCache.evict" in {s["symbol"] for s in evict["similar"]}
        assert "LruCache.put" in {c["symbol"] for c in changed["warm"]["callees"]}
        files = {f["path"]: f for f in found["files"]}
        assert files["store/fresh.py"]["status"] == "added"
        assert files["store/cache.py"]["changed_lines"] == [[10, 10]]

        shown = CliRunner().invoke(cli, ["impact", "--project", str(root)])
        assert shown.exit_code == 0, shown.output
        assert "store/cache.py:8-11 LruCache.evict" in shown.stdout
        assert "tests:" in shown.stdout and "tests/test_cache.py" in shown.stdout
    finally:
        cache.write_text(original)
        (root / "store" / "fresh.py").unlink()


def test_a_branch_against_main_and_a_commit_range(root: Path) -> None:
    policy = root / "store" / "policy.py"
    original = policy.read_text()
    policy.write_text(original.replace("budget:", "budget and cache.size():"))
    git(root, "commit", "-qam", "trim while not empty")
    try:
        since_main = _impact(root, "main")
        assert list(_by_symbol(since_main)) == ["trim"]
        assert "LruCache.evict" in {c["symbol"] for c in _by_symbol(since_main)["trim"]["callees"]}
        ranged = CliRunner().invoke(cli, ["impact", "main..work", "--json-output",
                                          "--project", str(root), "--no-refresh"])
        assert ranged.exit_code == 0, ranged.output
        decoded = json.loads(ranged.stdout)
        assert decoded["type"] == "impact_result" and decoded["revisions"] == ["main..work"]
        assert [d["symbol"] for d in decoded["declarations"]] == ["trim"]
        assert decoded["warnings"] == []
    finally:
        git(root, "reset", "-q", "--hard", "main")
        refresh(root, config.load())


def test_bad_revisions_are_one_sentence(root: Path) -> None:
    for revisions, message in ((["--output=/tmp/x"], "is not a revision"),
                               (["no-such-branch"], "git diff failed"),
                               (["a", "b", "c"], "at most two revisions")):
        with pytest.raises(UsageError, match=message):
            _impact(root, *revisions)
    done = CliRunner().invoke(cli, ["impact", "no-such-branch", "--project", str(root)])
    assert done.exit_code != 0 and "Traceback" not in done.output


def test_hunks_mark_the_new_versions_lines() -> None:
    text = (
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n"
        "@@ -3 +3 @@ def f():\n-x\n+y\n"
        "@@ -10,2 +9,0 @@\n-gone\n-gone\n"  # lines deleted after line 9
        "@@ -20,0 +19,3 @@\n+a\n+b\n+c\n"
        "diff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\n"
        "rename to new.py\n--- a/old.py\n+++ b/new.py\n@@ -1 +1 @@\n-p\n+q\n"
        "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n"
        "+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n"
        'diff --git "a/sp ace\\303\\251.py" "b/sp ace\\303\\251.py"\n'
        '--- "a/sp ace\\303\\251.py"\n+++ "b/sp ace\\303\\251.py"\n@@ -1 +1 @@\n-a\n+b\n'
        "diff --git a/moved.py b/moved2.py\nsimilarity index 100%\nrename from moved.py\n"
        "rename to moved2.py\n")
    assert parse_diff(text) == [
        FileChange("a.py", "modified", None, [(3, 3), (9, 10), (19, 21)]),
        FileChange("new.py", "renamed", "old.py", [(1, 1)]),
        FileChange("gone.py", "deleted"),
        FileChange("sp aceé.py", "modified", None, [(1, 1)]),
    ]
