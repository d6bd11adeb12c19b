"""How well 1-bit sign vectors keep a model's ranking: recall@50 of the Hamming top 50 against
the top 50 by cosine, over the vectors of a built index, for the docstring kit's queries.

    KENNING_HOME=... python training/signbit_recall.py --index-root $KENNING_HOME/indices \\
        --queries /work/shared/eval/dev/queries.jsonl [--model candidate.onnx]

Reads each docstring corpus index (``vectors.int8`` times ``vectors.scale`` as the float
vectors, ``vectors.bits`` as the sign bits) under ``--index-root`` and embeds the queries with
the embedded model, or with ``--model`` (a candidate ONNX file, as in ``evaluate.py``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

TOP = 50


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index-root", type=Path, required=True, help="<KENNING_HOME>/indices")
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--model", type=Path)
    args = ap.parse_args()
    from kenning.embedding import local

    if args.model:
        local.use_model_file(args.model)
    queries = [json.loads(line) for line in args.queries.read_text().splitlines() if line]
    recalls = []
    for package in sorted({q["package"] for q in queries}):
        found = [d for d in args.index_root.glob(f"*/{package}-*") if (d / "vectors.int8").exists()]
        if not found:
            print(f"{package}: no index under {args.index_root}")
            continue
        directory = found[0]
        scale = np.fromfile(directory / "vectors.scale", dtype=np.float32)
        rows = len(scale)
        floats = np.fromfile(directory / "vectors.int8", dtype=np.int8)[: rows * local.DIMS]
        floats = floats.reshape(rows, local.DIMS).astype(np.float32) * scale[:, None]
        bits = np.fromfile(directory / "vectors.bits", dtype=np.uint8)[: rows * local.DIMS // 8]
        bits = np.unpackbits(bits.reshape(rows, local.DIMS // 8), axis=1).astype(np.int8)
        texts = [q["query"] for q in queries if q["package"] == package]
        qvecs = local.encode(local.token_ids(texts))
        for q in qvecs:
            by_float = set(np.argsort(-(floats @ q))[:TOP])
            hamming = (bits != (q > 0)).sum(axis=1)
            by_bits = set(np.argsort(hamming, kind="stable")[:TOP])
            recalls.append(len(by_float & by_bits) / TOP)
        print(f"{package}: {rows} vectors, {len(texts)} queries")
    print(f"sign-bit recall@{TOP} against float: {np.mean(recalls):.3f} over {len(recalls)} "
          "queries")


if __name__ == "__main__":
    main()
