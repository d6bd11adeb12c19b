"""``kenning mcp`` as an agent meets it: ``python benchmarks/mcp_roundtrip.py [ROOT]``.

Spawns the server over stdio with the SDK's client (KENNING_HOME in a temporary directory
unless set), then reports: the time to a completed ``initialize``, the first ``code_search``
(which indexes ROOT, default this repository, and loads the model), and the median of warm
searches (refresh included: one stat pass each) over a fixed set of queries. It asserts every
call succeeded, never a time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

QUERIES = ["how are search results ranked", "where is the index lock taken",
           "parse a chunk id", "embedding requests retried with backoff",
           "untrusted content wrapper", "token budget of a tool result",
           "refresh before each search", "path filter escaping the root"]


async def measure(root: Path, home: Path, rounds: int) -> dict[str, float]:
    env = {"KENNING_HOME": str(home), "KENNING_CONFIG": str(home / "config.toml"),
           "KENNING_MCP_REFRESH_INTERVAL": "0"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "kenning", "mcp"],
                                   env=env, cwd=str(root))
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        ready = time.perf_counter()
        first = await session.call_tool("code_search", {"query": QUERIES[0]})
        assert not first.is_error, first.content
        indexed = time.perf_counter()
        reindex = await session.call_tool("code_reindex", {})  # wait out background embedding
        assert not reindex.is_error, reindex.content
        warm = []
        for _ in range(rounds):
            for query in QUERIES:
                t = time.perf_counter()
                result = await session.call_tool("code_search", {"query": query})
                warm.append(time.perf_counter() - t)
                assert not result.is_error, result.content
    return {"initialize_s": ready - started, "first_search_s": indexed - ready,
            "warm_search_p50_ms": 1000 * statistics.median(warm),
            "warm_search_p90_ms": 1000 * statistics.quantiles(warm, n=10)[-1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kenning-mcp-bench-") as tmp:
        home = Path(os.environ.get("KENNING_HOME") or tmp)
        figures = anyio.run(measure, Path(args.root).resolve(), home, args.rounds)
    for name, value in figures.items():
        print(f"{name:>20}: {value:8.2f}")


if __name__ == "__main__":
    main()
