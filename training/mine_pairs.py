"""Mine (query, code, hard negative) triples from the collected sources with kenning's own chunker.

    python training/mine_pairs.py --work /tmp/kenning-train [--jobs 2] [--limit-files N]

Documents look exactly like what kenning embeds: ``Filepath: <path>\\n---\\n<chunk text>``, cut by
``kenning.chunking.chunk_file`` at the embedded model's budget. Two kinds of pairs:

- ``doc``: a declaration's doc comment (its first sentences) -> the declaration's chunk, cut from
  the file with the doc comments of its declarations removed (a search never sees the answer);
- ``name``: the declaration's split identifier ("parse header value") -> the same chunk.

Each pair carries a hard negative: another declaration of the same file, else of the package.
Pairs are deduplicated by query and by document; packages whose name hashes into the first
``--val-percent`` go to the validation file. Writes ``<work>/pairs-train.json.xz`` and
``pairs-val.json.xz`` (``{"documents": [text], "pairs": [[query, document, negative or -1,
kind, language]]}``: each document stored once) and ``pairs-report.json`` (sizes per language
and kind).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import random
import re
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

DECLARATIONS = {"function", "method", "class", "struct", "enum", "trait", "interface", "impl",
                "type", "constructor", "macro", "union", "module", "namespace"}
# where a Debian package keeps its sources: the path inside is the project's own
PATH_ROOTS = re.compile(r"^(usr/share/gocode/src/|usr/include/|usr/share/nodejs/|usr/lib/nodejs/"
                        r"|usr/src/|[^/]+-[0-9][^/]*/)")
COMMENT_LINE = re.compile(r"^\s*(///?(?!/)|/\*\*?|\*/?|#(?![\[!]))")
TAG_LINE = re.compile(r"^\s*(@|:param|:return|:raises|Args:|Returns:|Raises:|Parameters\b|"
                      r"Example|# |```|>>>)")
PY_DOCSTRING = re.compile(r'^\s*[rRuUbB]?("""|\'\'\')')
MIN_WORDS, MAX_WORDS = 3, 40


def _budget() -> tuple[int, object]:
    from kenning.embedding.local import MAX_SEQUENCE, tokenizer
    from kenning.embedding.profiles import HEADER_RESERVE_TOKENS

    tok = tokenizer()
    return MAX_SEQUENCE - 2 - HEADER_RESERVE_TOKENS, (
        lambda text: len(tok.encode(text, add_special_tokens=False).ids))


def split_identifier(name: str) -> str:
    """``HttpClient.parse_header_value`` -> ``parse header value`` (the last component)."""
    last = re.split(r"[.:]+", name)[-1]
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", last))
    return " ".join(w.lower() for w in re.split(r"[_\W]+", words) if w)


def first_sentences(lines: list[str]) -> str | None:
    """The doc comment's opening sentence(s), markers and markup removed, or None if unusable."""
    text: list[str] = []
    for line in lines:
        line = re.sub(r"^\s*(///?|/\*\*?|\*/|\*|#)\s?", "", line).replace("*/", "").strip()
        if not text:  # the opening quotes, with a string prefix such as r"""
            line = re.sub(r'^[rRuUbB]{0,2}(?=["\'])', "", line).strip('"\'').strip()
        if not line:
            if text:
                break
            continue
        if TAG_LINE.match(line):
            break
        text.append(line)
    joined = re.sub(r"\[`?([^\]`]+)`?\](\[[^\]]*\]|\([^)]*\))?", r"\1", " ".join(text))
    joined = re.sub(r"\s+", " ", joined.replace('"""', "").replace("'''", "")).strip()
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z])", joined)
    query = sentences[0]
    if len(query.split()) < 8 and len(sentences) > 1:
        query = f"{query} {sentences[1]}"
    words = query.split()
    if not (MIN_WORDS <= len(words) <= MAX_WORDS) or not re.search(r"[a-zA-Z]{3}", query):
        return None
    return query


def doc_lines(file_lines: list[str], start: int, language: str) -> tuple[list[int], list[str]]:
    """The file line numbers (1-based) and texts of the doc comment of the declaration whose
    chunk starts at line ``start``: the docstring after a Python signature, else the comment
    lines before the signature (attributes and decorators stay with the code)."""
    if language == "python":
        i = start - 1
        while i < len(file_lines) and not file_lines[i].rstrip().endswith(":"):
            i += 1
        j = i + 1
        match = PY_DOCSTRING.match(file_lines[j]) if j < len(file_lines) else None
        if not match:
            return [], []
        quote, k = match.group(1), j
        rest = file_lines[j].split(quote, 1)[1]
        while quote not in rest and k + 1 < len(file_lines):
            k += 1
            rest = file_lines[k]
        return list(range(j + 1, k + 2)), file_lines[j: k + 1]
    found: list[int] = []
    for i in range(start - 1, len(file_lines)):
        stripped = file_lines[i].strip()
        if COMMENT_LINE.match(file_lines[i]) and not stripped.startswith("//!"):
            found.append(i)
        elif not stripped or stripped.startswith(("#[", "@")):
            continue
        else:
            break
    return [i + 1 for i in found], [file_lines[i] for i in found]


def mine_file(args: tuple[str, str, str]) -> list[dict[str, object]]:
    from kenning.chunking import chunk_file
    from kenning.indexing.sources import detect_language

    package, path, rel = args
    language = detect_language(rel)
    if language is None:
        return []
    try:
        data = Path(path).read_bytes()
        data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    max_tokens, count = _budget()
    chunks = chunk_file(rel, data, language, max_tokens=max_tokens, count_tokens=count)
    firsts: dict[tuple[str, str | None], object] = {}
    for c in chunks:
        if c.kind in DECLARATIONS and c.symbol:
            firsts.setdefault((c.symbol, c.signature), c)
    docs: dict[tuple[str, str | None], str] = {}
    drop: set[int] = set()
    file_lines = data.decode("utf-8").split("\n")
    for key, c in firsts.items():
        numbers, texts = doc_lines(file_lines, c.start_line, language)  # type: ignore[attr-defined]
        if numbers:
            drop.update(numbers)
            query = first_sentences(texts)
            if query:
                docs[key] = query
    if drop:
        kept = [line for n, line in enumerate(data.split(b"\n"), 1) if n not in drop]
        data = b"\n".join(kept)
        chunks = chunk_file(rel, data, language, max_tokens=max_tokens, count_tokens=count)
    declared: dict[tuple[str, str | None], object] = {}
    for c in chunks:
        if c.kind in DECLARATIONS and c.symbol and c.text.strip():
            declared.setdefault((c.symbol, c.signature), c)
    out: list[dict[str, object]] = []
    documents = {key: f"Filepath: {rel}\n---\n{c.text}" for key, c in declared.items()}  # type: ignore[attr-defined]
    for key, document in documents.items():
        others = [d for k, d in documents.items() if k != key]
        negative = random.Random(f"{rel}:{key}").choice(others) if others else None
        name = split_identifier(key[0])
        if key in docs:
            out.append({"kind": "doc", "query": docs[key], "document": document,
                        "negative": negative, "package": package, "language": language})
        if len(name.split()) >= 2:
            out.append({"kind": "name", "query": name, "document": document,
                        "negative": negative, "package": package, "language": language})
    return out


def files_of(src: Path, limit: int) -> list[tuple[str, str, str]]:
    jobs = []
    for package_dir in sorted(p for p in src.iterdir() if p.is_dir()):
        for root, _dirs, names in os.walk(package_dir):
            for n in sorted(names):
                full = Path(root) / n
                inner = str(full.relative_to(package_dir))
                if re.search(r"(^|/)(tests?|testdata|test_|benches|examples?)(/|_)", inner):
                    continue  # tests restate the code they test, with no doc comments
                jobs.append((package_dir.name, str(full), PATH_ROOTS.sub("", inner)))
    return jobs[:limit] if limit else jobs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit-files", type=int, default=0)
    ap.add_argument("--val-percent", type=int, default=3)
    args = ap.parse_args()
    jobs = files_of(args.work / "src", args.limit_files)
    print(f"[pairs] {len(jobs)} files", file=sys.stderr)
    seen_queries: set[tuple[str, str]] = set()
    seen_documents: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    negatives_by_package: dict[str, list[str]] = {}
    rows: list[dict[str, object]] = []
    with ProcessPoolExecutor(args.jobs) as pool:
        for n, found in enumerate(pool.map(mine_file, jobs, chunksize=16)):
            for row in found:
                q = (str(row["kind"]), str(row["query"]).lower())
                doc = str(row["document"])
                # a query said of many declarations (boilerplate docs) teaches nothing
                if q in seen_queries or seen_documents[doc] >= 2:
                    continue
                seen_queries.add(q)
                seen_documents[doc] += 1
                negatives_by_package.setdefault(str(row["package"]), []).append(doc)
                rows.append(row)
            if n % 2000 == 0:
                print(f"[pairs] {n}/{len(jobs)} files, {len(rows)} pairs", file=sys.stderr)
    rng = random.Random(0)
    packed = {split: {"documents": [], "pairs": []} for split in ("train", "val")}
    index: dict[tuple[str, str], int] = {}

    def doc_id(split: str, text: str) -> int:
        if (split, text) not in index:
            index[(split, text)] = len(packed[split]["documents"])
            packed[split]["documents"].append(text)
        return index[(split, text)]

    for row in rows:
        if row["negative"] is None:
            pool_docs = negatives_by_package[str(row["package"])]
            pick = rng.choice(pool_docs)
            row["negative"] = pick if pick != row["document"] else None
        held = int(hashlib.sha256(str(row["package"]).encode()).hexdigest(), 16) % 100
        split = "val" if held < args.val_percent else "train"
        negative = doc_id(split, str(row["negative"])) if row["negative"] else -1
        packed[split]["pairs"].append([row["query"], doc_id(split, str(row["document"])),
                                       negative, row["kind"], row["language"]])
        sizes[f"{split}:{row['language']}:{row['kind']}"] += 1
    for split, content in packed.items():
        rng.shuffle(content["pairs"])
        with lzma.open(args.work / f"pairs-{split}.json.xz", "wt", encoding="utf-8",
                       preset=9) as fh:
            json.dump(content, fh)
    report = {"pairs": len(rows), "by_split_language_kind": dict(sorted(sizes.items()))}
    (args.work / "pairs-report.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
