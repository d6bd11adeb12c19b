"""How soon a first index serves implementation code: time until 90% of the implementation
chunks have vectors, with missing vectors embedded in path order (as before) and in
``indexer.embedding_order`` over files in ``priority.file_priority`` order (implementation
first, recent files first).

The corpus is this repository's tracked files plus a few packages of this machine's CPython
standard library with their tests (``--stdlib``; the default makes ~5k chunks), indexed from
scratch in a fresh KENNING_HOME with the default local model; files and chunks are committed
first (not timed), then the embedding is timed until the share is reached. An implementation
chunk is one that ranking puts in no demoted category (test, example, docs, generated,
vendored, compat, changelog). Both orders run on the same corpus in turn; the vector counts do
not depend on the machine's load, the seconds do.

    python benchmarks/first_vectors.py [--stdlib email test/test_email] [--share 0.9]

Measured on 2 busy cores (5,598 vectors, 2,521 of implementation): path order reached 90% after
4,480 vectors and 779 s, embedding_order after 2,304 vectors and 418 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


class Reached(Exception):
    """Raised from the progress callback once the share is reached: the rest is not timed."""


def make_corpus(target: Path, stdlib: Sequence[str]) -> Path:
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.splitlines()
    for name in files:
        if (REPO / name).is_file():
            dest = target / "kenning" / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest)  # mtimes kept: "recent first" has real data
    lib = Path(sysconfig.get_paths()["stdlib"])
    for package in stdlib:
        shutil.copytree(lib / package, target / "cpython" / "Lib" / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return target


def path_order(missing: Sequence[Any], files: Any) -> list[Any]:
    return list(missing)  # writer.missing_vectors() order: by path, then offset


def path_priority(path: str, language: str | None, mtime_ns: int) -> tuple[float, int, str]:
    return 0.0, 0, path  # files in path order


def run(root: Path, order: Callable[..., list[Any]], share: float,
        priority: Callable[..., Any]) -> dict[str, Any]:
    from kenning import config
    from kenning.embedding import make_embedder
    from kenning.indexing import indexer
    from kenning.retrieval.ranking import categories
    from kenning.store import Index

    os.environ["KENNING_HOME"] = tempfile.mkdtemp(prefix="kenning-first-vectors-")
    settings = config.load()
    embedder = make_embedder(settings)
    embedder.embed_documents(["warm up"])  # the model loads outside the timing
    indexer.refresh(root, settings, embedder=embedder, embed=False)
    with Index.open(root, settings, embedder=embedder).snapshot() as snap:
        rows = snap._conn.execute("SELECT content_hash, path, language FROM chunks").fetchall()
    implementation = {h for h, path, language in rows if not categories(path, language)}
    todo: list[bytes] = []

    def recorded(missing: Sequence[Any], files: Any) -> list[Any]:
        ordered = order(missing, files)
        todo.extend(m.content_hash for m in ordered)
        return ordered

    goal = share * len(implementation)
    started = time.perf_counter()

    def progress(event: dict[str, Any]) -> None:
        if event["type"] == "embedding" and event["done"]:
            done = sum(1 for h in todo[:event["done"]] if h in implementation)
            if done >= goal:
                raise Reached(event["done"])

    indexer.embedding_order = recorded  # type: ignore[assignment]
    indexer.file_priority = priority  # type: ignore[assignment]
    try:
        indexer.refresh(root, settings, embedder=embedder, progress=progress)
        embedded = len(todo)
    except Reached as reached:
        embedded = int(reached.args[0])
    finally:
        seconds = time.perf_counter() - started
        embedder.close()
    return {"vectors": len(set(todo)), "implementation": len(implementation),
            "embedded": embedded, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stdlib", nargs="+",
                        default=["email", "test/test_email"])
    parser.add_argument("--share", type=float, default=0.9)
    args = parser.parse_args()
    from kenning.indexing import indexer

    with tempfile.TemporaryDirectory(prefix="kenning-first-vectors-corpus-") as tmp:
        root = make_corpus(Path(tmp), args.stdlib)
        after = indexer.embedding_order, indexer.file_priority
        print(f"{'order':<16} {'vectors':>8} {'impl.':>6} {'embedded until':>15} {'seconds':>8}")
        for name, (order, priority) in (("path (before)", (path_order, path_priority)),
                                        ("priority (after)", after)):
            r = run(root, order, args.share, priority)
            print(f"{name:<16} {r['vectors']:>8} {r['implementation']:>6} "
                  f"{r['embedded']:>15} {r['seconds']:>8.1f}", flush=True)
        print(f"'embedded until': vectors embedded when {args.share:.0%} of the implementation "
              "chunks had theirs.")


if __name__ == "__main__":
    main()
