"""Shared fixtures: every test gets its own KENNING_HOME and config file, never the user's."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from embed_server import embed_server, local_model  # noqa: F401 - fixtures for every test file

# The embedding service outlives the process that starts it: none is started unless a test
# asks (tests/test_embedding_service.py), whatever the scope of a fixture that runs kenning.
os.environ["KENNING_EMBEDDER_SERVICE"] = "false"

# helper modules that test modules import and also load as fixture plugins
pytest.register_assert_rewrite("index_helpers", "search_fixtures", "shared_helpers")


@pytest.hookimpl(optionalhook=True)  # xdist's hook: unknown under `-p no:xdist`
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker more than the cores, since the tests wait on subprocesses, servers
    and the disk much of the time (``--maxprocesses`` still caps it)."""
    from kenning.embedding.local import _usable_cores

    return _usable_cores() + 1


@pytest.fixture(autouse=True)
def isolated_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("kenning-home")
    monkeypatch.setenv("KENNING_HOME", str(home / "data"))
    monkeypatch.setenv("KENNING_CONFIG", str(home / "config.toml"))
    for name in list(os.environ):
        if name.startswith("KENNING_") and name not in {"KENNING_HOME", "KENNING_CONFIG",
                                                        "KENNING_KERNELS", "KENNING_RUNTIME",
                                                        "KENNING_EMBEDDER_SERVICE"}:
            monkeypatch.delenv(name)
    yield home
    if (Path(os.environ.get("KENNING_HOME", home)) / "run").is_dir():  # none outlives its test
        from kenning.embedding.service_client import stop_services

        stop_services()


@pytest.fixture(autouse=True)
def fresh_process_caches() -> Iterator[None]:
    """After each test, the process-global state of the modules it loaded starts afresh: the
    shared freshness policies, the kept read connections and maps, the scan pool. A test must
    not pass because an earlier one left a connection, a refresh time or a worker behind."""
    yield
    import sys

    if (freshness := sys.modules.get("kenning.services.freshness")) is not None:
        freshness._shared.clear()
    if (store := sys.modules.get("kenning.store")) is not None:
        store._readers.drop_all()
    if "kenning.retrieval.snapshot_source" in sys.modules:
        from kenning.retrieval import snapshot_source as scans

        with scans._scans_lock:
            pool, scans._scans = scans._scans, None
        if pool is not None:
            pool.shutdown(wait=True)


@pytest.fixture
def graph_searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the searches answered by the approximate-search graph (the real one, only
    observed): one entry per search, the rows of the graph that answered it."""
    from kenning.store import ann

    calls: list[int] = []
    real = ann.AnnIndex.search

    def counted(self: ann.AnnIndex, *args: Any, **kwargs: Any) -> Any:
        calls.append(len(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ann.AnnIndex, "search", counted)
    return calls


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME, with no client's folder moved elsewhere: where agents keep their files."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return home
