"""Faults an index can meet (a kill, damaged or missing files, a full disk, a read-only home):
each is found, said in one sentence with the way out, and never turned into wrong results."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from index_helpers import kenning_cli, kenning_on_a_full_disk
from kenning import hostos
from kenning.store import _readers

pytest_plugins = ["index_helpers"]  # fixtures: model, settings, repo


def index_process(repo: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kenning", "index", str(repo), *args],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=300)


def test_a_first_index_killed_before_its_commit_says_to_run_index(repo, capsys):
    killed = index_process(repo, KENNING_TEST_KILL_AT="files-written")
    assert killed.returncode == hostos.KILLED
    code, out, _ = kenning_cli(capsys, "status", str(repo), "--json-output")
    status = json.loads(out)
    assert code == 0 and not status["healthy"]
    assert status["state"] == "not indexed"
    assert status["problems"][0]["hint"] == f"Run `kenning index {repo}`."
    code, out, err = kenning_cli(capsys, "search", "open the database", str(repo), "--no-refresh")
    assert code == 4 and not out
    assert "no indexed snapshot yet" in err and f"Run `kenning index {repo}`" in err


@pytest.fixture
def built(repo, settings, model):
    """The repo indexed in batches of 4 (several checksum blocks); its index."""
    from kenning.indexing.indexer import refresh
    from kenning.store import Index

    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    with index.snapshot() as snap:
        assert snap.vector_rows > 8 and snap.status == "complete"
    return index


def _problems_text(status: dict) -> str:
    return " ".join(f"{p['message']} {p['hint']}" for p in status["problems"])


def _damaged_everywhere(capsys, repo: Path, what: str) -> None:
    """Index, search and status all refuse with one sentence and the repair."""
    for args in (["index", str(repo)], ["search", "open the database", str(repo), "--no-refresh"],
                 ["status", str(repo)]):
        code, out, err = kenning_cli(capsys, *args)
        assert code == 4, (args, out, err)
        assert "is damaged" in err and what in err and "kenning index --full" in err, err
        assert "up to date" not in out


def _repair(capsys, repo: Path, built, kept: int | None = None) -> None:
    from index_helpers import check_consistent

    code, out, err = kenning_cli(capsys, "index", str(repo), "--full")
    assert code == 0, err
    assert "The index was damaged" in out and "rebuilt" in out
    if kept is not None:
        assert f"keeping {kept} intact vectors" in out
    state = check_consistent(built)
    assert state["status"] == "complete"
    code, out, _ = kenning_cli(capsys, "search", "open the database", str(repo), "--json-output")
    assert code == 0 and json.loads(out)["results"][0]["path"] == "app/db.py"
    code, out, _ = kenning_cli(capsys, "doctor", "--json-output")
    assert [c for c in json.loads(out)["checks"] if c["check"] == "index integrity"][0]["ok"]


@pytest.mark.parametrize("fault", ["truncated", "missing"])
def test_a_short_or_missing_vector_file_is_never_padded(built, repo, capsys, fault):
    from kenning.store.vectors import INT8

    path = built.dir / INT8
    if fault == "truncated":
        with path.open("r+b") as fh:
            fh.truncate(path.stat().st_size // 2)
    else:
        path.unlink()
    size = path.stat().st_size if path.exists() else None
    _damaged_everywhere(capsys, repo, INT8)
    assert (path.stat().st_size if path.exists() else None) == size  # nothing padded
    _repair(capsys, repo, built)


def _flip(path: Path, offset: int) -> None:
    with path.open("r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)[0]
        fh.seek(offset)
        fh.write(bytes([byte ^ 0x10]))


def test_a_flipped_bit_in_the_last_block_is_found_on_open(built, repo, capsys):
    from kenning.store.vectors import INT8

    path = built.dir / INT8
    _flip(path, path.stat().st_size - 5)
    _damaged_everywhere(capsys, repo, "do not match their checksum")
    _repair(capsys, repo, built)


def test_shifted_rows_are_found_on_open(built, repo, capsys):
    from kenning.store.vectors import BITS

    path = built.dir / BITS
    data = path.read_bytes()
    path.write_bytes(b"\0" * 7 + data[:-7])  # same size, every row moved
    _damaged_everywhere(capsys, repo, "do not match their checksum")
    _repair(capsys, repo, built)


def _doctor_index_check(capsys) -> dict:
    code, out, _ = kenning_cli(capsys, "doctor", "--json-output")
    checks = [c for c in json.loads(out)["checks"] if c["check"] == "index integrity"]
    assert len(checks) == 1
    return {**checks[0], "code": code}


def test_a_flipped_bit_in_an_old_block_is_found_by_doctor_and_repaired(built, repo, capsys,
                                                                       monkeypatch):
    from kenning.store.vectors import INT8

    monkeypatch.chdir(repo)
    _flip(built.dir / INT8, 10)  # the first block: not checked on the search path
    check = _doctor_index_check(capsys)
    assert check["code"] == 1 and not check["ok"]
    assert "vector rows 0-3 do not match their checksum" in check["detail"]
    assert "kenning index --full" in check["fix"]
    with built.snapshot() as snap:
        total = snap.vector_rows
    _repair(capsys, repo, built, kept=total - 4)


def test_a_flipped_bit_in_an_old_block_is_found_by_refreshes(built, repo, capsys):
    from kenning.store.vectors import INT8

    with built.snapshot() as snap:
        blocks = snap._conn.execute("SELECT count(*) FROM vector_blocks").fetchone()[0]
    assert blocks > 2
    _flip(built.dir / INT8, 10)  # the first block
    for _ in range(40 * blocks):  # each refresh checks one block drawn at random
        code, out, err = kenning_cli(capsys, "index", str(repo))
        if code:
            break
    assert code == 4 and "vector rows 0-3 do not match their checksum" in err, err
    code, out, _ = kenning_cli(capsys, "status", str(repo), "--json-output")
    assert "vector rows 0-3 do not match" in _problems_text(json.loads(out))


def test_a_scrambled_vectors_table_is_found_by_doctor(built, repo, capsys, monkeypatch):
    import sqlite3

    monkeypatch.chdir(repo)
    conn = sqlite3.connect(built.dir / "index.db")
    with conn:  # two rows of the first block trade vectors
        conn.execute("UPDATE vectors SET vector_id = -1 WHERE vector_id = 0")
        conn.execute("UPDATE vectors SET vector_id = 0 WHERE vector_id = 1")
        conn.execute("UPDATE vectors SET vector_id = 1 WHERE vector_id = -1")
    conn.close()
    check = _doctor_index_check(capsys)
    assert not check["ok"] and "vector rows 0-3 do not match" in check["detail"]
    _repair(capsys, repo, built)


def test_a_damaged_database_says_so_and_index_full_rebuilds_it(built, repo, capsys):
    db_file = built.dir / "index.db"
    for extra in ("index.db-wal", "index.db-shm"):
        (built.dir / extra).unlink(missing_ok=True)
    data = bytearray(db_file.read_bytes())
    data[:100] = b"\x13" * 100  # the header: no longer a database
    db_file.write_bytes(bytes(data))
    _readers.drop(built.dir)  # as a new process finds it, not through a kept connection
    _damaged_everywhere(capsys, repo, "SQLite cannot")
    _repair(capsys, repo, built, kept=0)


def test_garbled_file_records_are_read_again_not_a_crash(built, repo, capsys):
    import sqlite3

    from index_helpers import check_consistent

    before = check_consistent(built)
    conn = sqlite3.connect(built.dir / "index.db")
    with conn:  # the stat data as damage leaves it: words for numbers, a record cut short
        conn.execute("UPDATE meta SET value = CAST('app/db.py' || char(0) || 'x1' || char(0) "
                     "|| '2z' AS BLOB) WHERE key LIKE 'file_stats:%'")
        conn.execute("UPDATE files SET size = 'garbage', mtime_ns = X'00ff' "
                     "WHERE path = 'app/db.py'")
    conn.close()
    _readers.drop(built.dir)
    code, out, err = kenning_cli(capsys, "index", str(repo))
    assert code == 0, err
    state = check_consistent(built)
    assert (state["files"], state["chunks"]) == (before["files"], before["chunks"])
    code, out, err = kenning_cli(capsys, "search", "open the database", str(repo),
                                 "--json-output")
    assert code == 0 and json.loads(out)["results"][0]["path"] == "app/db.py", err


def test_stat_data_that_cannot_be_read_again_is_damage_with_its_repair(built, repo, capsys,
                                                                       monkeypatch):
    from kenning.indexing import sources

    def unreadable(*args, **kwargs):
        raise ValueError("known stat data: a size or mtime is not a number")

    monkeypatch.setattr(sources, "COMPARERS", dict.fromkeys(sources.COMPARERS, unreadable))
    code, out, err = kenning_cli(capsys, "index", str(repo))
    assert code == 4 and "is damaged" in err and "kenning index --full" in err, err
    code, out, err = kenning_cli(capsys, "search", "open the database", str(repo))
    assert code == 0 and "app/db.py" in out  # from the last snapshot, saying why
    assert "is damaged" in err and "kenning index --full" in err, err


def test_garbled_timings_and_a_lock_folder_are_one_sentence(built, repo, capsys):
    import sqlite3

    conn = sqlite3.connect(built.dir / "index.db")
    with conn:
        conn.execute("UPDATE snapshots SET timings = '{\"total\": ' || char(1)")
    conn.close()
    _readers.drop(built.dir)
    code, out, err = kenning_cli(capsys, "status", str(repo), "--json-output")
    assert code == 0 and json.loads(out)["state"] == "ready", err
    code, out, err = kenning_cli(capsys, "search", "open the database", str(repo),
                                 "--no-refresh", "--json-output")
    assert code == 0 and json.loads(out)["results"], err
    lock = built.dir / "index.lock"
    lock.unlink(missing_ok=True)
    lock.mkdir()
    code, out, err = kenning_cli(capsys, "index", str(repo))
    assert code == 4 and f"The index lock {lock} is a folder" in err, err
    assert "KENNING_HOME" not in err


def test_a_damaged_full_text_table_is_reported_and_repaired(built, repo, capsys, monkeypatch):
    import sqlite3

    monkeypatch.chdir(repo)
    conn = sqlite3.connect(built.dir / "index.db")
    with conn:
        conn.execute("UPDATE chunks_fts_data SET block = CAST(replace(hex(zeroblob(length(block)))"
                     ", '0', 'F') AS BLOB) WHERE id > 10")  # leaves of 0x46 bytes
    conn.close()
    _readers.drop(built.dir)
    code, _, err = kenning_cli(capsys, "search", "open the database", str(repo), "--no-refresh")
    assert code == 4 and "is damaged" in err and "kenning index --full" in err
    code, out, _ = kenning_cli(capsys, "status", str(repo), "--json-output")
    status = json.loads(out)
    assert not status["healthy"] and "kenning index --full" in _problems_text(status)
    check = _doctor_index_check(capsys)
    assert not check["ok"] and "full-text table is damaged" in check["detail"]
    with built.snapshot() as snap:
        total = snap.vector_rows
    _repair(capsys, repo, built, kept=total)  # the vectors were sound: none embedded again


def test_a_full_disk_answers_search_from_the_snapshot_and_status_says_why(built, repo, capsys):
    (repo / "app" / "jobs.py").write_text("def schedule_nightly_backup():\n    return 'cron'\n")
    full = kenning_on_a_full_disk(4096)
    searched = subprocess.run([*full, "search", "open the database", str(repo), "--json-output"],
                              capture_output=True, text=True, timeout=300)
    assert searched.returncode == 0, searched.stderr
    result = json.loads(searched.stdout)
    assert result["results"][0]["path"] == "app/db.py"  # the last snapshot answered
    warning = " ".join(result["warnings"])
    assert f"Indexing {repo} failed" in warning and "last snapshot" in warning
    assert "disk space" in warning
    indexed = subprocess.run([*full, "index", str(repo), "--quiet"], capture_output=True,
                             text=True, timeout=300)
    assert indexed.returncode == 4 and "Traceback" not in indexed.stderr  # as in the background
    code, out, _ = kenning_cli(capsys, "status", str(repo), "--json-output")
    problems = _problems_text(json.loads(out))
    assert "failed: Cannot write" in problems and "disk space" in problems
    code, out, _ = kenning_cli(capsys, "search", "open the database", str(repo), "--no-refresh",
                           "--json-output")
    assert code == 0 and "failed (Cannot write" in " ".join(json.loads(out)["warnings"])
    code, _, _ = kenning_cli(capsys, "index", str(repo))  # space again: the next run clears it
    code, out, _ = kenning_cli(capsys, "status", str(repo), "--json-output")
    assert code == 0 and json.loads(out)["healthy"]


def _can_mount_tmpfs() -> bool:
    try:
        return subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs a user namespace to mount a tmpfs")
def test_a_run_failed_on_a_really_full_disk_is_kept_for_status(repo, tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    kenning = f"{sys.executable} -m kenning"
    script = f"""set -e
mount -t tmpfs -o size=16m tmpfs {mount}
{kenning} index {repo} --quiet
free=$(df -k --output=avail {mount} | tail -1)
dd if=/dev/zero of={mount}/filler bs=1024 count=$((free - 192)) 2>/dev/null
for i in $(seq 40); do seq -f "def handler_%g(): return 1" 2000 > {repo}/app/gen_$i.py; done
set +e
{kenning} index {repo} --quiet
echo "index exit $?" >&2
{kenning} status {repo} --json-output
"""
    env = {**os.environ, "KENNING_HOME": str(mount / "home"),
           "KENNING_CONFIG": str(tmp_path / "config.toml")}
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], env=env, capture_output=True,
                          text=True, timeout=600)
    assert "index exit 4" in done.stderr, done.stderr
    status = json.loads(done.stdout.strip().splitlines()[-1])
    assert not status["healthy"], status
    assert "The index run of" in _problems_text(status), status  # the failure was kept
    assert "space" in _problems_text(status), status


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs a user namespace to mount")
def test_a_read_only_home_serves_status_and_searches(built, repo, tmp_path):
    import sqlite3

    _readers.drop(built.dir)
    conn = sqlite3.connect(built.dir / "index.db")  # the last to close removes the WAL files
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert not (built.dir / "index.db-shm").exists()  # as a home left by a finished run
    home = os.environ["KENNING_HOME"]
    kenning = f"{sys.executable} -m kenning"
    script = f"""mount --bind {home} {home} && mount -o remount,ro,bind {home} || exit 9
{kenning} status {repo} --json-output; echo "status exit $?" >&2
{kenning} search 'open the database' {repo} --no-refresh --json-output
echo "search exit $?" >&2
"""
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True,
                          text=True, timeout=300)
    assert "status exit 0" in done.stderr and "search exit 0" in done.stderr, done.stderr
    status, found = (json.loads(line) for line in done.stdout.strip().splitlines())
    assert status["state"] == "ready" and status["healthy"], status
    assert found["results"][0]["path"] == "app/db.py"


@pytest.mark.parametrize("home", ["/sys/kenning-test-home", "/proc/kenning-test-home/data"])
def test_a_home_that_cannot_be_written_is_one_sentence(repo, capsys, monkeypatch, home):
    monkeypatch.setenv("KENNING_HOME", home)
    for args in (["index", str(repo)], ["search", "open the database", str(repo)]):
        code, out, err = kenning_cli(capsys, *args)
        assert code == 4 and not out, (args, err)
        assert f"Cannot write to {home.split('/kenning')[0]}/kenning" in err
        assert "set KENNING_HOME to a folder you can write to" in err
        assert len(err.strip().splitlines()) <= 3  # one sentence and its hint
    code, out, _ = kenning_cli(capsys, "doctor", "--json-output")
    check = next(c for c in json.loads(out)["checks"] if c["check"] == "index writable")
    assert not check["ok"] and "KENNING_HOME" in check["fix"] and "Reinstall" not in check["fix"]
    monkeypatch.setenv("KENNING_CONFIG", f"{home}/config.toml")
    code, _, err = kenning_cli(capsys, "config", "set", "search.limit", "5")
    assert code == 2 and f"Cannot write the config file {home}/config.toml" in err
    assert "KENNING_CONFIG" in err


def test_the_mcp_status_shows_damage_and_a_failed_index_run(built, repo, model):
    from kenning import config
    from kenning.errors import IndexError_
    from kenning.mcpserver.projects import Registry
    from kenning.mcpserver.service import Service
    from kenning.store.vectors import INT8

    settings = config.load()
    service = Service(settings, Registry(settings, [str(repo)]), model)
    built.record_failure(IndexError_("Cannot write the vector files in x: File too large.",
                                     hint="Free some disk space."), "index")
    project = service.status(None)["projects"][0]
    assert project["state"] == "ready"
    [problem] = project["problems"]
    assert problem["message"].endswith("failed: Cannot write the vector files in x: File too "
                                       "large.")
    assert problem["error"] == "index_unreadable" and problem["hint"] == "Free some disk space."
    with (built.dir / INT8).open("r+b") as fh:
        fh.truncate(100)
    project = service.status(None)["projects"][0]
    assert project["state"] == "unreadable" and project["index_dir"] == str(built.dir)
    assert project["problems"][0]["error"] == "index_damaged"
    assert "kenning index --full" in project["problems"][0]["hint"]


def _damage_database(directory: Path, seed: int) -> None:
    """200 bytes past the first page (the header stays a database's) set at random."""
    db_file = directory / "index.db"
    for extra in ("index.db-wal", "index.db-shm"):
        (directory / extra).unlink(missing_ok=True)
    rnd = random.Random(seed)
    data = bytearray(db_file.read_bytes())
    for _ in range(200):
        data[rnd.randrange(4096, len(data))] = rnd.randrange(256)
    db_file.write_bytes(bytes(data))
    _readers.drop(directory)


@pytest.mark.parametrize("seed", range(3))  # seed 0 damages the schema into bytes not UTF-8
def test_random_damage_is_the_integrity_error_everywhere(built, repo, capsys, model, seed,
                                                         monkeypatch):
    import kenning
    from kenning import config
    from kenning.mcpserver.projects import Registry
    from kenning.mcpserver.service import Service

    _damage_database(built.dir, seed)
    _damaged_everywhere(capsys, repo, "is damaged")
    monkeypatch.chdir(repo)
    code, _, err = kenning_cli(capsys, "related", "app/db.py:4")
    assert code == 4 and "is damaged" in err and "kenning index --full" in err, err
    service = Service(config.load(), Registry(config.load(), [str(repo)]), model)
    for call in (lambda: kenning.search("open the database", repo, refresh=False),
                 lambda: kenning.related(f"{repo}/app/db.py:4", repo, refresh=False),
                 lambda: service.search("open the database"),
                 lambda: service.related("app/db.py:4")):
        with pytest.raises(kenning.IndexDamaged, match="is damaged") as raised:
            call()
        assert "kenning index --full" in str(raised.value.hint)
    [project] = service.status(None)["projects"]
    assert project["state"] == "unreadable"
    assert project["problems"][0]["error"] == "index_damaged"
    _repair(capsys, repo, built)


def test_stored_text_that_is_not_utf8_is_damage(built, repo, capsys):
    import sqlite3

    conn = sqlite3.connect(built.dir / "index.db")
    with conn:  # a path as a flipped bit leaves it: no longer UTF-8
        conn.execute("UPDATE chunks SET path = CAST(X'ff' || CAST(path AS BLOB) AS TEXT)")
    conn.close()
    _readers.drop(built.dir)
    code, _, err = kenning_cli(capsys, "search", "open the database", str(repo), "--no-refresh")
    assert code == 4 and "is damaged" in err and "kenning index --full" in err, err
    _repair(capsys, repo, built)
