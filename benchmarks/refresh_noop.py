"""A refresh when nothing changed and after editing 1 and 100 files, on generated trees of
10,000+ files, against `git status` after the same edit.

Targets: a no-op refresh <= 300 ms and within 1.5x of `git status` measured in the same run; a
refresh after a one-file edit (files and chunks committed, embedding left out) within 1.5x of
the no-op refresh. Each tree is a git repository under /tmp (regenerated only when missing);
its files repeat a pool of contents, so the one-time first index embeds only the distinct chunks
(vectors are keyed by chunk text) while the refresh still stats and compares every file. Both
sides are timed interleaved, each edit made before either is timed; CPU time (user + system,
all threads) is printed beside the wall time, as it depends less on what else the machine runs.

    python benchmarks/refresh_noop.py [--files 10000,100000] [--runs 15] \
        [--tree /tmp/kenning-noop-tree]   # a tree per size: <tree>-<files>
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


def edit(paths: list[Path], run: int) -> None:
    """A new last line in each file, so its content (and a chunk) changes on every run."""
    for path in paths:
        text = path.read_text().split("# edit ")[0]
        path.write_text(f"{text}# edit {run}\n")


def bench(tree: Path, files: int, runs: int) -> None:
    from kenning import config, kernels
    from kenning.embedding import make_embedder
    from kenning.indexing.indexer import refresh

    generate(tree, files)
    settings = config.load()
    embedder = make_embedder(settings)
    start = time.perf_counter()
    first = refresh(tree, settings, embedder=embedder)
    print(f"\nfirst index of {tree}: {first.files} files, {first.chunks} chunks, "
          f"{first.vectors_embedded} embedded, {time.perf_counter() - start:.1f}s")
    assert first.status in ("complete", "partial"), first

    def noop() -> None:
        result = refresh(tree, settings, embedder=embedder, embed=False)
        assert result.nothing_changed and result.files == first.files, result

    def edited(count: int) -> None:
        result = refresh(tree, settings, embedder=embedder, embed=False)
        assert result.files_changed == count and result.files == first.files, result

    def git_status() -> None:
        subprocess.run(["git", "-C", str(tree), "status", "--porcelain"], check=True,
                       stdout=subprocess.DEVNULL)

    every = sorted(tree.rglob("file*"))
    picks = {1: [every[len(every) // 2]], 100: every[:: max(1, len(every) // 100)][:100]}
    noop()
    git_status()  # warm both
    cli = median_ms(lambda: subprocess.run([sys.executable, "-m", "kenning", "index", "--quiet",
                                            str(tree)], check=True), 5)
    rows: dict[str, list[tuple[float, float]]] = {}
    for run in range(runs):  # interleaved, so every case sees the same machine load
        rows.setdefault("refresh, nothing changed", []).append(
            timed(noop, resource.RUSAGE_SELF))
        rows.setdefault("git status, nothing changed", []).append(
            timed(git_status, resource.RUSAGE_CHILDREN))
        for count, paths in picks.items():
            edit(paths, run)
            rows.setdefault(f"refresh, {count} edited", []).append(
                timed(lambda count=count: edited(count), resource.RUSAGE_SELF))
            edit(paths, run + runs)  # the same edit again for git, which saw the last one
            rows.setdefault(f"git status, {count} edited", []).append(
                timed(git_status, resource.RUSAGE_CHILDREN))
            edited(count)  # catch the index up, untimed
    edit(picks[1], 2 * runs)
    stages = refresh(tree, settings, embedder=embedder, embed=False).timings
    print(f"kernels backend: {kernels.BACKEND}; files: {first.files}; runs: {runs} (medians)")
    wall = {name: statistics.median(t[0] for t in ts) for name, ts in rows.items()}
    for name, ts in rows.items():
        cpu = statistics.median(t[1] for t in ts)
        print(f"{name:30s} {wall[name]:8.1f} ms  (CPU {cpu:.1f} ms)")
    print("one-file edit stages: " + ", ".join(f"{k} {v * 1000:.1f}" for k, v in stages.items()))
    noop_ms = wall["refresh, nothing changed"]
    print(f"no-op refresh / git status: {noop_ms / wall['git status, nothing changed']:.2f}x "
          f"(target <= 1.5x, <= 300 ms)")
    for count in picks:
        print(f"{count}-file edit: refresh / no-op refresh "
              f"{wall[f'refresh, {count} edited'] / noop_ms:.2f}x"
              f"{' (target <= 1.5x)' if count == 1 else ''}, refresh / git status "
              f"{wall[f'refresh, {count} edited'] / wall[f'git status, {count} edited']:.2f}x")
    print(f"`kenning index --quiet` end to end (new process, nothing changed): {cli:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="10000,100000", help="tree sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--tree", type=Path, default=Path("/tmp/kenning-noop-tree"))
    args = parser.parse_args()
    os.environ.setdefault("KENNING_HOME", tempfile.mkdtemp(prefix="kenning-noop-home-"))
    os.environ.setdefault("KENNING_CONFIG", os.path.join(os.environ["KENNING_HOME"], "c.toml"))
    for files in (int(n) for n in args.files.split(",")):
        bench(args.tree.with_name(f"{args.tree.name}-{files}"), files, args.runs)


if __name__ == "__main__":
    main()
