"""The shared index as a vector cache, in one run: the first index of a published project with
its vectors from the engine, against local embedding; the share of vectors fetched, and their
agreement (bit for bit) with local embedding.

1. The project's index, built once in ``--publisher-home`` (``kenning index``), is published
   (``kenning publish``; incremental, so a second run sends nothing) to milvus-lite in
   ``--work`` (or ``--uri``).
2. A teammate's checkout (a copy at another root) is indexed for the first time in a fresh
   home with the shared index configured: ``kenning index`` end to end, in its own process
   (model load, walk, chunking, fetching and storing the vectors, embedding what is left).
3. Local embedding: the same checkout in another fresh home with ``shared.vectors = false``,
   whole (``--sample-chunks 0``) or, because it runs at tens of chunks/s on two busy cores, a
   sample of whole files holding about ``--sample-chunks`` chunks spread over the tree: its
   embedding rate gives the whole project's time (the checkout's own walk, chunk and commit
   time plus its vectors at that rate), stated as an extrapolation.
4. Agreement: the rows (sign bits, int8 row, scale) of the local run against the fetched ones,
   per embedding text (a sample's text whose first path differs from the whole checkout's is
   another embedding text, and is left out of the count). The fetched rows are the
   publisher's local embedding byte for byte; the local embedder's output depends slightly on
   the batch a text is embedded in, so a text embedded among other texts can differ by an
   int8 step: the rows that differ are counted with their sign bits and cosine.

    python benchmarks/shared_vectors.py --project /tmp/sharedcache-corpus \\
        --publisher-home /tmp/sharedcache-home/pub --work /tmp/sharedcache-bench \\
        [--sample-chunks 2000] [--uri http://host:19530]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def kenning(args: list[str], home: Path, uri: str | None, **extra: str) -> tuple[float, Any]:
    """``kenning ARGS --json-output`` in a process of its own: wall seconds and the last line."""
    env = {**os.environ, "KENNING_HOME": str(home), "KENNING_CONFIG": str(home / "config.toml"),
           **extra}
    env.pop("KENNING_SHARED_URI", None)
    if uri:
        env["KENNING_SHARED_URI"] = uri
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kenning", *args, "--json-output"], env=env,
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"kenning {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    lines = done.stdout.strip().splitlines()
    return seconds, json.loads(lines[-1])


def rows(home: Path, root: Path) -> dict[bytes, tuple[str, bytes]]:
    """content hash -> (the path its text was embedded under, its row's bytes: sign bits, int8
    row, scale) in the index of ``root`` in ``home``. A first index embeds a text under the
    first path that holds it, in path order."""
    from kenning import config
    from kenning.store import Index

    os.environ["KENNING_HOME"], os.environ["KENNING_CONFIG"] = str(home), str(home / "c.toml")
    with Index.open(root, config.load()).snapshot() as snap:
        ids = snap._conn.execute(
            "SELECT v.content_hash, v.vector_id, min(c.path) FROM vectors v JOIN chunks c "
            "ON c.content_hash = v.content_hash GROUP BY v.content_hash").fetchall()
        return {bytes(h): (path, snap.bits[v].tobytes() + snap.int8[v].tobytes()
                           + snap.scales[v:v + 1].tobytes()) for h, v, path in ids}


def closeness(a: bytes, b: bytes) -> tuple[int, float]:
    """Sign bits that differ, and the cosine of the dequantized int8 rows, of two rows."""
    import numpy as np

    dims = (len(a) - 4) * 8 // 9  # dims/8 bits + dims int8 + 4
    width = (dims + 7) // 8
    bits = int(np.unpackbits(np.frombuffer(a[:width], np.uint8)
                             ^ np.frombuffer(b[:width], np.uint8)).sum())
    x, y = (np.frombuffer(r[width:width + dims], np.int8).astype(np.float64) for r in (a, b))
    return bits, float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def sample_files(home: Path, target: int) -> list[str]:
    """Whole files holding about ``target`` chunks, spread evenly over the path order."""
    (db,) = home.glob("indices/*/*/index.db")
    counts = sqlite3.connect(db).execute(
        "SELECT path, count(*) FROM chunks GROUP BY path ORDER BY path").fetchall()
    total = sum(c for _, c in counts)
    step = max(1, round(total / max(1, target)))
    chosen, taken = [], 0
    for i, (path, count) in enumerate(counts):
        if i % step == 0 or (taken < target and i == len(counts) - 1):
            chosen.append(path)
            taken += count
    return chosen


def fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--publisher-home", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--uri")
    parser.add_argument("--sample-chunks", type=int, default=2000,
                        help="chunks of the local embedding sample (0: the whole project)")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    uri = args.uri or str(args.work / "shared.db")

    publish_s, published = kenning(["publish", str(args.project)], args.publisher_home, uri)
    print(f"publish: {publish_s:.1f}s, {published['chunks_sent']} chunks sent, "
          f"{published['vectors_stored']} vectors stored by content", flush=True)

    checkout = args.work / "teammate" / args.project.name
    fresh(checkout.parent)
    shutil.copytree(args.project, checkout)
    shared_home = fresh(args.work / "home-shared")
    shared_s, shared = kenning(["index", str(checkout)], shared_home, uri)
    vectors = shared["vectors_fetched"] + shared["vectors_embedded"]
    print(f"first index with the shared index: {shared_s:.1f}s end to end, "
          f"{shared['chunks']} chunks, {vectors} vectors: {shared['vectors_fetched']} fetched "
          f"({shared['vectors_fetched'] / max(1, vectors):.1%}), "
          f"{shared['vectors_embedded']} embedded; warnings {shared['warnings']}", flush=True)

    local_root = checkout
    if args.sample_chunks:
        local_root = fresh(args.work / "sample" / args.project.name)
        for path in sample_files(shared_home, args.sample_chunks):
            (local_root / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(checkout / path, local_root / path)
        subprocess.run(["git", "init", "-q", str(local_root)], check=True)
    local_home = fresh(args.work / "home-local")
    local_s, local = kenning(["index", str(local_root)], local_home, None,
                             KENNING_SHARED_VECTORS="false")
    rate = local["vectors_embedded"] / local["timings"]["embed"]
    if args.sample_chunks:
        # the checkout's own work without its fetch, and its vectors at the sample's rate
        overhead = shared["timings"]["total"] - shared["timings"].get("fetch", 0.0)
        local_full = (shared_s - shared["timings"]["total"]) + overhead + vectors / rate
        how = (f"extrapolated from a sample of {local['chunks']} chunks "
               f"({local['vectors_embedded']} vectors embedded in {local_s:.1f}s end to end, "
               f"{rate:.1f} vectors/s)")
    else:
        local_full, how = local_s, "measured"
    print(f"local first index: {local_full:.1f}s ({how})", flush=True)

    fetched, embedded_here = rows(shared_home, checkout), rows(local_home, local_root)
    compared = {h: row for h, (path, row) in embedded_here.items()
                if h in fetched and fetched[h][0] == path}
    same = sum(fetched[h][1] == row for h, row in compared.items())
    differ = [closeness(fetched[h][1], row) for h, row in compared.items()
              if fetched[h][1] != row]
    print(f"agreement: {same} of {len(compared)} locally embedded vectors are bit-identical "
          f"to the fetched ones ({len(embedded_here) - len(compared)} of the sample's texts "
          f"are embedded under another path there); the {len(differ)} others differ in at most "
          f"{max((d[0] for d in differ), default=0)} sign bits, cosine at least "
          f"{min((d[1] for d in differ), default=1.0):.6f}", flush=True)
    print(json.dumps({"type": "shared_vectors", "chunks": shared["chunks"], "vectors": vectors,
                      "fetched": shared["vectors_fetched"], "shared_s": round(shared_s, 2),
                      "local_s": round(local_full, 2), "local": how,
                      "speedup": round(local_full / shared_s, 1), "identical": same,
                      "compared": len(compared), "publish_s": round(publish_s, 2),
                      "differing_bits_max": max((d[0] for d in differ), default=0),
                      "differing_cosine_min": min((d[1] for d in differ), default=1.0)}))


if __name__ == "__main__":
    main()
