"""How often a first search never ends: fresh processes, several at once, each running the
first search of a new two-file project in a KENNING_HOME of its own (so each compiles the local
model), which embeds the query on one thread beside the index's chunks on another. A process
still running after ``--limit`` seconds is counted as hung and ended with SIGABRT, so that
faulthandler writes its threads' stacks into its log (kept under ``--keep``).

    python benchmarks/first_search_hangs.py [--rounds 20] [--together 4] [--limit 60]

Measured on 2 cores: before OpenVINO's runs took turns, 4 of 80 first searches hung, and 2 of
80 in a second run (both threads inside ``InferRequest.infer``, filling their input tensors);
after, 0 of 160.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

FIRST_SEARCH = textwrap.dedent("""
    import sys
    from pathlib import Path

    import kenning

    root = Path(sys.argv[1])
    (root / ".git").mkdir(parents=True)
    (root / "notes.md").write_text("# Release walrus\\n\\nHow to cut a release.\\n")
    (root / "count.py").write_text("def walrus_count(herd):\\n    return len(herd)\\n")
    print(len(kenning.search("walrus release", root).results))
""")


def run_round(work: Path, together: int, limit: float) -> list[Path]:
    """``together`` first searches at once; the logs of those that hung."""
    started = []
    for k in range(together):
        place = work / str(k)
        place.mkdir()
        env = {**os.environ, "KENNING_HOME": str(place / "home"),
               "KENNING_CONFIG": str(place / "config.toml"), "PYTHONFAULTHANDLER": "1"}
        log = (place / "log").open("w")
        started.append((subprocess.Popen([sys.executable, "-c", FIRST_SEARCH, place / "repo"],
                                         env=env, stdout=log, stderr=log), log, place))
    hung = []
    for process, log, place in started:
        try:
            process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)
            process.wait()
            hung.append(place / "log")
        finally:
            log.close()
    return hung


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--together", type=int, default=4)
    parser.add_argument("--limit", type=float, default=60.0,
                        help="seconds after which a first search counts as hung")
    parser.add_argument("--keep", type=Path, help="a folder for the logs of hung processes")
    args = parser.parse_args()
    hung = 0
    for n in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="kenning-first-search-") as work:
            for log in run_round(Path(work), args.together, args.limit):
                hung += 1
                stacks = log.read_text()
                print(f"round {n + 1}: a first search hung; its threads:\n{stacks}")
                if args.keep is not None:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    (args.keep / f"hung-{hung}.log").write_text(stacks)
    print(f"{hung} of {args.rounds * args.together} first searches hung "
          f"(more than {args.limit:.0f} s)")


if __name__ == "__main__":
    main()
