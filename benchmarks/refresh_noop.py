"""A refresh when nothing changed, on a generated tree of 10,000+ files, against `git status`.

Targets (issue 3): <= 300 ms and within 1.5x of `git status` measured in the same run. The tree
is a git repository under /tmp (regenerated only when missing); its files repeat a pool of
contents, so the one-time first index embeds only the distinct chunks (vectors are keyed by
chunk text) while the refresh still stats and compares every file. Both sides are timed
interleaved; CPU time (user + system, all threads) is printed beside the wall time, as it
depends less on what else the machine runs.

    python benchmarks/refresh_noop.py [--files 10000] [--runs 15] [--tree /tmp/kenning-noop-tree]
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

TEMPLATES = [
    "def handler_{k}(event, context):\n    \"\"\"Handle event kind {k}.\"\"\"\n"
    "    payload = event.get('payload', {{}})\n    return {{'kind': {k}, 'size': len(payload)}}\n",
    "class Service{k}:\n    \"\"\"Service number {k} with a cache.\"\"\"\n\n"
    "    def __init__(self):\n        self.cache = {{}}\n\n"
    "    def get(self, key):\n        return self.cache.get(key)\n",
    "export function format{k}(value) {{\n  return `item-{k}: ${{value}}`;\n}}\n",
    "# Notes {k}\n\nThis module documents feature {k} and its configuration.\n",
]
EXTENSIONS = [".py", ".py", ".js", ".md"]


def generate(tree: Path, files: int, distinct: int = 60) -> None:
    """``files`` files in nested directories (~40 per directory), committed to git."""
    if (tree / ".git").exists() and sum(1 for _ in tree.rglob("*.*")) >= files:
        return
    shutil.rmtree(tree, ignore_errors=True)
    for i in range(files):
        kind = i % len(TEMPLATES)
        folder = tree / f"pkg{i // 2000}" / f"sub{(i // 40) % 50}"
        folder.mkdir(parents=True, exist_ok=True)
        text = TEMPLATES[kind].format(k=(i // len(TEMPLATES)) % distinct)
        (folder / f"file{i}{EXTENSIONS[kind]}").write_text(text)
    git = ["git", "-C", str(tree), "-c", "user.email=b@example.com", "-c", "user.name=b"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "tree"], check=True)


def median_ms(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def timed(fn, who: int) -> tuple[float, float]:
    """(wall ms, CPU ms) of one call; ``who`` is RUSAGE_SELF or RUSAGE_CHILDREN."""
    def cpu() -> float:
        usage = resource.getrusage(who)
        return usage.ru_utime + usage.ru_stime

    cpu_start, start = cpu(), time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000, (cpu() - cpu_start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--tree", type=Path, default=Path("/tmp/kenning-noop-tree"))
    args = parser.parse_args()
    os.environ.setdefault("KENNING_HOME", tempfile.mkdtemp(prefix="kenning-noop-home-"))
    os.environ.setdefault("KENNING_CONFIG", os.path.join(os.environ["KENNING_HOME"], "c.toml"))

    from kenning import config, kernels
    from kenning.embedding import make_embedder
    from kenning.indexer import refresh

    generate(args.tree, args.files)
    settings = config.load()
    embedder = make_embedder(settings)
    start = time.perf_counter()
    first = refresh(args.tree, settings, embedder=embedder)
    print(f"first index: {first.files} files, {first.chunks} chunks, "
          f"{first.vectors_embedded} embedded, {time.perf_counter() - start:.1f}s")
    assert first.status == "complete", first

    def noop() -> None:
        result = refresh(args.tree, settings, embedder=embedder)
        assert result.nothing_changed and result.files == first.files, result

    def git_status() -> None:
        subprocess.run(["git", "-C", str(args.tree), "status", "--porcelain"], check=True,
                       stdout=subprocess.DEVNULL)

    noop()
    git_status()  # warm both
    ours, gits = [], []
    for _ in range(args.runs):  # interleaved, so both see the same machine load
        ours.append(timed(noop, resource.RUSAGE_SELF))
        gits.append(timed(git_status, resource.RUSAGE_CHILDREN))
    ours_ms, git_ms = (statistics.median(t[0] for t in ts) for ts in (ours, gits))
    ours_cpu, git_cpu = (statistics.median(t[1] for t in ts) for ts in (ours, gits))
    stages = refresh(args.tree, settings, embedder=embedder).timings
    cli = median_ms(lambda: subprocess.run([sys.executable, "-m", "kenning", "index", "--quiet",
                                            str(args.tree)], check=True), 5)
    print(f"kernels backend: {kernels.BACKEND}")
    print(f"files: {first.files}  runs: {args.runs} (medians)")
    print(f"refresh, nothing changed: {ours_ms:7.1f} ms  (CPU {ours_cpu:.1f} ms; stages: " +
          ", ".join(f"{k} {v * 1000:.1f}" for k, v in stages.items()) + ")")
    print(f"git status --porcelain:   {git_ms:7.1f} ms  (CPU {git_cpu:.1f} ms)")
    print(f"ratio refresh / git status: {ours_ms / git_ms:.2f}x  (target <= 1.5x, <= 300 ms); "
          f"CPU {ours_cpu / git_cpu:.2f}x")
    print(f"`kenning index --quiet` end to end (new process): {cli:.0f} ms")


if __name__ == "__main__":
    main()
