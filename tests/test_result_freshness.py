"""Each result says which state it comes from: the work tree's commit, whether its file
changed since it was indexed, and a hash of its lines, which get_chunk checks."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import kenning
import pytest
from search_fixtures import REPO, write_repo

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def _committed(root: Path) -> str:
    subprocess.run([*GIT, "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run([*GIT, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(root), "commit", "-q", "-m", "first"], check=True)
    return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, local_model: None) -> Path:
    return write_repo(tmp_path / "repo", {path: REPO[path] for path in
                                          ("src/http/retry.py", "src/http/headers.py",
                                           "src/storage/cache.py")})


def test_results_carry_the_commit_the_changed_flag_and_a_hash(repo: Path) -> None:
    head = _committed(repo)
    first = kenning.search("parse an HTTP header line", repo).results[0]
    assert first.symbol == "parse_header"
    assert first.revision == head and first.changed_since_index is False
    assert re.fullmatch(r"[0-9a-f]{12}", first.content_hash or "")
    assert kenning.get_chunk(first.id, repo, expect_hash=first.content_hash).symbol == \
        "parse_header"
    # the same lines give the same hash; other lines another
    again = kenning.search("parse an HTTP header line", repo).results
    assert again[0].content_hash == first.content_hash
    assert len({hit.content_hash for hit in again}) == len(again)
    assert first.to_dict()["content_hash"] == first.content_hash  # in the JSON too


def test_outside_git_the_revision_is_none(repo: Path) -> None:
    assert kenning.search("cache eviction", repo).results[0].revision is None


def test_a_linked_worktree_reads_no_git_folder_outside_its_root(repo: Path,
                                                                 tmp_path: Path) -> None:
    _committed(repo)
    linked = tmp_path / "linked"
    subprocess.run([*GIT, "-C", str(repo), "worktree", "add", "-q", str(linked)], check=True)
    assert kenning.search("cache eviction", linked).results[0].revision is None


def test_an_edit_since_the_search_is_flagged_and_refused_by_hash(repo: Path) -> None:
    hit = kenning.search("parse an HTTP header line", repo).results[0]
    headers = repo / "src/http/headers.py"
    headers.write_text(headers.read_text().replace("name.strip().lower()", "name.strip()"))
    unrefreshed = kenning.search("parse an HTTP header line", repo, refresh=False).results[0]
    assert unrefreshed.changed_since_index is True and unrefreshed.stale is True
    with pytest.raises(kenning.StaleContent) as refused:
        kenning.get_chunk(hit.id, repo, expect_hash=hit.content_hash)
    assert refused.value.code == "stale"
    assert "changed since the search" in refused.value.message
    assert "Search again" in (refused.value.hint or "")
    kenning.get_chunk(hit.id, repo)  # without the hash it reads what is there, as before
    fresh = kenning.search("parse an HTTP header line", repo).results[0]
    assert fresh.changed_since_index is False and fresh.content_hash != hit.content_hash
    assert kenning.get_chunk(fresh.id, repo, expect_hash=fresh.content_hash).path == \
        "src/http/headers.py"


def test_an_edit_that_keeps_size_and_mtime_is_flagged_and_indexed_anew(repo: Path) -> None:
    """``cp -p``, ``rsync -t`` and tar keep a file's size and mtime, which is all the stat pass
    of a refresh compares: the search that reads the lines sees them differ, flags its results
    and has the file indexed again."""
    import os

    hit = kenning.search("parse an HTTP header line", repo).results[0]
    assert hit.symbol == "parse_header" and not hit.stale
    headers = repo / "src/http/headers.py"
    before = headers.stat()
    headers.write_text(headers.read_text().replace("name.strip().lower()",
                                                   "name.strip().title()"))
    os.utime(headers, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert headers.stat().st_size == before.st_size
    flagged = kenning.search("parse an HTTP header line", repo).results[0]
    assert flagged.symbol == "parse_header" and "title()" in flagged.content
    assert flagged.stale is True and flagged.changed_since_index is True
    fresh = kenning.search("header name title", repo).results[0]  # the new words are indexed
    assert fresh.symbol == "parse_header" and fresh.stale is False
    assert fresh.changed_since_index is False and fresh.content_hash != hit.content_hash


def test_a_hash_that_is_no_string_is_refused(repo: Path) -> None:
    hit = kenning.search("cache eviction", repo).results[0]
    with pytest.raises(kenning.UsageError, match="expect_hash must be a string"):
        kenning.get_chunk(hit.id, repo, expect_hash=123)  # type: ignore[arg-type]


def test_kenning_get_reads_the_id_and_checks_its_hash(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from index_helpers import kenning_cli

    hit = kenning.search("parse an HTTP header line", repo).results[0]
    code, out, err = kenning_cli(capsys, "get", hit.id, str(repo), "--expect-hash",
                                 hit.content_hash or "")
    assert code == 0, err
    assert out.splitlines()[0].startswith(f"src/http/headers.py:{hit.start_line}-")
    assert "def parse_header(line: str)" in out
    code, out, err = kenning_cli(capsys, "get", hit.id, str(repo), "--json-output")
    assert code == 0 and json.loads(out)["symbol"] == "parse_header"
    headers = repo / "src/http/headers.py"
    headers.write_text(headers.read_text().replace("value.strip()", "value"))
    code, out, err = kenning_cli(capsys, "get", hit.id, str(repo), "--expect-hash",
                                 hit.content_hash or "")
    assert code == 2 and out == ""
    assert "changed since the search that gave their hash" in err
