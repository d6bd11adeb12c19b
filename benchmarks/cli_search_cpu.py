"""CPU and wall time of a warm CLI search, in the client process, with the local model's
embedding service and without it (``embedder.service``).

A small project (this package's ``embedding`` and ``chunking`` folders, copied into a git
repository under /tmp) is indexed once in a KENNING_HOME of its own; then each way is run
``--runs`` times, interleaved, after one run that warms it (writes the bytecode cache, starts
the service, saves the model's optimised graph). CPU is user + system of the ``kenning search``
process alone: the service is no child of it. The bytecode cache goes to a folder under /tmp,
as an installed package has its own, whatever PYTHONDONTWRITEBYTECODE says. ``--python``
runs another install (an earlier release, for a before and after); given more than once, the
installs take turns too (the first one indexes). ``--way`` runs one way only. The services are
ended at the end.

    python benchmarks/cli_search_cpu.py [--runs 9] [--python PATH ...]
        [--way "in process" | --way service] [--json-output]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERY = "how are long queries split into parts"


def run(python: str, args: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([python, "-m", "kenning", *args], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--python", action="append")
    parser.add_argument("--way", choices=["in process", "service"])
    parser.add_argument("--json-output", action="store_true")
    args = parser.parse_args()
    pythons = args.python or [sys.executable]
    package = Path(__file__).resolve().parent.parent / "python" / "kenning"
    with tempfile.TemporaryDirectory(prefix="kenning-cli-cpu-", dir="/tmp") as tmp:
        root, home = Path(tmp, "project"), Path(tmp, "home")
        for part in ("embedding", "chunking"):
            shutil.copytree(package / part, root / part,
                            ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("KENNING_") and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(KENNING_HOME=str(home), KENNING_CONFIG=str(home / "config.toml"),
                   PYTHONPYCACHEPREFIX=str(Path(tmp, "pycache")))
        ways = {way: {**env, "KENNING_EMBEDDER_SERVICE": on}
                for way, on in (("in process", "false"), ("service", "true"))
                if args.way in (None, way)}
        runs = {(f"{python} " if len(pythons) > 1 else "") + way: (python, way_env)
                for python in pythons for way, way_env in ways.items()}
        search = ["search", QUERY, str(root), *(["--json-output"] if args.json_output else [])]
        try:
            subprocess.run([pythons[0], "-m", "kenning", "index", str(root), "--quiet"],
                           env={**env, "KENNING_EMBEDDER_SERVICE": "false"}, check=True)
            for python, way_env in runs.values():
                run(python, search, way_env)
            found: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
            for _ in range(args.runs):
                for name, (python, way_env) in runs.items():
                    found[name].append(run(python, search, way_env))
        finally:
            for python in pythons:
                subprocess.run([python, "-c", "from kenning.embedding.service_client import "
                                "stop_services; stop_services()"], env=env,
                               stderr=subprocess.DEVNULL)  # an earlier release has no service
    for name, times in found.items():
        cpu, wall = [t[0] for t in times], [t[1] for t in times]
        print(f"{name:>10}: CPU p50 {statistics.median(cpu):.3f} s (min {min(cpu):.3f}), "
              f"wall p50 {statistics.median(wall):.3f} s (min {min(wall):.3f}), "
              f"{len(times)} runs")


if __name__ == "__main__":
    main()
