""""grep used well": an automatic stand-in for a skilled user with grep, the yardstick kenning
must beat on every category of every dev kit.

The user takes the query's content words (kenning's stop words dropped, three letters or more,
a plural or -ing/-ed ending cut so that "wrapping" greps `wrap`), greps each as a
case-insensitive pattern over the declaration lines of the source files (a line that starts
with `def`, `class`, `fn`, `func`, `function`, a type keyword or a method signature), then over
all their lines. Files rank by the distinct words matched on declaration lines, then by the
distinct words matched anywhere, then by the matching lines; each file is one result, at the
declaration line (else the line) that matches the most words. Source files only: files of a
language kenning indexes that is neither prose (Markdown, reST, text) nor data (JSON, YAML,
TOML, XML, HTML, CSS). The patterns run through Python's `re` over the files read once: the
lines `rg -i -F WORD` would print, without needing ripgrep.

    # semble-bench dev, through its scorer's batch protocol (file level, as its grep baselines)
    python /work/shared/eval/semble-bench/score.py run --method batch --label grep-well \\
        --level file --repos-dir /tmp/conf/repos --repo express \\
        --batch-cmd 'python benchmarks/grep_baseline.py batch --root {root} --queries {queries} \\
            --out {out} -k {k}'

    # docstring dev set, one process per query inside each corpus
    python /work/shared/eval/score.py --queries /work/shared/eval/dev/queries.jsonl \\
        --corpora-dir /tmp/evalkit/corpora --sample 30 \\
        --cmd 'python benchmarks/grep_baseline.py search --limit {limit} {query}'
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from kenning.indexing.sources import detect_language
from kenning.retrieval.query import STOPWORDS

NOT_SOURCE = frozenset({"markdown", "rst", "text", "asciidoc", "org", "json", "yaml", "toml",
                        "xml", "html", "css", "scss"})
SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", "target"})
MAX_BYTES = 1_000_000
# A declaration line, in the languages of the dev kits: a keyword that declares, or a method
# signature (words, then a name and an opening parenthesis, no `=` or `;` before it).
_DECL = re.compile(
    r"^\s*(?:(?:export|pub(?:\([\w:]+\))?|public|private|protected|static|async|abstract|final"
    r"|override|inline|virtual|extern|default)\s+)*"
    r"(?:def|class|fn|func|function|struct|enum|trait|interface|impl|type|module|macro|object"
    r"|defmodule|defp?|defmacro|const|let|var|val|template|namespace|union|typedef)\b"
    r"|^\s*[\w:<>\[\],*&\s]+?\b\w+\s*\([^=;]*$"
    r"|^\s*[\w$]+\s*[:=]\s*(?:async\s+)?function\b"
    r"|^\s*\w+\.prototype\.\w+\s*=")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_ENDINGS = ("ing", "ed", "es", "s")


def content_words(query: str) -> list[str]:
    """The query's content words, lower-case, stems as a skilled user would grep them."""
    out: list[str] = []
    for word in _WORD.findall(query):
        low = word.lower()
        if len(low) < 3 or low in STOPWORDS:
            continue
        for ending in _ENDINGS:
            if low.endswith(ending) and len(low) - len(ending) >= 3:
                low = low[: -len(ending)]
                break
        if low not in out:
            out.append(low)
    return out


@dataclass
class _File:
    path: str
    lines: list[str]  # lower-cased
    declarations: list[int]  # 0-based numbers of its declaration lines


def source_files(root: Path) -> list[_File]:
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(names):
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            language = detect_language(rel)
            if language is None or language in NOT_SOURCE or path.is_symlink():
                continue
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if len(data) > MAX_BYTES or b"\0" in data[:8192]:
                continue
            lines = data.decode("utf-8", errors="replace").lower().splitlines()
            files.append(_File(rel, lines, [i for i, line in enumerate(lines)
                                            if _DECL.match(line)]))
    return files


def search(files: list[_File], query: str, k: int) -> list[dict[str, object]]:
    """The first ``k`` files, ranked as the module docstring says, each at its best line."""
    words = content_words(query)
    if not words:
        return []
    patterns = [re.compile(re.escape(w)) for w in words]
    ranked = []
    for f in files:
        def matched(i: int, f: _File = f) -> int:
            return sum(1 for p in patterns if p.search(f.lines[i]))

        decl_words = {w for i in f.declarations for w, p in zip(words, patterns, strict=True)
                      if p.search(f.lines[i])}
        hit_lines = [i for i, line in enumerate(f.lines) if any(p.search(line) for p in patterns)]
        if not hit_lines:
            continue
        all_words = {w for i in hit_lines for w, p in zip(words, patterns, strict=True)
                     if p.search(f.lines[i])}
        decl_hits = [i for i in f.declarations if matched(i)]
        best = max(decl_hits or hit_lines, key=lambda i: (matched(i), -i))
        ranked.append(((len(decl_words), len(all_words), len(hit_lines)), f.path, best))
    ranked.sort(key=lambda r: (tuple(-x for x in r[0]), r[1]))
    return [{"path": path, "start_line": line + 1, "end_line": line + 1,
             "score": float(key[0] * 100 + key[1])} for key, path, line in ranked[:k]]


def _batch(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    files = source_files(Path(args.root))
    index_ms = (time.perf_counter() - started) * 1000
    with open(args.out, "w", encoding="utf-8") as out:
        out.write(json.dumps({"meta": {"index_ms": round(index_ms)}}) + "\n")
        for line in Path(args.queries).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            started = time.perf_counter()
            results = search(files, item["query"], args.k)
            out.write(json.dumps({"id": item["id"], "results": results, "latency_ms": round(
                (time.perf_counter() - started) * 1000, 2)}) + "\n")


def _search(args: argparse.Namespace) -> None:
    print(json.dumps({"results": search(source_files(Path(args.root)), args.query, args.limit)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    bat = sub.add_parser("batch", help="semble-bench batch protocol for one repository")
    bat.add_argument("--root", required=True)
    bat.add_argument("--queries", required=True)
    bat.add_argument("--out", required=True)
    bat.add_argument("-k", type=int, default=10)
    bat.set_defaults(run=_batch)
    one = sub.add_parser("search", help="one query; prints the results JSON")
    one.add_argument("query")
    one.add_argument("--root", default=".")
    one.add_argument("--limit", type=int, default=10)
    one.set_defaults(run=_search)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
