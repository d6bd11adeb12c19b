"""How many search results are declarations too long to read whole, and what get_chunk returns
for them: on the semble-bench dev split (indexes as eval_quality.py leaves them, not refreshed).

    python benchmarks/result_sizes.py [--repos-dir /tmp/semble-bench/repos] [-k 10]

Prints the share of the first k results whose declaration spans more than get_chunk's size
limit (before the limit, get_chunk returned each of those whole), the share whose get_chunk
content is over the limit now, and the longest content get_chunk returned.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

SPLIT = Path("/work/shared/eval/semble-bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos-dir", default="/tmp/semble-bench/repos")
    parser.add_argument("--split", default=str(SPLIT))
    parser.add_argument("-k", type=int, default=10)
    args = parser.parse_args()
    os.environ.setdefault("KENNING_HOME", "/tmp/kenning-eval-home")
    os.environ.setdefault("KENNING_CONFIG", "/tmp/kenning-eval-home/config.toml")
    from kenning import config
    from kenning.embedding import make_embedder
    from kenning.errors import IndexMissing
    from kenning.retrieval import ProjectRef
    from kenning.services.chunks import CHUNK_MAX_LINES, get_chunk
    from kenning.services.search import search

    settings = config.load()
    embedder = make_embedder(settings)
    split = Path(args.split)
    specs = {s["name"]: s for name in ("repos.json", "repos_extra.json")
             for s in json.loads((split / name).read_text())}
    results = long_spans = long_contents = longest = 0
    for marked in sorted((split / "annotations").glob("*.json")):
        spec = specs.get(marked.stem)
        root = Path(args.repos_dir) / marked.stem / ((spec or {}).get("benchmark_root") or "")
        if spec is None or not root.is_dir():
            continue
        refs = [ProjectRef(marked.stem, root.resolve())]
        for item in json.loads(marked.read_text()):
            try:
                found = search(item["query"], refs, settings=settings, limit=args.k,
                               refresh=False, embedder=embedder)["results"]
            except IndexMissing:
                print(f"{marked.stem}: not indexed, left out")
                break
            for hit in found:
                results += 1
                if hit["end_line"] - hit["start_line"] + 1 > CHUNK_MAX_LINES:
                    long_spans += 1
                    lines = len(get_chunk(hit["id"], refs, settings=settings)["content"]
                                .splitlines())
                    long_contents += lines > CHUNK_MAX_LINES
                    longest = max(longest, lines)
    print(f"results {results}; declarations over {CHUNK_MAX_LINES} lines: {long_spans} "
          f"({100 * long_spans / max(results, 1):.2f}%), returned whole by get_chunk before; "
          f"get_chunk content over the limit now: {long_contents} "
          f"({100 * long_contents / max(results, 1):.2f}%), longest {longest} lines")


if __name__ == "__main__":
    main()
