"""Quantise an fp32 ONNX export of a MiniLM-shaped encoder into the format kenning ships.

    python training/quantize.py IN.onnx OUT_DIR [--int8-products]

writes OUT_DIR/model.onnx and prints its sha256 and size. The weights are stored as int8 with
one float32 scale per output channel (symmetric, zero point 0): every 2-D weight a MatMul reads
(scale per column) and every embedding table a Gather reads (scale per row). Each is turned
back into float32 by a Cast and a Mul at the head of the graph, so the file is a quarter of
the fp32 size and every runtime reads it with standard operators: onnxruntime folds the
weights back to float32 when it loads the session, and OpenVINO keeps them compressed and
runs int8 matrix products, quantising activations per row as it goes (kenning's fast path).
No activation scale is stored: onnxruntime's static or dynamic int8 files moved the vectors
too far from the fp32 model's (benchmarks/embed_runtimes.py --full checks both).

``--int8-products`` writes a file for onnxruntime's int8 kernels instead: every MatMul with a weight
multiplies int8 by int8 (MatMulInteger), its activations quantised as they arrive. The attention
projections (square weights) take one scale per activation tensor (DynamicQuantizeLinear, as
onnxruntime's own dynamic quantisation). The feed-forward pair (the weights that widen to 4x
and narrow back) read activations in which a few tokens are far larger than the rest, and one
scale for the whole batch drowned the others: each row (token) gets a scale of its own. On
all-MiniLM-L6-v2 (900 Python, Rust and C chunks, 150 queries), min cosine against fp32: 0.977
with a scale per tensor everywhere (onnxruntime's quantize_dynamic), 0.988 with per-row scales
for the narrowing projection only, 0.993 for both.

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


def int8_codes(weight: np.ndarray, axis: int, top: int = 127) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric codes in [-top, top] and one float32 scale per slice along ``axis`` (kept as a
    dim)."""
    peak = np.abs(weight).max(axis=1 - axis, keepdims=True)
    scale = np.where(peak > 0, peak / top, 1.0).astype(np.float32)
    return np.clip(np.rint(weight / scale), -top, top).astype(np.int8), scale


def quantise(model: onnx.ModelProto, int8_products: bool = False) -> onnx.ModelProto:
    chosen = weights_to_quantise(model)
    if not chosen:
        raise SystemExit("No float32 MatMul weight or embedding table found: is this the fp32 "
                         "export of an encoder?")
    if int8_products:
        multiplied = multiply_in_int8(model, [name for name, axis in chosen.items() if axis == 1])
        chosen = {name: axis for name, axis in chosen.items() if name not in multiplied}
    kept, added, decoders = [], [], []
    for tensor in model.graph.initializer:
        axis = chosen.get(tensor.name)
        if axis is None:
            kept.append(tensor)
            continue
        codes, scale = int8_codes(numpy_helper.to_array(tensor).astype(np.float32), axis)
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


def multiply_in_int8(model: onnx.ModelProto, weights: list[str]) -> set[str]:
    """Rewrite every MatMul reading one of ``weights`` as an int8 product; returns the weights
    it replaced by their int8 codes. Each activation is quantised once, however many MatMuls
    read it (a layer's query, key and value projections share theirs)."""
    graph = model.graph
    stored = {t.name: t for t in graph.initializer if t.name in weights}
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    added = [numpy_helper.from_array(np.array(127, np.float32), "int8_peak"),
             numpy_helper.from_array(np.array(1e-12, np.float32), "int8_floor"),
             numpy_helper.from_array(np.array(128, np.float32), "uint8_mid"),
             numpy_helper.from_array(np.array(128, np.uint8), "uint8_zero")]
    if opset >= 18:
        added.append(numpy_helper.from_array(np.array([-1], np.int64), "last_axis"))
    # (activation, per row) -> its uint8 codes, scale and zero point
    quantised: dict[tuple[str, bool], tuple[str, str, str]] = {}
    nodes = []
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in stored:
            nodes.append(node)
            continue
        weight = numpy_helper.to_array(stored[node.input[1]]).astype(np.float32)
        # 7 bits: x86 without VNNI adds uint8 x int8 products in pairs into int16 (vpmaddubsw),
        # and 255 * 127 * 2 overflows it; 255 * 63 * 2 never does
        codes, scale = int8_codes(weight, 1, top=63)
        w = node.input[1]
        added += [numpy_helper.from_array(codes, f"{w}_q"),
                  numpy_helper.from_array(scale.reshape(-1), f"{w}_scale")]
        per_row = weight.shape[0] != weight.shape[1]  # the feed-forward pair (see the top)
        key = (node.input[0], per_row)
        if key not in quantised:
            made, quantised[key] = quantise_activation(node.input[0], per_row, opset)
            nodes += made
        q, x_scale, zero = quantised[key]
        out = node.output[0]
        name = node.name or out
        nodes.append(helper.make_node("MatMulInteger", [q, f"{w}_q", zero], [f"{name}_i32"],
                                      name=f"{name}_int8"))
        nodes.append(helper.make_node("Cast", [f"{name}_i32"], [f"{name}_f32"],
                                      to=TensorProto.FLOAT, name=f"{name}_cast"))
        if per_row:  # [batch, seq, 1] * [out]: scale the product, never a [batch, seq, out] scale
            nodes += [helper.make_node("Mul", [f"{name}_f32", x_scale], [f"{name}_rows"],
                                       name=f"{name}_row_scale"),
                      helper.make_node("Mul", [f"{name}_rows", f"{w}_scale"], [out],
                                       name=f"{name}_column_scale")]
        else:  # the pattern onnxruntime fuses into one DynamicQuantizeMatMul
            nodes += [helper.make_node("Mul", [x_scale, f"{w}_scale"], [f"{name}_scale"],
                                       name=f"{name}_scales"),
                      helper.make_node("Mul", [f"{name}_f32", f"{name}_scale"], [out],
                                       name=f"{name}_rescale")]
    kept = [t for t in graph.initializer if t.name not in stored]
    del graph.initializer[:]
    graph.initializer.extend(kept + added)
    del graph.node[:]
    graph.node.extend(nodes)
    return set(stored)


def quantise_activation(x: str, per_row: bool,
                        opset: int) -> tuple[list[onnx.NodeProto], tuple[str, str, str]]:
    """Nodes turning float ``x`` into uint8 codes, their scale and zero point."""
    if not per_row:
        node = helper.make_node("DynamicQuantizeLinear", [x],
                                [f"{x}_u8", f"{x}_scale", f"{x}_zero"], name=f"{x}_quantise")
        return [node], (f"{x}_u8", f"{x}_scale", f"{x}_zero")
    # symmetric per row, stored as uint8 around 128: the uint8 x int8 product every CPU speeds up
    nodes = [helper.make_node("Abs", [x], [f"{x}_abs"], name=f"{x}_abs"),
             # ReduceMax reads its axes from an attribute before opset 18, from an input since
             helper.make_node("ReduceMax", [f"{x}_abs"] + (["last_axis"] if opset >= 18 else []),
                              [f"{x}_peak"], keepdims=1, name=f"{x}_peak",
                              **({} if opset >= 18 else {"axes": [-1]})),
             helper.make_node("Max", [f"{x}_peak", "int8_floor"], [f"{x}_peak1"],
                              name=f"{x}_floor"),
             helper.make_node("Div", [f"{x}_peak1", "int8_peak"], [f"{x}_row_scale"],
                              name=f"{x}_row_scale"),
             helper.make_node("Div", [x, f"{x}_row_scale"], [f"{x}_steps"], name=f"{x}_steps"),
             helper.make_node("Round", [f"{x}_steps"], [f"{x}_round"], name=f"{x}_round"),
             helper.make_node("Add", [f"{x}_round", "uint8_mid"], [f"{x}_mid"], name=f"{x}_mid"),
             helper.make_node("Cast", [f"{x}_mid"], [f"{x}_row_u8"], to=TensorProto.UINT8,
                              name=f"{x}_row_u8")]
    return nodes, (f"{x}_row_u8", f"{x}_row_scale", "uint8_zero")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="the fp32 ONNX export")
    parser.add_argument("out_dir", type=Path, help="where model.onnx is written")
    parser.add_argument("--int8-products", action="store_true",
                        help="int8 matrix products in onnxruntime instead of int8 storage only")
    args = parser.parse_args()
    try:
        model = onnx.load(str(args.source))
    except Exception as exc:  # noqa: BLE001 - unreadable, or not a serialised ModelProto
        sys.exit(f"Cannot read {args.source} as an ONNX model: {exc}")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / "model.onnx"
    onnx.save(quantise(model, args.int8_products), str(out))
    data = out.read_bytes()
    print(f"{out}: {len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()}")


if __name__ == "__main__":
    main()
