"""kenning at the size of a large repository: a first search, the background first index, its
memory, and an index of that size, on a tree built from real source.

    python benchmarks/scale.py --files 20000 [--tree /tmp/kenning-scale] [--embed-seconds 60]
    python benchmarks/scale.py --files 100000
    python benchmarks/scale.py --files 20000 --chunking-only   # MB/s per core, serial and workers
    python benchmarks/scale.py --files 20000 --first-answer-only   # the first search alone
    python benchmarks/scale.py --files 100000 --first-answer-only --watch-seconds 180
    python benchmarks/scale.py --files 100000 --largest-kb 4   # 100,000 small files, to the end

The tree (``<tree>-<files>``, built once, a git repository) is real source copied into the
layout of a project that vendors its dependencies, as grafana/loki does: its own code under
``src/`` (this interpreter's standard library), ``tests/`` (the standard library's tests), and
80% vendored under ``vendor/`` (the site-packages of kenning's virtual environment, with a
``vendor/modules.txt``), ``third_party/include/`` (``/usr/include``) and
``third_party/rust/`` (the cargo registry). A group with fewer files than its share is copied
again under ``copy<k>/`` folders; copies repeat contents, so their chunks share vectors. Own
code is dated today, the rest years ago, as a checkout with recent work is.

Measured, in one run:

- chunking MB/s per core, on a sample of the tree: this process alone (the serial reference)
  and the worker processes (``indexing.chunk_pool``), per CPU second of every process involved
  (the workers' start and this process's reading of their answers included), and MB/s of wall
  time on every usable core;
- time to first answer: `kenning search` in the never-indexed tree, a fresh process, and the
  warning that says how much is still to come;
- the peak RSS of that search process;
- the background `kenning index` that search starts: when every file is chunked, the peak
  RSS of the indexer and of the indexer with its workers, and its embedding rate over
  ``--embed-seconds`` of embedding; then it is stopped (or after ``--watch-seconds``, with
  ``--first-answer-only`` at once or then: its RSS while chunking);
- time until the project's own code has vectors: estimated from that rate (the own code's
  chunks without a vector, divided by it, after chunking ends), unless it finished;
- index size on disk, a no-op refresh against `git status --porcelain` (medians), and search
  p50 over the index as it stands (every chunk searchable by words and symbols, the vectors
  computed so far).

Timings on a shared machine are noisy: ratios within the run mean more than the absolute
figures, and CPU seconds more than wall seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MAX_BYTES = 1 << 20  # kenning's default size limit: larger files would be skipped anyway
OLD = time.time() - 3 * 365 * 86400
QUERIES = ["parse a configuration file", "retry a failed network request", "thread pool worker",
           "read a compressed archive", "format a date as a string", "hash table lookup",
           "open a socket and listen", "escape html entities", "lock free queue",
           "serialize to json"]


def _sources(top: Path, suffixes: tuple[str, ...], skip: tuple[str, ...] = (),
             largest: int = MAX_BYTES) -> list[Path]:
    if not top.is_dir():
        return []
    found = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.suffix in suffixes and not path.is_symlink():
                try:
                    size = path.stat().st_size
                except OSError:
                    continue
                if 0 < size <= largest:
                    found.append(path)
    return found


def _groups(largest: int) -> list[tuple[str, float, Path, list[Path]]]:
    """(folder in the tree, share of the files, source top, source files of at most
    ``largest`` bytes) per group."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    # the site-packages that holds kenning's dependencies
    packages = Path(importlib.util.find_spec("numpy").origin or "").parents[1]  # type: ignore[union-attr]
    cargo = Path.home() / ".cargo" / "registry" / "src"
    skip = ("site-packages", "test", "tests", "__pycache__", "idlelib", "turtledemo")
    return [
        ("src", 0.15, stdlib, _sources(stdlib, (".py",), skip, largest)),
        ("tests", 0.05, stdlib / "test",
         _sources(stdlib / "test", (".py",), ("__pycache__",), largest)),
        ("vendor", 0.45, packages, _sources(packages, (".py", ".pyi", ".c", ".h", ".hpp"),
                                            ("__pycache__",), largest)),
        ("third_party/include", 0.25, Path("/usr/include"),
         _sources(Path("/usr/include"), (".h", ".hpp"), (), largest)),
        ("third_party/rust", 0.10, cargo, _sources(cargo, (".rs",), (), largest)),
    ]


def build(tree: Path, files: int, largest: int = MAX_BYTES) -> None:
    """The tree of ``files`` files of at most ``largest`` bytes, made once (a ``.built`` marker
    says it is complete)."""
    if (tree / ".built").exists():
        return
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    now = time.time()
    for folder, share, top, sources in _groups(largest):
        if not sources:
            raise SystemExit(f"no source files under {top}")
        want = round(files * share)
        for k in range(want):
            source = sources[k % len(sources)]
            copy = k // len(sources)
            rel = source.relative_to(top)
            target = tree / folder / (f"copy{copy}" if copy else "") / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            stamp = now - k if folder == "src" else OLD
            os.utime(target, (stamp, stamp))
    (tree / "vendor" / "modules.txt").write_text("# vendored dependencies\n")
    git = ["git", "-C", str(tree), "-c", "user.email=b@example.com", "-c", "user.name=b"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "tree"], check=True)
    (tree / ".built").write_text("")
    with open(tree / ".git" / "info" / "exclude", "a") as fh:
        fh.write(".built\n")


def chunking_rates(tree: Path, sample_bytes: int) -> dict[str, float]:
    """MB/s per CPU second, serial and in workers, and wall MB/s with the workers, on the first
    ``sample_bytes`` of the tree, taken evenly from it."""
    from kenning import config
    from kenning.embedding import make_embedder
    from kenning.embedding.local import _usable_cores
    from kenning.indexing.chunk_pool import ChunkStream, chunker_for
    from kenning.indexing.priority import file_priority
    from kenning.indexing.sources import walk

    files = sorted(walk(tree, max_file_size=MAX_BYTES),
                   key=lambda f: file_priority(f.path, f.language, f.mtime_ns))
    average = sum(f.size for f in files) / max(1, len(files))
    step = max(1, round(len(files) * average / sample_bytes))  # spread over every group
    sample = files[::step]
    size = sum(f.size for f in sample)
    chunker = chunker_for(make_embedder(config.load()), tree, MAX_BYTES)
    chunker.count_tokens("")  # the tokenizer loaded before the clock starts
    cpu = time.process_time()
    with ChunkStream(chunker, sample, 0) as stream:
        serial = list(stream)
    serial_cpu = time.process_time() - cpu
    cores = _usable_cores()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, cpu = time.perf_counter(), time.process_time()
    with ChunkStream(chunker, sample, cores) as stream:
        pooled = list(stream)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert pooled == serial, "the workers' chunks differ from the reference's"
    # the workers' CPU (their start included) and this process's, which unpickles the answers
    workers_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) + cpu
    mb = size / 1e6
    return {"sample_files": len(sample), "sample_mb": round(mb, 1), "cores": cores,
            "serial_mb_s_per_core": round(mb / serial_cpu, 2),
            "workers_mb_s_per_core": round(mb / workers_cpu, 2),
            "workers_mb_s_wall": round(mb / wall, 2)}


def _index_dir(home: Path) -> Path | None:
    found = sorted((home / "indices").glob("*/*/index.db"))
    return found[0].parent if found else None


def _rss_kb(pid: int, field: str = "VmRSS") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> Iterator[int]:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if int(text[text.rfind(")") + 2:].split()[1]) == pid:
            yield int(stat.parent.name)


def first_index(tree: Path, home: Path, env: dict[str, str], embed_seconds: float,
                watch_seconds: float | None = None) -> dict[str, Any]:
    """The first search, then the background index it starts, watched until it has embedded
    for ``embed_seconds``, or for ``watch_seconds`` in all, then stopped."""
    started = time.perf_counter()
    search = subprocess.Popen([sys.executable, "-m", "kenning", "search", QUERIES[0], str(tree),
                               "--json-output"], stdout=subprocess.PIPE, env=env, text=True)
    assert search.stdout is not None
    answer = json.loads(search.stdout.read())
    _, status, usage = os.wait4(search.pid, 0)
    first = time.perf_counter() - started
    assert status == 0, status
    out: dict[str, Any] = {"first_answer_s": round(first, 1),
                           "first_search_peak_rss_mb": round(usage.ru_maxrss / 1024),
                           "first_results": len(answer["results"]),
                           "first_warnings": answer["warnings"]}
    print(json.dumps({"first_search": out}), flush=True)
    index_dir = _index_dir(home)
    assert index_dir is not None
    pid = None
    deadline = time.monotonic() + 60
    while pid is None and time.monotonic() < deadline:
        try:
            pid = json.loads((index_dir / "indexer.json").read_text())["pid"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.2)
    assert pid is not None, "no background index started"
    peak_tree = 0
    chunked_at = embedding_from = None
    state: dict[str, Any] = {}
    peak = 0
    while _rss_kb(pid):
        tree_rss = _rss_kb(pid) + sum(_rss_kb(c) for c in _children(pid))
        peak_tree = max(peak_tree, tree_rss)
        peak = max(peak, _rss_kb(pid, "VmHWM"))
        with contextlib.suppress(OSError, ValueError):
            state = json.loads((index_dir / "indexer.json").read_text())
        if state.get("phase") == "embedding":
            if chunked_at is None:
                chunked_at = time.perf_counter() - started
                embedding_from = (time.perf_counter(), int(state.get("done", 0)))
            elif time.perf_counter() - embedding_from[0] >= embed_seconds:
                break
        if watch_seconds is not None and time.perf_counter() - started >= watch_seconds:
            out["stopped_in"] = {k: state.get(k) for k in ("phase", "done", "total")}
            break
        time.sleep(0.5)
    embedded = int(state.get("done", 0))
    elapsed = time.perf_counter() - embedding_from[0] if embedding_from else 0.0
    rate = (embedded - embedding_from[1]) / elapsed if embedding_from and elapsed else None
    _stop(pid)
    out.update({"all_chunked_s": round(chunked_at, 1) if chunked_at else None,
                "indexer_peak_rss_mb": round(peak / 1024), "indexer_and_workers_peak_rss_mb":
                round(peak_tree / 1024), "embed_rate_chunks_s": round(rate, 1) if rate else None})
    return out


def _stop(pid: int) -> None:
    """Stop the background index this run's search started."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    while _rss_kb(pid):
        time.sleep(0.2)


def index_figures(tree: Path, home: Path, runs: int) -> dict[str, Any]:
    """Size on disk, own code's vectors, a no-op refresh against `git status`, search p50."""
    import sqlite3

    from kenning import config
    from kenning.indexing.indexer import refresh
    from kenning.retrieval import ProjectRef
    from kenning.services.search import search

    index_dir = _index_dir(home)
    assert index_dir is not None
    size = sum(p.stat().st_size for p in index_dir.rglob("*") if p.is_file())
    with sqlite3.connect(index_dir / "index.db") as conn:
        chunks, files = (conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                         for t in ("chunks", "files"))
        own_missing = conn.execute(
            "SELECT count(DISTINCT c.content_hash) FROM chunks c LEFT JOIN vectors v "
            "ON v.content_hash = c.content_hash WHERE v.vector_id IS NULL "
            "AND c.path LIKE 'src/%'").fetchone()[0]
        missing = conn.execute(
            "SELECT count(DISTINCT c.content_hash) FROM chunks c LEFT JOIN vectors v "
            "ON v.content_hash = c.content_hash WHERE v.vector_id IS NULL").fetchone()[0]
        vectors = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
    settings = config.load()
    noop, git = [], []
    for _ in range(runs):
        t = time.perf_counter()
        result = refresh(tree, settings, embed=False)
        noop.append(time.perf_counter() - t)
        assert result.nothing_changed, result.to_dict()
        t = time.perf_counter()
        subprocess.run(["git", "-C", str(tree), "status", "--porcelain"], check=True,
                       capture_output=True)
        git.append(time.perf_counter() - t)
    ref = [ProjectRef("scale", tree)]
    search(QUERIES[0], ref, settings=settings, refresh=False)  # the model loaded
    times = []
    for _ in range(3):
        for query in QUERIES:
            t = time.perf_counter()
            search(query, ref, settings=settings, refresh=False)
            times.append(time.perf_counter() - t)
    return {"files": files, "chunks": chunks, "vectors": vectors,
            "distinct_chunks_without_vector": missing,
            "own_code_chunks_without_vector": own_missing,
            "index_mb": round(size / 1e6), "noop_refresh_ms": round(1000 * statistics.median(noop)),
            "git_status_ms": round(1000 * statistics.median(git)),
            "search_p50_ms": round(1000 * statistics.median(times))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--tree", type=Path, default=Path("/tmp/kenning-scale"))
    parser.add_argument("--embed-seconds", type=float, default=60.0)
    parser.add_argument("--sample-mb", type=float, default=4.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chunking-only", action="store_true")
    parser.add_argument("--first-answer-only", action="store_true")
    parser.add_argument("--watch-seconds", type=float, default=None,
                        help="stop watching the background index after this long")
    parser.add_argument("--largest-kb", type=int, default=None,
                        help="only source files up to this size: the file count's cost (the "
                        "walk, the per-file records, memory) without a day of chunking")
    args = parser.parse_args()
    largest = MAX_BYTES if args.largest_kb is None else args.largest_kb << 10
    tree = Path(f"{args.tree}-{args.files}"
                + ("" if args.largest_kb is None else f"-{args.largest_kb}k"))
    t = time.perf_counter()
    build(tree, args.files, largest)
    total = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file() and ".git" not in p.parts)
    print(json.dumps({"tree": str(tree), "build_s": round(time.perf_counter() - t, 1),
                      "source_mb": round(total / 1e6)}), flush=True)
    home = Path(tempfile.mkdtemp(prefix="kenning-scale-home-"))
    env = {**os.environ, "KENNING_HOME": str(home / "data"),
           "KENNING_CONFIG": str(home / "config.toml")}
    os.environ.update(env)
    try:
        if not args.first_answer_only:
            print(json.dumps({"chunking": chunking_rates(tree, int(args.sample_mb * 1e6))}),
                  flush=True)
        if args.first_answer_only:
            print(json.dumps({"first_index": first_index(tree, home / "data", env, 0,
                                                         args.watch_seconds or 0)}), flush=True)
        elif not args.chunking_only:
            measure(tree, home / "data", env, args)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def measure(tree: Path, home: Path, env: dict[str, str], args: argparse.Namespace) -> None:
    figures = first_index(tree, home, env, args.embed_seconds, args.watch_seconds)
    print(json.dumps({"first_index": figures}), flush=True)
    if "stopped_in" in figures:
        return  # not every file is chunked: the index is not yet the tree's
    index = index_figures(tree, home, args.runs)
    rate = figures["embed_rate_chunks_s"]
    if rate and figures["all_chunked_s"]:
        index["own_code_vectors_s_estimated"] = round(
            figures["all_chunked_s"] + index["own_code_chunks_without_vector"] / rate)
        index["all_vectors_h_estimated"] = round(
            index["distinct_chunks_without_vector"] / rate / 3600, 1)
    print(json.dumps({"index": index}), flush=True)

if __name__ == "__main__":
    main()
