"""The platform seam: the Windows answers whose logic is pure run here; the calls into Windows
itself (OpenProcess, GetProcessTimes, TerminateProcess, detached children) run in the Windows
cell of the CI workflow, through the tests of the modules that use them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path, PureWindowsPath

import pytest
from kenning import hostos, project


def test_this_process_runs_and_keeps_one_start_time() -> None:
    me = hostos.started(os.getpid())
    assert hostos.alive(os.getpid())
    if sys.platform in ("linux", "darwin", "win32"):  # the systems that say when
        assert isinstance(me, int) and me == hostos.started(os.getpid())


def test_an_ended_process_is_not_alive_and_has_no_start_time() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not hostos.alive(child.pid) and hostos.started(child.pid) is None
    for pid in (0, -1, hostos.PID_MAX + 1):
        assert not hostos.alive(pid) and hostos.started(pid) is None


def test_kill_now_ends_a_process_with_the_killed_code() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    hostos.kill_now(child.pid)
    assert child.wait(timeout=30) == hostos.KILLED


def test_a_proc_stat_line_gives_its_start_time_past_a_name_with_parentheses() -> None:
    fields = " ".join(str(n) for n in range(4, 30))  # each field its number
    assert hostos.proc_start_time(f"42 (a) b)) S {fields}".encode()) == 22
    assert hostos.proc_start_time(b"42 (short) S 1 2") is None


def test_windows_folders_are_appdata_for_config_and_localappdata_for_data(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from platformdirs.windows import Windows

    monkeypatch.setenv("WIN_PD_OVERRIDE_APPDATA", r"C:\Users\me\AppData\Roaming")
    monkeypatch.setenv("WIN_PD_OVERRIDE_LOCAL_APPDATA", r"C:\Users\me\AppData\Local")
    config, data = hostos.folders(Windows)
    assert PureWindowsPath(config) == PureWindowsPath(r"C:\Users\me\AppData\Roaming\kenning")
    assert PureWindowsPath(data) == PureWindowsPath(r"C:\Users\me\AppData\Local\kenning")


@pytest.mark.parametrize(("path", "key"), [
    (r"C:\Users\Me\Proj", r"c:\users\me\proj"),
    ("C:/Users/Me/Proj", r"c:\users\me\proj"),
    (r"\\?\C:\Users\Me\Proj", r"c:\users\me\proj"),
    (r"\\?\UNC\Server\Share\Proj", r"\\server\share\proj"),
    (r"\\Server\Share\Proj", r"\\server\share\proj"),
])
def test_windows_paths_compare_without_case_or_the_long_path_prefix(path: str, key: str) -> None:
    assert hostos.windows_path_key(path) == key


def test_one_windows_folder_spelt_two_ways_has_one_project_id(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def digest(root: str) -> str:
        return project._derived_id(Path(root), None).rsplit("-", 1)[1]

    upper, lower = r"C:\Users\Me\Proj", r"\\?\c:\users\me\proj"
    assert digest(upper) != digest(lower)  # POSIX: case matters
    monkeypatch.setattr(hostos, "WINDOWS", True)
    assert digest(upper) == digest(lower)
