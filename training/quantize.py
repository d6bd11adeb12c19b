"""Quantise an fp32 ONNX export of a MiniLM-shaped encoder into the format kenning ships.

    python training/quantize.py IN.onnx OUT_DIR [--int8-products]

writes OUT_DIR/model.onnx and prints its sha256 and size. The weights are stored as int8 with
one float32 scale per output channel (symmetric, zero point 0): every 2-D weight a MatMul reads
(scale per column) and every embedding table a Gather reads (scale per row). Each is turned
back into float32 by a Cast and a Mul at the head of the graph, so the file is a quarter of
the fp32 size and every runtime reads it with standard operators: onnxruntime folds the
weights back to float32 when it loads the session, and OpenVINO keeps them compressed and
runs int8 matrix products, quantising activations per row as it goes (fast only with VNNI or
AMX). No activation scale is stored: onnxruntime's static or dynamic int8 files moved the
vectors too far from the fp32 model's (benchmarks/embed_runtimes.py --full checks both).

``--int8-products`` writes the file kenning ships: every MatMul with a weight multiplies uint8
activations, quantised as they arrive, by 7-bit weights (MatMulInteger); embedding tables stay
as above. Activations take one scale per token: a few tokens far larger than the rest (in the
feed-forward pair) cannot round the others to zero, and a text's vector does not depend on the
texts batched with it (one scale per batch, as onnxruntime's own dynamic quantisation has it,
moved vectors by up to 0.003 in cosine between a text alone and in a batch). On
all-MiniLM-L6-v2 and a CPU with AVX2 only (benchmarks/embed_runtimes.py), min cosine against
fp32 0.993 at 1.66x the chunks/s of the int8-weight file under onnxruntime; OpenVINO reads the
same file.

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
             numpy_helper.from_array(np.array(128, np.float32), "uint8_middle"),
             numpy_helper.from_array(np.array(128, np.uint8), "uint8_zero")]
    if opset >= 18:  # ReduceMax's axes: an input since opset 18, an attribute before
        added.append(numpy_helper.from_array(np.array([-1], np.int64), "last_axis"))
    quantised: dict[str, tuple[str, str]] = {}  # activation -> its codes and row scales
    nodes = []
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in stored:
            nodes.append(node)
            continue
        weight = numpy_helper.to_array(stored[node.input[1]]).astype(np.float32)
        # 7 bits: x86 without VNNI adds uint8 x int8 products in pairs into int16 (vpmaddubsw),
        # and 255 * 127 * 2 overflows it; 255 * 63 * 2 never does
        codes, scale = int8_codes(weight, 1, top=63)
        w, x = node.input[1], node.input[0]
        added += [numpy_helper.from_array(codes, f"{w}_q"),
                  numpy_helper.from_array(scale.reshape(-1), f"{w}_scale")]
        if x not in quantised:
            made, quantised[x] = quantise_rows(x, opset)
            nodes += made
        x_codes, x_scale = quantised[x]
        t = f"{node.name or node.output[0]}:int8"  # a prefix no tensor of the export carries
        make = helper.make_node
        # [..., 1] * [out]: the row and column scales apply to the product one after the other
        nodes += [make("MatMulInteger", [x_codes, f"{w}_q", "uint8_zero"], [f"{t}_i32"],
                       name=f"{t}_int8"),
                  make("Cast", [f"{t}_i32"], [f"{t}_f32"], to=TensorProto.FLOAT, name=f"{t}_cast"),
                  make("Mul", [f"{t}_f32", x_scale], [f"{t}_rows"], name=f"{t}_row_scale"),
                  make("Mul", [f"{t}_rows", f"{w}_scale"], [node.output[0]],
                       name=f"{t}_column_scale")]
    kept = [tensor for tensor in graph.initializer if tensor.name not in stored]
    del graph.initializer[:]
    graph.initializer.extend(kept + added)
    del graph.node[:]
    graph.node.extend(nodes)
    return set(stored)


def quantise_rows(x: str, opset: int) -> tuple[list[onnx.NodeProto], tuple[str, str]]:
    """Nodes turning float ``x`` into uint8 codes with one scale per row (token), and the
    names of the codes and the scales ([..., 1]).

    Symmetric around 128, as uint8 (the uint8 x int8 product every CPU speeds up). A scale per
    token keeps a few huge tokens from rounding the others to zero (BERT's separators grow so
    in the feed-forward pair), and keeps each text's vector independent of the texts and the
    padding it is batched with. Elementwise operators: OpenVINO cannot read a QuantizeLinear
    whose scales come per row."""
    p = f"{x}:row"  # a prefix no tensor of the export carries
    make = helper.make_node
    nodes = [make("Abs", [x], [f"{p}_abs"], name=f"{p}_abs"),
             make("ReduceMax", [f"{p}_abs"] + (["last_axis"] if opset >= 18 else []),
                  [f"{p}_peak"], keepdims=1, name=f"{p}_peak",
                  **({} if opset >= 18 else {"axes": [-1]})),
             make("Max", [f"{p}_peak", "int8_floor"], [f"{p}_peak1"], name=f"{p}_floor"),
             make("Div", [f"{p}_peak1", "int8_peak"], [f"{p}_scale"], name=f"{p}_scale"),
             make("Div", [x, f"{p}_scale"], [f"{p}_scaled"], name=f"{p}_scaled"),
             make("Round", [f"{p}_scaled"], [f"{p}_rounded"], name=f"{p}_rounded"),
             make("Add", [f"{p}_rounded", "uint8_middle"], [f"{p}_shifted"], name=f"{p}_shifted"),
             make("Cast", [f"{p}_shifted"], [f"{p}_u8"], to=TensorProto.UINT8, name=f"{p}_u8")]
    return nodes, (f"{p}_u8", f"{p}_scale")


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
