"""`kenning index`: progress as JSON lines, quiet, dry run, busy and --wait, clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from index_helpers import kenning_cli
from kenning import config
from kenning.cli import cli
from kenning.store import Index

pytest_plugins = ["index_helpers"]  # fixtures: model, settings, repo


def invoke(*args: str):
    result = CliRunner().invoke(cli, ["index", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_json_output_reports_progress_then_a_finished_event(repo):
    lines = [json.loads(line) for line in invoke(str(repo / "app"), "--json-output")
             .stdout.splitlines()]
    kinds = [e["type"] for e in lines]
    assert kinds[0] == "scan" and kinds[-1] == "finished"
    assert kinds.index("committed") < kinds.index("embedding")  # text search before vectors
    done = lines[-1]
    assert done["root"] == str(repo)  # a path inside the work tree is lifted to its root
    assert done["files_added"] == 5 and done["vectors_embedded"] == done["chunks"] > 0
    assert done["status"] == "complete" and done["timings"]["total"] > 0
    again = json.loads(invoke(str(repo), "--json-output").stdout.splitlines()[-1])
    assert again["nothing_changed"] and again["vectors_embedded"] == 0


def test_people_see_a_summary_and_an_unchanged_tree_says_so(repo):
    assert "Indexed" in invoke(str(repo)).stdout
    assert "Nothing changed" in invoke(str(repo)).stdout
    assert invoke(str(repo), "--quiet").stdout == ""


def test_dry_run_reports_languages_and_largest_without_indexing(repo):
    (repo / "blob.dat").write_bytes(b"head\0tail")
    (repo / "logo.png").write_bytes(b"\x89PNG")
    (repo / "node_modules" / "dep").mkdir(parents=True)
    (repo / "node_modules" / "dep" / "index.js").write_text("module.exports = 1;\n")
    report = json.loads(invoke(str(repo), "--dry-run", "--json-output").stdout.splitlines()[-1])
    assert report["type"] == "dry_run" and report["files"] == 5
    assert set(report["languages"]) >= {"python", "markdown", "javascript"}
    assert report["languages"]["python"]["files"] == 2
    assert report["chunks"] == sum(s["chunks"] for s in report["languages"].values())
    assert report["largest_files"][0]["path"] == "app/server.py"
    assert {f["path"] for f in report["largest_folders"]} >= {"app/", "docs/", "lib/"}
    assert report["skipped_files"] == {"binary": 1, "default": 1}
    assert report["skipped_folders"] == {"default": 2}  # .git and node_modules
    assert report["skipped_paths"] == {"binary": ["blob.dat"],
                                       "default": [".git/", "logo.png", "node_modules/"]}
    settings = config.load()
    with pytest.raises(Exception, match="no index"):
        Index.open(repo, settings)
    text = invoke(str(repo), "--dry-run").stdout
    assert "nothing was embedded" in text and "python" in text
    assert "binary     blob.dat\n" in text and "logo.png, node_modules/" in text


def test_dry_run_of_an_empty_folder_says_there_is_nothing_to_index(tmp_path):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "x.pyc").write_bytes(b"\0")
    text = invoke(str(tmp_path), "--dry-run").stdout
    assert text.startswith(f"Nothing to index in {tmp_path.resolve()}")
    assert "  default    cache/x.pyc\n" in text and "┏" not in text  # no empty tables


def kenning(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "kenning", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))


def test_second_indexer_reports_busy_and_wait_waits(repo):
    index = Index.open(repo, config.load(), create=True)
    with index.writer():
        proc = kenning("index", str(repo))
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "in progress" in out
        waiting = kenning("index", str(repo), "--wait", "--json-output")
        assert waiting.stdout is not None
        assert json.loads(waiting.stdout.readline())["type"] == "waiting"
        # written once the waiter has found the lock held: a waiter that went on without the
        # lock would have walked the tree before it; one that waited walks it after
        (repo / "late.py").write_text("def later():\n    return 2\n")
        assert waiting.poll() is None
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["files_added"] == 6


def test_bad_path_is_one_clear_line(tmp_path):
    proc = kenning("index", str(tmp_path / "missing"))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "does not exist" in err and "Traceback" not in err


def test_an_ignore_file_too_large_to_apply_refuses_to_index(repo, capsys):
    """A .gitignore over the 16 MiB bound is refused in one sentence (exit 2), never skipped:
    a secret it excludes is not indexed, and the index built before stays as it was."""
    (repo / "secrets.py").write_text("API_TOKEN = 'hunter2'\n")
    (repo / ".gitignore").write_text("secrets.py\n")
    code, _, err = kenning_cli(capsys, "index", str(repo), "--quiet")
    assert code == 0, err
    with Index.open(repo, config.load()).snapshot() as snap:
        before = snap.generation
    (repo / ".gitignore").write_text("secrets.py\n" + "#" * (16 << 20) + "\n")
    code, _, err = kenning_cli(capsys, "index", str(repo))
    assert code == 2
    assert ".gitignore" in err and "16 MiB" in err and len(err.strip().splitlines()) <= 2
    code, out, _ = kenning_cli(capsys, "search", "API_TOKEN", str(repo), "--no-refresh",
                               "--json-output")
    assert code == 0 and "secrets.py" not in out
    code, out, _ = kenning_cli(capsys, "status", str(repo), "--json-output")
    problems = json.loads(out)["problems"]  # status names the refusal, with no traceback
    assert any("16 MiB" in p["message"] for p in problems), (code, out)
    with Index.open(repo, config.load()).snapshot() as snap:
        assert snap.generation == before
