"""Nothing about the user or the machine is written or sent by the libraries kenning runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from index_helpers import make_repo
from kenning.embedding import local


@pytest.mark.parametrize("runtime", list(local.installed_runtimes()))
def test_the_embedded_model_writes_nothing_outside_kenning_home(tmp_path: Path,
                                                                runtime: str) -> None:
    # an index and a search with each runtime installed here, in processes whose home, temporary
    # folder and working directory are empty folders: every byte written lands in KENNING_HOME
    home, tmp, cwd = (tmp_path / name for name in ("home", "tmp", "cwd"))
    for folder in (home, tmp, cwd):
        folder.mkdir()
    repo = make_repo(tmp_path / "repo")
    kenning_home = tmp_path / "kenning"
    env = {**os.environ, "HOME": str(home), "TMPDIR": str(tmp), "KENNING_RUNTIME": runtime,
           "KENNING_HOME": str(kenning_home), "KENNING_CONFIG": str(kenning_home / "c.toml")}
    # kenning sets these switches itself; OpenVINO's telemetry also stays off in CI
    for name in ("ORT_DISABLE_TELEMETRY", "CI", "TF_BUILD", "JENKINS_URL"):
        env.pop(name, None)
    for args in (["index", str(repo), "--quiet"], ["search", "open the database", str(repo)]):
        run = subprocess.run([sys.executable, "-m", "kenning", *args], env=env, cwd=cwd,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
    assert not (home / ".cache" / "Microsoft").exists()
    assert not list(home.rglob("*deviceid*"))
    for folder in (home, tmp, cwd):
        assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == []
    # the runtime asked for is the one that ran: its compiled model is cached in KENNING_HOME
    cached = "openvino" if runtime == "openvino" else "minilm-*-ort*.onnx"
    assert list((kenning_home / "cache").glob(cached))
