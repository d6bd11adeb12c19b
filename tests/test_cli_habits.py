"""ripgrep habits the search command meets: a closed pipe, a subfolder, highlighted words."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from search_fixtures import Indexed

pytest_plugins = ["search_fixtures"]

KENNING = [sys.executable, "-m", "kenning"]


def test_a_closed_pipe_ends_quietly_with_exit_0(indexed: Indexed) -> None:
    env = {**os.environ, "KENNING_HOME": str(indexed.home), "KENNING_CONFIG": str(indexed.config)}
    for extra in ([], ["--json-output"]):
        reader_gone = subprocess.Popen(
            [*KENNING, "search", "retry backoff", str(indexed.root), "--no-refresh", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert reader_gone.stdout is not None and reader_gone.stderr is not None
        reader_gone.stdout.close()  # as `| head -2` does once it has its lines
        err = reader_gone.stderr.read().decode()
        reader_gone.stderr.close()
        assert reader_gone.wait(timeout=120) == 0, err
        assert "Traceback" not in err and "Error" not in err
