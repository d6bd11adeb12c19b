"""training/quantize.py: an fp32 graph in, the int8-weight format kenning runs out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")  # a training tool, not a runtime dependency
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

SCRIPT = Path(__file__).parent.parent / "training" / "quantize.py"


def _fp32_encoder(path: Path) -> None:
    """An embedding lookup and a projection: the two kinds of weight the script quantises."""
    rng = np.random.default_rng(7)
    table = rng.normal(size=(500, 64)).astype(np.float32)
    weight = (rng.normal(size=(64, 96)) * np.linspace(0.01, 3, 96)).astype(np.float32)
    bias = rng.normal(size=(96,)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["embedded"]),
         helper.make_node("MatMul", ["embedded", "weight"], ["projected"]),
         helper.make_node("Add", ["projected", "bias"], ["last_hidden_state"])],
        "encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["batch", "seq", 96])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(weight, "weight"),
         numpy_helper.from_array(bias, "bias")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def _run(path: Path, ids: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(["last_hidden_state"], {"input_ids": ids})[0]


def test_quantised_file_has_int8_weights_and_the_fp32_outputs(tmp_path: Path) -> None:
    source = tmp_path / "fp32.onnx"
    _fp32_encoder(source)
    done = subprocess.run([sys.executable, str(SCRIPT), str(source), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out" / "model.onnx"
    assert "sha256" in done.stdout and out.stat().st_size < source.stat().st_size / 3
    stored = {t.name: t for t in onnx.load(str(out)).graph.initializer}
    assert stored["table_q"].data_type == stored["weight_q"].data_type == TensorProto.INT8
    assert list(stored["weight_scale"].dims) == [1, 96]  # one scale per output column
    assert list(stored["table_scale"].dims) == [500, 1]  # one scale per embedding row
    assert stored["bias"].data_type == TensorProto.FLOAT  # small tensors stay float32
    ids = np.array([[1, 42, 499, 7], [3, 3, 0, 250]], dtype=np.int64)
    want, got = _run(source, ids), _run(out, ids)
    cosine = (want * got).sum(-1) / np.linalg.norm(want, axis=-1) / np.linalg.norm(got, axis=-1)
    assert cosine.min() > 0.999


def test_a_file_that_is_not_a_model_gets_one_sentence(tmp_path: Path) -> None:
    bad = tmp_path / "notes.onnx"
    bad.write_text("not a model")
    done = subprocess.run([sys.executable, str(SCRIPT), str(bad), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"Cannot read {bad} as an ONNX model")


def _feed_forward(path: Path, square: bool) -> None:
    """An embedding lookup, [a square projection,] then a widening and a narrowing MatMul."""
    rng = np.random.default_rng(11)
    table = rng.normal(size=(300, 64)).astype(np.float32)
    table[7] *= 200  # one token far larger than the rest, as BERT's separator tokens are
    weights = {"square": rng.normal(size=(64, 64)).astype(np.float32) / 8,
               "up": rng.normal(size=(64, 256)).astype(np.float32) / 8,
               "down": rng.normal(size=(256, 64)).astype(np.float32) / 16}
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["embedded"])]
    first = "embedded"
    if square:
        nodes.append(helper.make_node("MatMul", ["embedded", "square"], ["projected"]))
        first = "projected"
    nodes += [helper.make_node("MatMul", [first, "up"], ["wide"]),
              helper.make_node("Relu", ["wide"], ["active"]),
              helper.make_node("MatMul", ["active", "down"], ["last_hidden_state"])]
    graph = helper.make_graph(
        nodes, "feed_forward",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["batch", "seq", 64])],
        [numpy_helper.from_array(table, "table")]
        + [numpy_helper.from_array(w, name) for name, w in weights.items()
           if square or name != "square"])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def _int8_products(tmp_path: Path, square: bool) -> tuple[Path, Path]:
    source = tmp_path / "fp32.onnx"
    _feed_forward(source, square)
    done = subprocess.run([sys.executable, str(SCRIPT), str(source), str(tmp_path / "out"),
                           "--int8-products"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return source, tmp_path / "out" / "model.onnx"


def _cosines(want: np.ndarray, got: np.ndarray) -> np.ndarray:
    return (want * got).sum(-1) / np.linalg.norm(want, axis=-1) / np.linalg.norm(got, axis=-1)


def test_int8_products_multiply_every_weight_in_int8(tmp_path: Path) -> None:
    source, out = _int8_products(tmp_path, square=True)
    ops = [node.op_type for node in onnx.load(str(out)).graph.node]
    assert "MatMul" not in ops and ops.count("MatMulInteger") == 3
    ids = np.array([[1, 42, 299, 5], [3, 3, 0, 250]], dtype=np.int64)
    assert _cosines(_run(source, ids), _run(out, ids)).min() > 0.99


def test_a_text_gets_the_same_output_alone_or_batched(tmp_path: Path) -> None:
    # one scale per tensor would let token 7 of the second text change the first text's codes
    _, out = _int8_products(tmp_path, square=True)
    batch = np.array([[1, 42, 299, 5], [7, 7, 7, 250]], dtype=np.int64)
    np.testing.assert_array_equal(_run(out, batch[:1]), _run(out, batch)[:1])


def test_openvino_reads_the_int8_products_file(tmp_path: Path) -> None:
    from kenning.embedding import local

    if "openvino" not in local.installed_runtimes():
        pytest.skip("openvino is not installed")
    ov = local.import_openvino()  # with its telemetry off, as kenning imports it
    source, out = _int8_products(tmp_path, square=True)
    ids = np.array([[1, 42, 299, 5], [7, 3, 0, 250]], dtype=np.int64)
    compiled = ov.Core().compile_model(str(out), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    got = compiled.create_infer_request().infer({"input_ids": ids})["last_hidden_state"]
    assert _cosines(_run(source, ids), got).min() > 0.99


def test_a_huge_token_does_not_drown_the_others_in_the_feed_forward_pair(tmp_path: Path) -> None:
    # With one scale for the batch, token 7's values would round every other token's to zero.
    source, out = _int8_products(tmp_path, square=False)
    ids = np.array([[7, 42, 299, 5], [3, 3, 0, 250]], dtype=np.int64)
    assert _cosines(_run(source, ids), _run(out, ids)).min() > 0.99
