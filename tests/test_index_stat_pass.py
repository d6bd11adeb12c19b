"""The stat pass of a refresh: what it notices from (size, mtime_ns) alone, and the stat data
the store keeps for it (one blob beside the files table, never out of step with it)."""

from __future__ import annotations

import json
import os
import re
import sqlite3

from index_helpers import CountingEmbedder, check_consistent, kenning_cli
from kenning import config
from kenning.indexing.indexer import refresh
from kenning.store import Index, db

pytest_plugins = ["index_helpers"]  # fixtures: model, settings, repo


def indexed_paths(index: Index) -> set[str]:
    with index.snapshot() as snap:
        return {r[0] for r in snap._conn.execute("SELECT DISTINCT path FROM chunks")}


def stored_stats(index: Index) -> tuple[bytes | None, dict[str, tuple[int, int]]]:
    """The stat blob (None when dropped) and the files table's own (size, mtime_ns)."""
    with index.snapshot() as snap:
        blob = db.read_file_stats(snap._conn)
        table = {p: (s, m) for p, s, m in snap._conn.execute(
            "SELECT path, size, mtime_ns FROM files")}
    return blob, table


def parse(blob: bytes) -> dict[str, tuple[int, int]]:
    fields = blob.split(b"\0") if blob else []
    return {fields[i].decode(): (int(fields[i + 1]), int(fields[i + 2]))
            for i in range(0, len(fields), 3)}


def test_the_stat_blob_follows_the_files_table(repo, settings, model):
    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    blob, table = stored_stats(index)
    assert blob is not None and parse(blob) == table and len(table) == 5
    (repo / "app" / "db.py").unlink()
    (repo / "new.py").write_text("def fresh():\n    return 1\n")
    os.utime(repo / "README.md", ns=(1, 2))  # stat data only: no new generation
    refresh(repo, settings, embedder=model)
    blob, table = stored_stats(index)
    assert blob is not None and parse(blob) == table
    assert "new.py" in table and "app/db.py" not in table and table["README.md"][1] == 2


def test_a_write_to_the_files_table_elsewhere_drops_the_blob(repo, settings, model):
    """Any other writer (an older kenning, a repair by hand) drops the blob through triggers,
    so a stale copy is never trusted; the next refresh rebuilds it and sees the change."""
    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    conn = sqlite3.connect(index.dir / db.DB_NAME)
    with conn:
        conn.execute("UPDATE files SET size = size + 1 WHERE path = 'app/db.py'")
    conn.close()
    assert stored_stats(index)[0] is None
    result = refresh(repo, settings, embedder=model)
    assert result.files_changed == 0 and not result.content_changed  # same digest: stat only
    blob, table = stored_stats(index)
    assert blob is not None and parse(blob) == table
    assert table["app/db.py"][0] == (repo / "app" / "db.py").stat().st_size


def test_an_index_from_before_the_blob_gets_it_on_the_next_refresh(repo, settings, model):
    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    conn = sqlite3.connect(index.dir / db.DB_NAME)
    with conn:
        for name in [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger'")]:
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("DELETE FROM meta WHERE key = ?", (db.FILE_STATS_KEY,))
    conn.close()
    (repo / "lib" / "util.js").unlink()
    result = refresh(repo, settings, embedder=model)
    assert result.files_removed == 1
    blob, table = stored_stats(index)
    assert blob is not None and parse(blob) == table and "lib/util.js" not in table
    emb = CountingEmbedder(model)
    assert refresh(repo, settings, embedder=emb).nothing_changed and emb.texts == []


def test_a_new_ignore_rule_removes_indexed_files(repo, settings, model):
    refresh(repo, settings, embedder=model)
    (repo / ".kenningignore").write_text("docs/\nREADME.md\n")
    result = refresh(repo, settings, embedder=model)
    assert result.files_removed == 2 and result.files_added == 1  # the rule file itself
    index = Index.open(repo, settings, embedder=model)
    check_consistent(index)
    assert indexed_paths(index) == {".kenningignore", "app/db.py", "app/server.py",
                                    "lib/util.js"}


def test_a_size_change_is_seen_even_with_the_old_mtime(repo, settings, model):
    refresh(repo, settings, embedder=model)
    target = repo / "app" / "db.py"
    st = target.stat()
    target.write_text(target.read_text() + "\n\ndef close(conn):\n    conn.close()\n")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    emb = CountingEmbedder(model)
    result = refresh(repo, settings, embedder=emb)
    assert result.files_changed == 1 and any("def close" in t for t in emb.texts)


def test_an_edit_that_keeps_size_and_mtime_waits_for_a_full_refresh(repo, settings, model):
    """The known limit of a stat pass (git has it too): same size, same mtime_ns, new bytes."""
    refresh(repo, settings, embedder=model)
    target = repo / "app" / "server.py"
    st = target.stat()
    target.write_text(target.read_text().replace("forever", "for now"))
    assert target.stat().st_size == st.st_size
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert refresh(repo, settings, embedder=model).nothing_changed
    emb = CountingEmbedder(model)
    refresh(repo, settings, embedder=emb, full=True)  # re-reads every file
    assert len(emb.texts) == 1 and "serve requests for now" in emb.texts[0]


def test_files_that_turn_binary_or_too_large_are_removed(repo, settings, model):
    refresh(repo, settings, embedder=model)
    (repo / "lib" / "util.js").write_bytes(b"\x00\x01\x02 now binary")
    result = refresh(repo, settings, embedder=model)
    assert result.files_removed == 1 and result.files == 4
    small = config.load({"embedder.batch_size": "4", "embedder.concurrency": "1",
                         "index.max_file_size": "150"})
    big = {p for p in ("README.md", "docs/guide.md", "app/server.py", "app/db.py")
           if (repo / p).stat().st_size > 150}
    assert big and len(big) < 4
    result = refresh(repo, small, embedder=model)
    assert result.files_removed == len(big) and result.files == 4 - len(big)
    assert not indexed_paths(Index.open(repo, small, embedder=model)) & big


def test_a_name_that_is_not_utf8_does_not_stop_a_refresh(repo, settings, model, capsys,
                                                         monkeypatch):
    (repo / os.fsdecode(b"odd\xff.py")).write_text("def odd():\n    return 1\n")
    code, out, err = kenning_cli(capsys, "index", str(repo), "--dry-run")
    assert code == 0 and "Would index 5 files" in out, err
    assert re.search(r"name +odd\\xff\.py", out)  # skipped, with the reason
    code, out, err = kenning_cli(capsys, "index", str(repo))
    assert code == 0 and "Indexed" in out, err
    assert "Warning: Not indexed, for a name that is not UTF-8: odd\\xff.py." in err
    result = refresh(repo, settings, embedder=model)
    assert result.files == 5 and result.status == "complete"
    assert result.nothing_changed
    code, out, _ = kenning_cli(capsys, "status", str(repo), "--json-output")
    [problem] = json.loads(out)["problems"]
    assert problem["message"] == "Not indexed, for a name that is not UTF-8: odd\\xff.py."
    monkeypatch.chdir(repo)
    for args, says in [(["search", "odd", "-p", os.fsdecode(b"odd\xff.py")],
                        "The path filter odd\\xff.py is not UTF-8"),
                       (["related", os.fsdecode(b"odd\xff.py:1")], "odd\\xff.py is not indexed"),
                       (["related", os.fsdecode(b"%s/odd\xff.py:1" % bytes(repo))],
                        "odd\\xff.py is not indexed")]:
        code, _, err = kenning_cli(capsys, *args, "--no-refresh")
        assert code == 2 and says in err, err


def cluster_digests(index: Index) -> dict[str, bytes]:
    with index.snapshot() as snap:
        return snap.cluster_digests()


def test_an_edit_redigests_only_its_own_cluster(repo, settings, model):
    """A refresh reads and rewrites only the clusters that hold new, changed or removed files:
    a digest planted in another cluster stays as it was."""
    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    before = cluster_digests(index)
    conn = sqlite3.connect(index.dir / db.DB_NAME)
    with conn:
        conn.execute("UPDATE clusters SET digest = ? WHERE cluster = 'lib'", (b"planted",))
    conn.close()
    (repo / "app" / "db.py").write_text("def connect():\n    return 2\n")
    result = refresh(repo, settings, embedder=model)
    assert result.files_changed == 1
    after = cluster_digests(index)
    assert after["lib"] == b"planted" and after["app"] != before["app"]
    assert {c: d for c, d in after.items() if c not in ("app", "lib")} == {
        c: d for c, d in before.items() if c not in ("app", "lib")}


def test_the_stat_blobs_follow_clusters_that_come_and_go(repo, settings, model):
    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    (repo / "lib" / "util.js").unlink()  # the last file of its cluster
    (repo / "new" / "deep").mkdir(parents=True)
    (repo / "new" / "deep" / "a.py").write_text("def a():\n    return 1\n")
    (repo / "top.py").write_text("def top():\n    return 1\n")
    result = refresh(repo, settings, embedder=model)
    assert (result.files_removed, result.files_added) == (1, 2)
    blob, table = stored_stats(index)
    assert blob is not None and parse(blob) == table
    digests = cluster_digests(index)
    assert "lib" not in digests and "new/deep" in digests
    with index.snapshot() as snap:
        shards = {r[0] for r in snap._conn.execute(
            "SELECT key FROM meta WHERE key LIKE 'file_stats:%'")}
    assert shards == {db.FILE_STATS_SHARD + c for c in digests}
    assert refresh(repo, settings, embedder=model).nothing_changed
