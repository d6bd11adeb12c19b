"""The README's commands for the tests run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_way_to_repeat_an_order_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"`python (-m pytest -p no:xdist --randomly-seed=)N`", readme)
    assert found is not None
    command = [sys.executable, *found.group(1).split(), "12345"]
    command[-2:] = ["".join(command[-2:])]  # --randomly-seed=12345
    run = subprocess.run([*command, "--collect-only", "tests/test_errors.py"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Using --randomly-seed=12345" in run.stdout
