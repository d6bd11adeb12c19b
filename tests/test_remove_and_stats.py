"""`remove-index` asks before removing every index and says what it freed; `status --paths`
says where everything lives; `stats` estimates tokens saved low, lists its last errors and
keeps its log bounded (real processes where a terminal matters)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from kenning import config, usage_log
from kenning.cli import cli
from kenning.project import kenning_home

KENNING = [sys.executable, "-m", "kenning"]


@pytest.fixture
def two_indexes(tmp_path: Path) -> list[Path]:
    roots = []
    for name in ("one", "two"):
        root = tmp_path / name
        root.mkdir()
        (root / "a.py").write_text(f"def {name}():\n    return 1\n")
        assert CliRunner().invoke(cli, ["index", str(root), "--quiet"]).exit_code == 0
        roots.append(root)
    return roots


def _indexes() -> list[Path]:
    return list((kenning_home() / "indices").glob("*/*"))


def _on_a_terminal(args: list[str], answer: bytes) -> tuple[int, str]:
    leader, follower = pty.openpty()
    proc = subprocess.Popen([*KENNING, *args], stdin=follower, stdout=subprocess.PIPE,
                            stderr=follower)
    os.close(follower)
    os.write(leader, answer)
    out, _ = proc.communicate(timeout=120)
    shown = b""
    try:
        while chunk := os.read(leader, 4096):
            shown += chunk
    except OSError:  # the terminal closed with the process
        pass
    os.close(leader)
    return proc.returncode, (shown + out).decode()


@pytest.mark.usefixtures("two_indexes")
def test_remove_all_asks_on_a_terminal_and_refuses_without_one() -> None:
    refused = subprocess.run([*KENNING, "remove-index", "--all"], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True)
    assert refused.returncode == 2 and len(_indexes()) == 2
    assert refused.stderr == ("Error: Refusing to remove every index (2) without a "
                              "confirmation; pass --yes.\n")
    code, shown = _on_a_terminal(["remove-index", "--all"], b"n\n")
    assert code == 0 and "Remove every index (2, " in shown and "Nothing was removed." in shown
    assert len(_indexes()) == 2
    code, shown = _on_a_terminal(["remove-index", "--all"], b"y\n")
    assert code == 0 and "MB freed." in shown and _indexes() == []


def test_remove_reports_the_space_freed_and_can_take_the_model_cache(
        two_indexes: list[Path]) -> None:
    cache = kenning_home() / "cache"
    cache.mkdir(exist_ok=True)
    (cache / "graph.onnx").write_bytes(bytes(2_000_000))  # as the embedded model leaves it
    done = CliRunner().invoke(cli, ["remove-index", str(two_indexes[0]), "--cache",
                                    "--json-output"])
    report = json.loads(done.output)
    assert report["removed"][-1] == str(cache) and not cache.exists()
    assert report["bytes_freed"] > 2_000_000 and len(_indexes()) == 1
    done = CliRunner().invoke(cli, ["remove-index", "--all", "--yes"])
    assert done.exit_code == 0 and done.output.endswith(" MB freed.\n") and _indexes() == []


@pytest.mark.usefixtures("two_indexes")
def test_status_paths_says_where_everything_lives() -> None:
    report = json.loads(CliRunner().invoke(cli, ["status", "--paths", "--json-output"]).output)
    assert report["config"]["path"] == str(config.config_path())
    assert report["indexes"]["path"] == str(kenning_home() / "indices")
    assert report["indexes"]["bytes"] > 0 and report["usage_log"]["exists"]
    stats = json.loads(CliRunner().invoke(cli, ["stats", "--json-output"]).output)
    assert stats["index_runs"] == 2  # `kenning index` of each
    text = CliRunner().invoke(cli, ["status", "--paths"]).output
    assert f"model cache  {kenning_home() / 'cache'}  (" in text
    assert f"config file  {config.config_path()}  (not created yet)" in text


def test_tokens_saved_counts_only_the_top_files_once_less_what_was_shown() -> None:
    def hit(path: str, size: int, content: str = "x" * 40) -> dict[str, object]:
        return {"project": "p", "path": path, "_read_bytes": size, "content": content}

    results = [hit("a.py", 4000), hit("a.py", 4000), hit("b.py", 2000), hit("c.py", 1000),
               hit("d.py", 100_000)]  # d.py is past the top three files: not counted
    assert usage_log.tokens_saved(results) == (4000 + 2000 + 1000 - 5 * 40) // 4
    assert usage_log.tokens_saved([hit("small.py", 10)]) == 0  # never below zero


def test_stats_lists_the_last_errors_and_states_its_method(tmp_path: Path) -> None:
    done = subprocess.run([*KENNING, "search", "x", str(tmp_path), "-p", "../out"],
                          capture_output=True, text=True)
    assert done.returncode == 2
    info = json.loads(CliRunner().invoke(cli, ["stats", "--json-output"]).output)
    assert info["errors"] == 1 and info["last_errors"][0]["command"] == "search"
    assert "../out" in info["last_errors"][0]["message"]
    text = CliRunner().invoke(cli, ["stats"]).output
    assert "last errors:" in text and "search: " in text
    # one line says the method, and the figure is not called a bound
    line = next(ln for ln in text.splitlines() if ln.startswith("tokens saved"))
    assert "at most 2,000 lines of each top-3 result file" in line
    assert "low" not in line and "bound" not in line
    method = " ".join(CliRunner().invoke(cli, ["stats", "-h"]).output.split())
    assert "an estimate per search, not a bound" in method and "at most 2,000 lines" in method


def test_the_usage_log_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(usage_log, "MAX_BYTES", 4000)
    with usage_log.opened():
        for i in range(400):
            usage_log.record("search", ms=1.0, results=i)
    usage_log.record("search", ms=1.0, results=400)  # no front end has the log open: not kept
    size = usage_log.log_path().stat().st_size
    assert 1000 < size <= 4000
    events = usage_log.read()
    assert events[-1]["results"] == 399 and all("event" in e for e in events)


def test_a_read_returns_a_capped_number_of_lines() -> None:
    line = b"x" * 99 + b"\n"
    assert usage_log.read_cost(line * 10) == 1000  # a small file is read whole
    big = line * (usage_log.READ_LINES * 3)  # a file of 600 KB is not
    assert usage_log.read_cost(big) == 100 * usage_log.READ_LINES
    assert usage_log.read_cost(b"no newline at all") == 17
