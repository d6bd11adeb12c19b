"""The vector scan on a worker thread (large indexes) gives exactly the results of the scan
run inline, with filters too, and from several searching threads at once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pytest
from kenning import config
from kenning.retrieval import dense, resolve_projects, snapshot_source
from kenning.services.search import search

if TYPE_CHECKING:
    from search_fixtures import Indexed

pytest_plugins = ["search_fixtures"]  # the indexed fixture repositories

CASES = [("how long to wait before trying a failed request again", {}),
         ("evict the least recently used entries", {"path_filter": "src/*"}),
         ("parse a header line", {"language": "python"}),
         ("HttpClient.send", {}),
         ("verify that a password matches the stored digest", {"kind": "function"})]


def _results(indexed: Indexed, query: str, filters: dict[str, str]) -> list[tuple]:
    refs = resolve_projects(config.load(), [indexed.root])
    found = search(query, refs, settings=config.load(), refresh=False, **filters)  # type: ignore[arg-type]
    return [(r["id"], r["score"]) for r in found["results"]]


def test_the_threaded_scan_gives_the_inline_results(indexed: Indexed,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    inline = [_results(indexed, q, f) for q, f in CASES]
    assert all(inline)
    monkeypatch.setattr(snapshot_source, "OVERLAP_ROWS", 0)
    scanned_in: set[str] = set()
    scan = dense.search

    def spied(*args: Any, **kwargs: Any) -> Any:
        scanned_in.add(threading.current_thread().name)
        return scan(*args, **kwargs)

    monkeypatch.setattr(dense, "search", spied)
    assert [_results(indexed, q, f) for q, f in CASES] == inline
    assert scanned_in and all(name.startswith("kenning-scan") for name in scanned_in)
    with ThreadPoolExecutor(max_workers=4) as pool:  # the MCP server searches from threads
        together = list(pool.map(lambda case: _results(indexed, *case), CASES * 4))
    assert together == inline * 4
