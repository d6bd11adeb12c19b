"""Export trained weights (``train.py``'s fp16 shards) to the ONNX file kenning's loader runs.

    python training/export_onnx.py --base /tmp/kenning-train/base \\
        --weights /tmp/kenning-train/run --out /tmp/kenning-train/model-fp32.onnx \\
        [--blend 0.7] [--int8 /tmp/kenning-train/model-int8.onnx]

The graph has the inputs and output of the embedded all-MiniLM-L6-v2 file (``input_ids``,
``attention_mask``, ``token_type_ids`` -> ``last_hidden_state``; batch and sequence dynamic),
so ``kenning.embedding.local`` pools and normalises it unchanged. The export is checked
against the PyTorch model on a few code texts (min cosine of the pooled vectors is printed).
``--int8`` also writes onnxruntime's dynamic int8 quantisation of it.

``--blend A`` exports ``A * trained + (1 - A) * base`` weight by weight (the base's fp32 shards,
``<base>/fp32``), as WiSE-FT does: one trained run gives a family of candidates for the dev
kits to choose from (``training/README.md`` has a run whose blend at 0.5 beat it as trained).
``--blend 0`` is the base model, byte for byte.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).parent))
from train import Encoder, join_parts  # noqa: E402
from transformers import BertConfig, BertModel  # noqa: E402

SAMPLES = ["Filepath: src/lib.rs\n---\npub fn parse_header(value: &str) -> Option<Header> {\n"
           "    value.split_once(':').map(|(k, v)| Header::new(k.trim(), v.trim()))\n}",
           "parse an HTTP header value", "def read_config(path):\n    return toml.load(path)",
           "Filepath: a/b.go\n---\nfunc (s *Server) Close() error { return s.ln.Close() }"]


def read_shards(folder: Path) -> dict[str, torch.Tensor]:
    state: dict[str, torch.Tensor] = {}
    for shard in sorted(folder.glob("model-*.safetensors")):
        state.update(load_file(str(shard)))
    return {k: v.float() for k, v in join_parts(state).items()}


def blended(trained: dict[str, torch.Tensor], base: dict[str, torch.Tensor],
            alpha: float) -> dict[str, torch.Tensor]:
    if trained.keys() != base.keys():
        sys.exit(f"the base and the trained weights name different tensors: "
                 f"{sorted(trained.keys() ^ base.keys())[:5]}")
    return {k: alpha * trained[k] + (1 - alpha) * base[k] for k in trained}


def trained_model(base: Path, weights: Path, alpha: float) -> BertModel:
    state = read_shards(weights)
    if alpha != 1:
        state = blended(state, read_shards(base / "fp32"), alpha)
    config = BertConfig.from_json_file(str(base / "config.json"))
    config._attn_implementation = "eager"  # the SDPA path traces without the padding mask
    model = BertModel(config, add_pooling_layer=False)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if [m for m in missing if "position_ids" not in m] or unexpected:
        sys.exit(f"weights do not fit: missing {missing[:5]}, unexpected {unexpected[:5]}")
    return model.eval()


class Hidden(torch.nn.Module):
    def __init__(self, model: BertModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state


def pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[:, :, None].astype(np.float32)
    vecs = (hidden * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--weights", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--blend", type=float, default=1.0, metavar="A",
                    help="A * trained + (1 - A) * base, weight by weight (default 1: as trained)")
    ap.add_argument("--int8", type=Path)
    args = ap.parse_args()
    if not 0 <= args.blend <= 1:
        ap.error("--blend takes a number from 0 to 1")
    import onnxruntime as ort

    model = trained_model(args.base, args.weights, args.blend)
    inputs = Encoder(args.base / "tokenizer.json", torch.device("cpu")).batch(SAMPLES, 256)
    types = torch.zeros_like(inputs["input_ids"])
    sample = (inputs["input_ids"], inputs["attention_mask"], types)
    graph = Hidden(model).eval()
    with torch.no_grad():
        reference = pooled(graph(*sample).numpy(), inputs["attention_mask"].numpy())
    axes = {0: "batch", 1: "sequence"}
    torch.onnx.export(graph, sample, str(args.out), dynamo=False, opset_version=17,
                      input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["last_hidden_state"],
                      dynamic_axes={"input_ids": axes, "attention_mask": axes,
                                    "token_type_ids": axes, "last_hidden_state": axes})
    feeds = {"input_ids": sample[0].numpy(), "attention_mask": sample[1].numpy(),
             "token_type_ids": types.numpy()}
    files = [args.out]
    if args.int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # per-channel scales keep the vectors much closer to the fp32 model's than per-tensor
        quantize_dynamic(str(args.out), str(args.int8), weight_type=QuantType.QUInt8,
                         per_channel=True)
        files.append(args.int8)
    for path in files:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        (hidden,) = session.run(["last_hidden_state"], feeds)
        cosine = (pooled(hidden, feeds["attention_mask"]) * reference).sum(1).min()
        print(f"{path}: {path.stat().st_size} bytes, min cosine against PyTorch {cosine:.5f}")


if __name__ == "__main__":
    main()
