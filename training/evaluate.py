"""Run benchmarks/eval_quality.py with a candidate ONNX file in place of the embedded model.

    KENNING_HOME=/tmp/cand-home KENNING_CONFIG=/tmp/cand-home/config.toml \\
    python training/evaluate.py --model /tmp/kenning-train/model-int8.onnx -- \\
        docstring --queries /work/shared/eval/dev/queries.jsonl --corpora-dir /tmp/evalkit/corpora

Everything after ``--`` is eval_quality.py's own command line (``docstring`` or ``batch``, so the
semble-bench scorer's ``--batch-cmd`` can call this script too). The candidate is loaded the way
the shipped file is: its sha256 is pinned for the run and checked, and the index descriptor
names it (``all-MiniLM-L6-v2-candidate-<sha256 prefix>``), so its indexes never mix with
another model's. Use a KENNING_HOME of its own as well.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    argv = sys.argv[1:]
    if len(argv) < 3 or argv[0] != "--model" or argv[2] != "--":
        sys.exit("usage: evaluate.py --model FILE.onnx -- EVAL_QUALITY_ARGS...")
    from kenning.embedding import local

    local.use_model_file(Path(argv[1]))
    name = f"all-MiniLM-L6-v2-candidate-{local.weights_id()}"  # keeps the MiniLM profile
    local.MODEL_NAME = name
    local.LocalEmbedder.__init__.__defaults__ = (name, local.DIMS, False)
    sys.argv = [str(ROOT / "benchmarks" / "eval_quality.py"), *argv[3:]]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
