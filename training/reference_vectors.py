"""Write the reference vectors that the shipped file is held to on every platform.

    python training/reference_vectors.py --fp32 /tmp/kenning-train/model-fp32.onnx \\
        --out tests/data/minilm_reference.json

Chunks of kenning's own source, cut and framed as kenning embeds them (from a few word pieces
to the model's full 256, and one text past it), and a few queries, embedded by the fp32 export
of the shipped weights (``export_onnx.py``) through kenning's own tokenizer and pooling. The
test suite and ``.ci/smoke.py`` embed the same texts with the shipped file, on whatever CPU and
runtime they run, and require a cosine of at least 0.99 to each reference vector: the bar a
quantised file must meet, which the int8 kernels of every instruction set must meet too.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["python/kenning/embedding/local.py", "python/kenning/retrieval/fusion.py",
           "rust/src/hamming.rs", "rust/src/walk.rs", "README.md"]
PER_SOURCE = 6
QUERIES = ["where is the hamming distance computed",
           "how are the batches of a list run on several cores at once",
           "reciprocal rank fusion of the lexical and dense rankings",
           "skip the files that gitignore excludes", "sha256 check of the model file", "tokenizer"]


def documents() -> list[str]:
    """Chunks of each source as kenning frames them, from its shortest to its longest."""
    from kenning import config
    from kenning.chunking import chunk_file
    from kenning.embedding import document_text, make_embedder
    from kenning.indexing.sources import detect_language

    embedder = make_embedder(config.load())
    texts = []
    for source in SOURCES:
        data = (ROOT / source).read_bytes()
        chunks = chunk_file(source, data, detect_language(source),
                            max_tokens=embedder.max_tokens, count_tokens=embedder.count_tokens)
        framed = sorted({document_text(source, c.text) for c in chunks}, key=len)
        step = max(1, (len(framed) - 1) / (PER_SOURCE - 1))
        texts += [framed[round(i * step)] for i in range(min(PER_SOURCE, len(framed)))]
    # and a text past the model's reach, which it reads to its 256th word piece
    return [*texts, document_text(SOURCES[0], (ROOT / SOURCES[0]).read_text())]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fp32", type=Path, required=True, help="export_onnx.py's fp32 file")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    from kenning import config
    from kenning.embedding import local, make_embedder

    texts = documents()
    shipped = local.MODEL_SHA256  # the file these vectors hold to, before the fp32 one loads
    local.use_model_file(args.fp32)
    embedder = make_embedder(config.load())
    vectors = [*embedder.embed_documents(texts), *(embedder.embed_query(q) for q in QUERIES)]
    rows = [{"kind": "document", "text": t} for t in texts] + \
        [{"kind": "query", "text": q} for q in QUERIES]
    for row, vector in zip(rows, vectors, strict=True):
        row["vector"] = [round(float(x), 6) for x in vector]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # a row a line, so that a change of the texts reads as a diff
    lines = ",\n".join(json.dumps(row) for row in rows)
    head = json.dumps({"model_sha256": shipped, "fp32_sha256": local.MODEL_SHA256})[:-1]
    args.out.write_text(f'{head}, "rows": [\n{lines}\n]}}\n')
    print(f"{len(texts)} documents and {len(QUERIES)} queries -> {args.out}")


if __name__ == "__main__":
    main()
