"""Nothing about the user or the machine is written or sent by the libraries kenning runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from index_helpers import make_repo


def test_the_embedded_model_writes_no_telemetry_under_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    repo = make_repo(tmp_path / "repo")
    env = {**os.environ, "HOME": str(home)}
    env.pop("ORT_DISABLE_TELEMETRY", None)
    run = subprocess.run([sys.executable, "-m", "kenning", "index", str(repo), "--quiet"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert not (home / ".cache" / "Microsoft").exists()
    assert not list(home.rglob("*deviceid*"))
