"""Search latency: warm in-process search (query embedding excluded; unfiltered, with a language
filter and with a path glob, each filter's p50 also as a ratio to the unfiltered p50 of the same
run) on synthetic indexes of growing size, and `kenning search` as a fresh process on an
unchanged repository.

The synthetic index replicates a real indexed corpus (its files, chunks and vectors, each copy's
vectors jittered) until it holds the requested number of chunks, so the FTS vocabulary, symbol
names and cosine distribution are those of real code.

    python benchmarks/search_speed.py warm --source /tmp/evalkit/corpora/requests-2.32.3 \\
        --sizes 100000,300000,1000000 [--keep /tmp/kenning-speed] [--baseline /tmp/head/python]
    python benchmarks/search_speed.py cli --repo /tmp/semble-bench/repos/tokio/tokio/src --runs 7 \\
        [--baseline /tmp/head/python]   # git archive <rev> python | tar -x -C /tmp/head
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

# each tree's own sources, whether or not the installed package points at them
THIS_TREE = Path(__file__).resolve().parent.parent / "python"
QUERIES = ["how are retries handled", "parse the headers of a response",
           "read proxy settings from environment variables", "Session.request",
           "encode the body of a form request", "check whether a certificate is valid",
           "follow redirects up to a limit", "cookies", "decode a chunked response stream",
           "get_auth_from_url"]


# Broad filters (nearly every row passes) are the costliest for the scan's row set.
FILTERS = {"--language": {"language": "python"}, "--path-filter": {"path_filter": "*/src/*.py"}}


class FixedQueries:
    """Stands in for the embedder: query vectors computed up front, so search time excludes
    the model."""

    def __init__(self, embedder: Any, queries: list[str]) -> None:
        self.model, self.dims = embedder.model, embedder.dims
        self.needs_centering = embedder.needs_centering
        self.max_tokens = embedder.max_tokens
        self._vectors = {q: embedder.embed_query(q) for q in queries}
        self._descriptor = embedder.descriptor()

    def descriptor(self) -> dict[str, object]:
        return self._descriptor

    def embed_query(self, text: str) -> np.ndarray:
        return self._vectors[text]

    def close(self) -> None:
        pass


def _source_rows(source: Path, settings: Any, embedder: Any) -> tuple[list[Any], list[Any],
                                                                        np.ndarray]:
    """The files, chunks (with content hashes) and float vectors of the source's index."""
    from kenning.indexing.indexer import refresh
    from kenning.records import Chunk
    from kenning.store import Index
    from kenning.store.writer import FileRow

    refresh(source, settings, embedder=embedder, wait=True)
    with Index.open(source, settings, embedder=embedder).snapshot() as snap:
        files = [FileRow(*r) for r in snap._conn.execute(
            "SELECT path, size, mtime_ns, digest, cluster, language FROM files")]
        rows = snap._conn.execute(
            "SELECT c.path, c.start_byte, c.end_byte, c.start_line, c.end_line, c.language, "
            "c.kind, c.symbol, c.signature, v.vector_id FROM chunks c JOIN vectors v "
            "ON v.content_hash = c.content_hash").fetchall()
        ids = np.asarray([r[9] for r in rows])
        floats = snap.int8[ids].astype(np.float32) * snap.scales[ids][:, None]
    chunks = []
    for r in rows:
        text = (source / r[0]).read_bytes()[r[1]:r[2]].decode("utf-8", "replace")
        chunks.append(Chunk(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], text))
    return files, chunks, floats


def _link_files(source: Path, target: Path, paths: list[str]) -> None:
    """The files at ``paths`` of ``source`` under ``target``, hard-linked (plain files, as a
    checkout has, that cost no space), or copied across file systems."""
    for path in paths:
        dest = target / path
        if dest.exists():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source / path, dest)
        except OSError:
            shutil.copy2(source / path, dest)


def build(target: Path, size: int, source: Path, settings: Any, embedder: Any) -> float:
    """Index ``size`` chunks under ``target``: copies of the source, each a folder of hard
    links to its files, with their cluster digests (so the index can be published)."""
    from dataclasses import replace

    from kenning import kernels
    from kenning.indexing.indexer import _cluster, _cluster_digests
    from kenning.store import Index

    files, chunks, floats = _source_rows(source, settings, embedder)
    started = time.perf_counter()
    target.mkdir(parents=True, exist_ok=True)
    index = Index.open(target, settings, embedder=embedder, create=True)
    rng = np.random.default_rng(0)
    copies = -(-size // len(chunks))
    with index.writer(wait=True) as writer:
        for copy in range(copies):
            prefix = f"copy{copy:04d}/"
            _link_files(source, target / prefix, [f.path for f in files])
            take = min(len(chunks), size - copy * len(chunks))
            part = [replace(c, path=prefix + c.path) for c in chunks[:take]]
            noisy = floats[:take] + rng.normal(0, 0.02, floats[:take].shape).astype(np.float32)
            noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
            hashes = kernels.hash_many([f"{copy}:{i}" for i in range(take)])
            part_files = [replace(f, path=prefix + f.path, cluster=_cluster(prefix + f.path))
                          for f in files]
            writer.commit_files(removed=[], replaced=part_files,
                                chunks=list(zip(part, hashes, strict=True)), touched=[],
                                clusters=_cluster_digests({f.path: f.digest
                                                           for f in part_files}),
                                removed_clusters=[],
                                snapshot={"generation": copy + 1, "timings": {}})
            writer.add_vectors(hashes, noisy, embedder.needs_centering)
    return time.perf_counter() - started


def measure(args: argparse.Namespace) -> None:
    """Warm searches over one built index in this process; prints their times as JSON."""
    from kenning import config, kernels
    from kenning.embedding import make_embedder
    from kenning.retrieval import ProjectRef
    from kenning.services.search import search

    settings = config.load()
    fixed = FixedQueries(make_embedder(settings), QUERIES)
    ref = [ProjectRef("speed", Path(args.target).resolve())]
    for q in QUERIES:  # warm the page cache and the SQLite statement cache
        search(q, ref, settings=settings, embedder=fixed, refresh=False)
    times: list[float] = []
    filtered: dict[str, list[float]] = {name: [] for name in FILTERS}
    hits, ranked = [], {}
    for _ in range(args.runs):
        for q in QUERIES:
            started = time.perf_counter()
            result = search(q, ref, settings=settings, embedder=fixed, refresh=False)
            times.append((time.perf_counter() - started) * 1000)
            hits.append(len(result["results"]))
            ranked[q] = [(r["path"], r["start_byte"], r["score"]) for r in result["results"]]
            for name, given in FILTERS.items():
                started = time.perf_counter()
                search(q, ref, settings=settings, embedder=fixed, refresh=False, **given)
                filtered[name].append((time.perf_counter() - started) * 1000)
    print(json.dumps({"times": times, "filtered": filtered, "hits": hits, "ranked": ranked,
                      "backend": kernels.BACKEND}))


def _tree_env(env: Mapping[str, str], tree: Path) -> dict[str, str]:
    """``env`` with ``tree`` (a ``python`` folder) first on the import path."""
    paths = [str(tree), *filter(None, [env.get("PYTHONPATH")])]
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}


def warm(args: argparse.Namespace) -> None:
    """Each size's index is built once, then searched in fresh processes, this tree's and (with
    ``--baseline``) another tree's taking turns, so the ratio compares them under the same
    machine load."""
    from kenning import config
    from kenning.embedding import make_embedder

    os.environ.setdefault("KENNING_HOME", "/tmp/kenning-eval-home")  # reuses the source index
    settings = config.load()
    embedder = make_embedder(settings)
    variants = {"this tree": _tree_env(os.environ, THIS_TREE)}
    if args.baseline:
        variants["baseline"] = _tree_env(os.environ, Path(args.baseline).resolve())
    names = list(FILTERS)
    print("| chunks | tree | build s | p50 ms | p90 ms | "
          + " | ".join(f"{n} p50 ms (x unfiltered)" for n in names) + " | results |")
    print("|---|---|---|---|---|" + "---|" * len(names) + "---|")
    for size in (int(s) for s in args.sizes.split(",")):
        if args.keep:  # built once, reused by later runs
            target = Path(args.keep) / f"chunks-{size}"
            reuse = target.exists()
        else:
            target, reuse = Path(tempfile.mkdtemp(prefix=f"kenning-speed-{size}-")), False
        build_s = 0.0 if reuse else build(target, size, Path(args.source).resolve(), settings,
                                          embedder)
        times: dict[str, list[float]] = {name: [] for name in variants}
        filtered: dict[str, dict[str, list[float]]] = {name: {n: [] for n in FILTERS}
                                                       for name in variants}
        hits: dict[str, list[int]] = {name: [] for name in variants}
        ranked: dict[str, dict[str, Any]] = {}
        backend: dict[str, str] = {}
        for _ in range(args.rounds):
            for name, env in variants.items():
                done = subprocess.run([sys.executable, __file__, "measure", "--target",
                                       str(target), "--runs", str(args.runs)], env=env,
                                      check=True, capture_output=True, text=True)
                got = json.loads(done.stdout.strip().splitlines()[-1])
                times[name] += got["times"]
                for n in FILTERS:
                    filtered[name][n] += got["filtered"][n]
                hits[name] += got["hits"]
                ranked[name] = got["ranked"]
                backend[name] = got["backend"]  # a tree without its built core runs NumPy's
        for name in variants:
            t = sorted(times[name])
            p50 = statistics.median(t)
            cells = " | ".join(f"{statistics.median(filtered[name][n]):.1f} "
                               f"({statistics.median(filtered[name][n]) / p50:.2f})"
                               for n in names)
            print(f"| {size} | {name} ({backend[name]} kernels) | {build_s:.0f} "
                  f"| {p50:.1f} | {t[int(0.9 * len(t))]:.1f} | {cells} "
                  f"| {statistics.mean(hits[name]):.1f} |",
                  flush=True)
        if args.baseline:
            ratio = statistics.median(times["baseline"]) / statistics.median(times["this tree"])
            blank = " |" * len(names)
            print(f"| {size} | baseline / this tree p50 | | {ratio:.2f} |{blank} |", flush=True)
            same = sum(ranked["this tree"][q] == ranked["baseline"][q] for q in QUERIES)
            print(f"| {size} | queries ranked the same (chunks, scores) | | {same} of "
                  f"{len(QUERIES)} |{blank} |", flush=True)
        if not args.keep:
            from kenning.store import Index

            shutil.rmtree(Index.open(target, settings, embedder=embedder).dir,
                          ignore_errors=True)
            shutil.rmtree(target, ignore_errors=True)


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def cli(args: argparse.Namespace) -> None:
    """`kenning search` and `kenning --help` as fresh processes; with ``--baseline`` (the
    ``python`` folder of another source tree, e.g. ``git archive HEAD~3 python``) the two trees
    run interleaved, so the ratio compares them under the same machine load."""
    repo = Path(args.repo).resolve()
    home = {**os.environ, "KENNING_HOME": args.home}
    env = _tree_env(home, THIS_TREE)
    variants = {"this tree": env}
    if args.baseline:
        variants["baseline"] = _tree_env(home, Path(args.baseline).resolve())
    kenning = [sys.executable, "-m", "kenning"]
    subprocess.run([*kenning, "index", str(repo), "-q"], env=env, check=True)
    search: dict[str, list[float]] = {name: [] for name in variants}
    helps: dict[str, list[float]] = {name: [] for name in variants}
    for i in range(args.runs + 1):
        for name, variant_env in variants.items():
            query = QUERIES[i % len(QUERIES)]
            took = _timed([*kenning, "search", query, str(repo), "--json-output"], variant_env)
            took_help = _timed([*kenning, "--help"], variant_env)
            if i:  # the first run warms the OS file cache (and makes any cache files)
                search[name].append(took)
                helps[name].append(took_help)
    print(f"fresh processes, unchanged repository {repo}, {args.runs} runs (seconds):")
    print("| tree | search p50 | min | max | --help p50 |")
    print("|---|---|---|---|---|")
    for name in variants:
        t = search[name]
        print(f"| {name} | {statistics.median(t):.3f} | {min(t):.3f} | {max(t):.3f} "
              f"| {statistics.median(helps[name]):.3f} |")
    if args.baseline:
        ratio = statistics.median(search["baseline"]) / statistics.median(search["this tree"])
        print(f"search: baseline / this tree = {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("warm")
    w.add_argument("--source", required=True, help="a small corpus to replicate")
    w.add_argument("--sizes", default="100000")
    w.add_argument("--runs", type=int, default=3, help="passes over the queries per process")
    w.add_argument("--rounds", type=int, default=3, help="processes per tree and size")
    w.add_argument("--keep", help="build the indexes under this folder once and reuse them")
    w.add_argument("--baseline", help="the python/ folder of another source tree to compare")
    w.set_defaults(run=warm)
    m = sub.add_parser("measure")
    m.add_argument("--target", required=True)
    m.add_argument("--runs", type=int, default=3)
    m.set_defaults(run=measure)
    c = sub.add_parser("cli")
    c.add_argument("--repo", required=True)
    c.add_argument("--runs", type=int, default=7)
    c.add_argument("--home", default="/tmp/kenning-eval-home")
    c.add_argument("--baseline", help="the python/ folder of another source tree to compare")
    c.set_defaults(run=cli)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
