"""Indexing with the local model is bound by the model: share of wall time inside it, chunks/s.

Indexes a copy of a few packages of this machine's own CPython standard library from scratch
(a fresh KENNING_HOME) with the default local embedder, and splits the wall time of the whole
`refresh` into time inside `embed_documents` and everything else (walk, hash, chunk, store).
Target (issue 3): >= 90% of wall time inside the model. Also prints the word pieces embedded
(the model's input, [CLS] and [SEP] included) per second of the whole refresh, and the process's
CPU time per embedded chunk (every thread's; it holds up on a busy machine where wall time does
not), and how those word pieces divide into words, punctuation, the path header and the
special pieces.

    python benchmarks/index_local.py [--packages json http logging email] [--batch-size 32]
        [--runtime onnxruntime] [--model OLD/model.onnx]
        [--threads-per-run 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sysconfig
import tempfile
import time
import unicodedata
from collections import Counter
from pathlib import Path


def piece_shares(texts: list[str]) -> Counter[str]:
    """The word pieces the model reads of ``texts`` ([CLS]/[SEP] included, cut at its 256),
    by kind: the two special pieces, the ``Filepath: ...`` header, punctuation in the chunk
    (a piece of punctuation or symbol characters only: BERT's tokenizer makes each such
    character a piece of its own), whitespace (none: the tokenizer drops it, indentation
    included) and the rest."""
    from kenning.embedding import local

    tok = local.tokenizer()
    kinds: Counter[str] = Counter()
    for text in texts:
        header = text.index("\n---\n") + 5 if text.startswith("Filepath: ") else 0
        enc = tok.encode(text, add_special_tokens=False)
        kinds["[CLS] and [SEP]"] += 2
        read = local.MAX_SEQUENCE - 2
        for piece, (start, _) in zip(enc.tokens[:read], enc.offsets[:read], strict=True):
            if start < header:
                kinds["path header"] += 1
            elif piece.isspace():
                kinds["whitespace"] += 1
            elif all(unicodedata.category(c)[0] in "PS" for c in piece):
                kinds["punctuation"] += 1
            else:
                kinds["words, names and numbers"] += 1
    return kinds


class TimedEmbedder:
    """The real embedder, with the wall time of its document calls summed and their texts kept
    (their word pieces are counted after the clock stops)."""

    def __init__(self, inner: object) -> None:
        self.inner, self.seconds, self.texts = inner, 0.0, 0
        self.embedded: list[str] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        try:
            return self.inner.embed_documents(texts)  # type: ignore[attr-defined]
        finally:
            self.seconds += time.perf_counter() - start
            self.texts += len(texts)
            self.embedded.extend(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=["json", "http", "logging", "email"])
    parser.add_argument("--batch-size", default=None, help="embedder.batch_size override")
    parser.add_argument("--runtime", choices=["openvino", "onnxruntime"],
                        help="the local model's runtime (default: the fastest that loads)")
    parser.add_argument("--model", type=Path,
                        help="another file of the model (default: the shipped one)")
    parser.add_argument("--threads-per-run", type=int,
                        help="onnxruntime threads per model run (default: the embedder's, one "
                             "a run and a run on every core; 2 on 2 cores: one run at a time)")
    args = parser.parse_args()
    if args.runtime:
        os.environ["KENNING_RUNTIME"] = args.runtime
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    tree = Path(tempfile.mkdtemp(prefix="kenning-index-local-"))
    for name in args.packages:
        shutil.copytree(stdlib / name, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
    home = tempfile.mkdtemp(prefix="kenning-index-local-home-")
    os.environ["KENNING_HOME"] = home
    os.environ.setdefault("KENNING_CONFIG", os.path.join(home, "config.toml"))

    from kenning import config
    from kenning.embedding import local, make_embedder
    from kenning.indexing.indexer import refresh

    if args.model:
        local.use_model_file(args.model)
    if args.threads_per_run:
        runtime = local.build_session(args.threads_per_run)
        local.session = lambda choice=None: runtime  # what the embedder runs

    settings = config.load({"embedder.batch_size": args.batch_size})
    embedder = TimedEmbedder(make_embedder(settings))
    embedder.embed_documents(["warm up: load the model before the clock starts"])
    embedder.seconds, embedder.texts, embedder.embedded = 0.0, 0, []
    start, cpu = time.perf_counter(), time.process_time()
    result = refresh(tree, settings, embedder=embedder)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert result.status == "complete" and result.vectors_embedded == embedder.texts
    share = embedder.seconds / wall
    print(f"tree: {', '.join(args.packages)} from {stdlib} ({result.files} files, "
          f"{sum(p.stat().st_size for p in tree.rglob('*') if p.is_file()) / 1e6:.1f} MB)")
    print(f"chunks: {result.chunks}   embedded (distinct texts): {result.vectors_embedded}")
    runtime = local.session()
    print(f"runtime: {local.runtime_name(runtime)}, one text a run, "
          f"{local.runs_at_once(runtime)} runs at once")
    print(f"wall: {wall:.1f}s   CPU: {cpu:.1f}s   inside the model: {embedder.seconds:.1f}s "
          f"({share:.1%}, target >= 90%)")
    print(f"throughput: {result.chunks / wall:.1f} chunks/s, "
          f"{result.vectors_embedded / embedder.seconds:.1f} embeddings/s inside the model")
    pieces = sum(len(row) for row in local.token_ids(embedder.embedded))
    print(f"word pieces: {pieces} ({pieces / max(1, embedder.texts):.0f} a text), "
          f"{pieces / wall:.0f} word pieces/s end to end, "
          f"{1000 * cpu / max(1, embedder.texts):.1f} CPU-ms per embedded chunk")
    kinds = piece_shares(embedder.embedded)
    print("word pieces by kind: " + ", ".join(
        f"{kind} {kinds[kind] / pieces:.1%}" for kind in
        ("words, names and numbers", "punctuation", "path header", "[CLS] and [SEP]",
         "whitespace")))
    print("stages (s): " + ", ".join(f"{k} {v:.2f}" for k, v in result.timings.items()))
    shutil.rmtree(tree)
    shutil.rmtree(home)


if __name__ == "__main__":
    main()
