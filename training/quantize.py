"""Quantise an fp32 ONNX export of a MiniLM-shaped encoder into the format kenning ships.

    python training/quantize.py IN.onnx OUT_DIR

writes OUT_DIR/model.onnx and prints its sha256 and size. The weights are stored as int8 with
one float32 scale per output channel (symmetric, zero point 0): every 2-D weight a MatMul reads
(scale per column) and every embedding table a Gather reads (scale per row). Each is turned
back into float32 by a Cast and a Mul at the head of the graph, so the file is a quarter of
the fp32 size and every runtime reads it with standard operators: onnxruntime folds the
weights back to float32 when it loads the session, and OpenVINO keeps them compressed and
runs int8 matrix products, quantising activations per row as it goes (kenning's fast path).
No activation scale is stored: onnxruntime's static or dynamic int8 files moved the vectors
too far from the fp32 model's (benchmarks/embed_runtimes.py --full checks both).

Needs only ``onnx`` and ``numpy`` (the training tools), never kenning's runtime.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SMALLEST = 4096  # weights below this many values (biases, norms) stay float32


def weights_to_quantise(model: onnx.ModelProto) -> dict[str, int]:
    """Initializer name -> the axis its scales run along (1: per column, 0: per row)."""
    floats = {t.name for t in model.graph.initializer
              if t.data_type == TensorProto.FLOAT and len(t.dims) == 2
              and t.dims[0] * t.dims[1] >= SMALLEST}
    chosen: dict[str, int] = {}
    for node in model.graph.node:
        if node.op_type == "MatMul" and len(node.input) == 2 and node.input[1] in floats:
            chosen[node.input[1]] = 1  # y = x @ W: one scale per output column
        elif node.op_type == "Gather" and node.input[0] in floats:
            chosen[node.input[0]] = 0  # an embedding table: one scale per looked-up row
    return chosen


def quantise(model: onnx.ModelProto) -> onnx.ModelProto:
    chosen = weights_to_quantise(model)
    if not chosen:
        raise SystemExit("No float32 MatMul weight or embedding table found: is this the fp32 "
                         "export of an encoder?")
    kept, added, decoders = [], [], []
    for tensor in model.graph.initializer:
        axis = chosen.get(tensor.name)
        if axis is None:
            kept.append(tensor)
            continue
        weight = numpy_helper.to_array(tensor).astype(np.float32)
        peak = np.abs(weight).max(axis=1 - axis, keepdims=True)
        scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
        codes = np.clip(np.rint(weight / scale), -127, 127).astype(np.int8)
        added += [numpy_helper.from_array(codes, f"{tensor.name}_q"),
                  numpy_helper.from_array(scale, f"{tensor.name}_scale")]
        decoders += [
            helper.make_node("Cast", [f"{tensor.name}_q"], [f"{tensor.name}_f"],
                             to=TensorProto.FLOAT, name=f"{tensor.name}_cast"),
            helper.make_node("Mul", [f"{tensor.name}_f", f"{tensor.name}_scale"], [tensor.name],
                             name=f"{tensor.name}_dequantise"),
        ]
    graph = model.graph
    del graph.initializer[:]
    graph.initializer.extend(kept + added)
    nodes = decoders + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="the fp32 ONNX export")
    parser.add_argument("out_dir", type=Path, help="where model.onnx is written")
    args = parser.parse_args()
    try:
        model = onnx.load(str(args.source))
    except Exception as exc:  # noqa: BLE001 - unreadable, or not a serialised ModelProto
        sys.exit(f"Cannot read {args.source} as an ONNX model: {exc}")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / "model.onnx"
    onnx.save(quantise(model), str(out))
    data = out.read_bytes()
    print(f"{out}: {len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()}")


if __name__ == "__main__":
    main()
