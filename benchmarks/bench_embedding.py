"""Local embedder throughput and latency: ``python benchmarks/bench_embedding.py``.

Chunks are 25-line windows of the machine's own CPython standard library, cut to the local
model's chunk budget (as the chunker would). Prints chunks/s per batch size (median of repeats):
kenning's one text a run against batches of similar lengths padded into one run, and the
query latency, the cost of the model checksum (hash vs remembered stamp) and the first load.
It asserts the vectors agree across batch sizes, never a time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from kenning import config
from kenning.embedding import document_text, local, make_embedder


def corpus(limit: int) -> list[str]:
    budget = local.MAX_SEQUENCE - 2 - 32
    tok = local.tokenizer()
    texts: list[str] = []
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(stdlib.glob("*.py")):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for start in range(0, len(lines), 25):
            text = "\n".join(lines[start : start + 25])
            if not text.strip():
                continue
            ids = tok.encode(text, add_special_tokens=False)
            if len(ids.ids) > budget:  # cut at the budget, as a chunker split would
                text = text[: ids.offsets[budget - 1][1]]
            texts.append(document_text(path.name, text))
            if len(texts) == limit:
                return texts
    return texts


def timed_cpu(fn, repeats: int) -> tuple[float, float]:
    """Median wall and process-CPU seconds; CPU time says more on a machine shared with others."""
    walls, cpus = [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def batches(ids: Sequence[Sequence[int]], batch_tokens: int) -> list[list[int]]:
    """Row indexes grouped by similar length, each group at most ``batch_tokens`` padded
    tokens (one row at least): how kenning batched texts before it ran each alone."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    groups: list[list[int]] = []
    for i in order:  # ascending length: the newest row is the widest of its group
        if groups and (len(groups[-1]) + 1) * len(ids[i]) <= batch_tokens:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def batched(run: Callable[[dict[str, np.ndarray]], np.ndarray], ids: Sequence[Sequence[int]],
            groups: list[list[int]]) -> np.ndarray:
    """Vectors pooled as ``local.encode`` pools them, the texts of each group padded into one
    run of ``run`` (feeds to hidden states), one run at a time."""
    out = np.zeros((len(ids), local.DIMS), np.float32)
    for rows in groups:
        width = max(len(ids[i]) for i in rows)
        input_ids = np.zeros((len(rows), width), np.int64)
        mask = np.zeros_like(input_ids)
        for r, i in enumerate(rows):
            input_ids[r, : len(ids[i])], mask[r, : len(ids[i])] = ids[i], 1
        hidden = run({"input_ids": input_ids, "attention_mask": mask,
                      "token_type_ids": np.zeros_like(input_ids)})
        weights = mask[:, :, None].astype(np.float32)
        out[rows] = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def fixed_batches(ids: list[list[int]], size: int) -> list[list[int]]:
    """``size`` texts a run (sorted by length), the usual alternative to a token budget."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    return [order[start : start + size] for start in range(0, len(order), size)]


def graph_level_session(level: str) -> object:
    """A session over the shipped file at another graph optimisation level, one thread a run
    (kenning's session keeps the level it saved and applies "all" on load)."""
    import onnxruntime as ort

    levels = {"basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
              "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
              "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL}
    return ort.InferenceSession(str(local.model_path()),
                                local._options(1, False, levels[level], None),
                                providers=["CPUExecutionProvider"])


def options_ab(texts: list[str], repeats: int) -> None:
    """onnxruntime's session options on the same chunks, interleaved: threads per run and idle
    spinning (which never change a vector), and graph optimisation levels (which may)."""
    ids = local.token_ids(texts)
    built = [("sleeping", local.build_session(2, spinning=False)),
             ("spinning", local.build_session(2, spinning=True)),
             ("", local.build_session(1))]  # kenning's: one thread a run, a run on every core
    sessions = {}
    for idle, onnx_session in built:
        threads = onnx_session.get_session_options().intra_op_num_threads
        runs = local.runs_at_once(onnx_session)
        name = f"{threads} thread{'s' * (threads > 1)} x {runs} run{'s' * (runs > 1)} {idle}"
        sessions[name.rstrip()] = onnx_session
    reference = local.encode(ids, onnx_session=built[-1][1])
    for onnx_session in sessions.values():  # threads change the speed, never the vectors
        np.testing.assert_array_equal(local.encode(ids, onnx_session=onnx_session), reference)
    for level in ("extended", "basic", "none"):
        sessions[f"graph level {level}"] = graph_level_session(level)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in sessions}
    cosines, same = {}, {}
    for _ in range(repeats):  # interleaved, so a change in machine load hits every variant
        for name, onnx_session in sessions.items():
            runs[name].append(timed_cpu(lambda s=onnx_session: local.encode(ids, onnx_session=s),
                                        1))
    for name, onnx_session in sessions.items():
        vectors = local.encode(ids, onnx_session=onnx_session)
        cosines[name] = float((vectors * reference).sum(axis=1).min())
        same[name] = int((vectors == reference).all(axis=1).sum())
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, {len(texts)} chunks")
    for name, results in runs.items():
        wall = statistics.median(r[0] for r in results)
        cpu = statistics.median(r[1] for r in results)
        print(f"{name:>26}: {len(texts) / wall:6.1f} chunks/s wall, "
              f"{cpu / len(texts) * 1000:5.1f} CPU-ms per chunk, min cosine to kenning's "
              f"{cosines[name]:.4f}, {same[name]}/{len(ids)} the same bits")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batches", default="1,4,8,16,32", help="fixed batch sizes to compare")
    parser.add_argument("--tokens", default="128,256,512,1024",
                        help="padded-token budgets per run to compare")
    parser.add_argument("--spin-ab", action="store_true",
                        help="compare onnxruntime session options (threads per run, idle "
                             "spinning, graph optimisation level; interleaved runs) and exit")
    args = parser.parse_args()
    if args.spin_ab:
        options_ab(corpus(args.chunks), args.repeats)
        return

    with tempfile.TemporaryDirectory() as home:
        os.environ["KENNING_HOME"] = home
        path = local.model_path()
        start = time.perf_counter()
        local.verify_model(path)  # no stamp yet: hashes 23 MB
        hashed = time.perf_counter() - start
        stamped = timed_cpu(lambda: local.verify_model(path), 20)[0]
        print(f"model check: sha256 {hashed * 1000:.1f} ms, remembered stamp "
              f"{stamped * 1000:.3f} ms")
        start = time.perf_counter()
        local.session()
        print(f"first load (tokenizer + ONNX session): {(time.perf_counter() - start) * 1000:.0f}"
              " ms")

    texts = corpus(args.chunks)
    lengths = [len(ids) for ids in local.token_ids(texts)]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{len(texts)} chunks, {statistics.mean(lengths):.0f} word pieces on average, "
          f"runtime {local.runtime_name(local.session())}")
    embedder = make_embedder(config.load())
    baseline = embedder.embed_documents(texts)
    ids = local.token_ids(texts)
    runtime = local.session()

    def run(feeds: dict[str, np.ndarray]) -> np.ndarray:
        return runtime.run(["last_hidden_state"], feeds)[0]

    variants = {"one text a run (kenning)": lambda: local.encode(ids)}
    variants.update({f"fixed batch {size}": lambda size=size: batched(run, ids,
                                                                      fixed_batches(ids, size))
                     for size in [int(b) for b in args.batches.split(",")]})
    variants.update({f"{tokens} tokens/run": lambda tokens=tokens: batched(run, ids,
                                                                          batches(ids, tokens))
                     for tokens in [int(t) for t in args.tokens.split(",")]})
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for _ in range(args.repeats):  # interleaved, so a change in machine load hits every variant
        for name, fn in variants.items():
            runs[name].append(timed_cpu(fn, 1))
    for name, fn in variants.items():
        vectors = fn()
        cosine = float((vectors * baseline).sum(axis=1).min())
        assert cosine > 0.999, f"{name}: a vector far off its own text's alone ({cosine:.4f})"
        same = int((vectors == baseline).all(axis=1).sum())
        wall = statistics.median(r[0] for r in runs[name])
        cpu = statistics.median(r[1] for r in runs[name])
        print(f"{name:>24}: {len(texts) / wall:6.1f} chunks/s wall, "
              f"{cpu / len(texts) * 1000:5.1f} CPU-ms per chunk, {same}/{len(texts)} vectors "
              f"the same bits as one text a run (min cosine {cosine:.6f})")
    queries = ["how are retries handled", "parse command line arguments",
               "where is the config file read", "compute a sha256 digest"]
    latencies = []
    for _ in range(args.repeats * 10):
        for query in queries:
            start = time.perf_counter()
            embedder.embed_query(query)
            latencies.append(time.perf_counter() - start)
    print(f"query latency: median {statistics.median(latencies) * 1000:.2f} ms, "
          f"p90 {np.percentile(latencies, 90) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
