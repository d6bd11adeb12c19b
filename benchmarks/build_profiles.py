"""What the release profile costs and buys: a clean `cargo build --release` of the core under
each profile (wall and CPU seconds), then single-thread kernel timings of each build.

    python benchmarks/build_profiles.py [--profiles fat thin off] [--rounds 3]

Profiles: fat = lto "fat", 1 codegen unit (Cargo.toml); thin = lto "thin", 16 units; off = no
LTO, 16 units. Builds go to /tmp, dependencies included (as `pip install .` on a fresh
machine). CPU seconds hold up on a busy machine, wall seconds do not; kernel times are the
minimum of many calls, taken in turn round by round, so load weighs on every build alike.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROFILES = {"fat": ("fat", "1"), "thin": ("thin", "16"), "off": ("off", "16")}

KERNELS = r"""
import json, time
import numpy as np
from kenning import _core
rng = np.random.default_rng(0)
def best(fn, n):
    times = []
    for _ in range(n):
        start = time.perf_counter(); fn(); times.append(time.perf_counter() - start)
    return round(min(times) * 1000, 3)
out = {}
for bits in (384, 2560):
    db = rng.integers(0, 256, (100_000, bits // 8), dtype=np.uint8)
    q = rng.integers(0, 256, (1, bits // 8), dtype=np.uint8)
    out[f"scan 1 thread {bits} bits x 100k"] = best(
        lambda: _core.hamming_topk(q, db, 50, threads=1), 40)
x = rng.standard_normal((20_000, 384)).astype(np.float32)
out["binarize 20k x 384"] = best(lambda: _core.binarize(x), 20)
print(json.dumps(out))
"""


def build(profile: str, target: Path) -> tuple[float, float]:
    lto, units = PROFILES[profile]
    env = {**os.environ, "CARGO_PROFILE_RELEASE_LTO": lto,
           "CARGO_PROFILE_RELEASE_CODEGEN_UNITS": units, "CARGO_TARGET_DIR": str(target)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(["cargo", "build", "--release", "--features", "pyo3/extension-module"],
                   cwd=REPO, env=env, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - started, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", nargs="+", default=list(PROFILES), choices=list(PROFILES))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kenning-build-profiles-") as tmp:
        packages: dict[str, Path] = {}
        for profile in args.profiles:
            target = Path(tmp) / f"target-{profile}"
            wall, cpu = build(profile, target)
            print(f"build {profile:<5} wall {wall:7.1f} s  cpu {cpu:7.1f} s", flush=True)
            package = Path(tmp) / f"py-{profile}"
            shutil.copytree(REPO / "python" / "kenning", package / "kenning",
                            ignore=shutil.ignore_patterns("*.so", "__pycache__"))
            shutil.copy2(target / "release" / "lib_core.so", package / "kenning" / "_core.abi3.so")
            packages[profile] = package
        best: dict[str, dict[str, float]] = {}
        for _ in range(args.rounds):
            for profile, package in packages.items():
                done = subprocess.run([sys.executable, "-c", KERNELS], check=True, text=True,
                                      capture_output=True, env={**os.environ,
                                                                "PYTHONPATH": str(package)})
                for name, ms in json.loads(done.stdout).items():
                    mine = best.setdefault(name, {})
                    mine[profile] = min(ms, mine.get(profile, ms))
        for name, by_profile in best.items():
            print(f"{name:<32}" + "  ".join(f"{p} {ms:7.3f} ms" for p, ms in by_profile.items()))


if __name__ == "__main__":
    main()
