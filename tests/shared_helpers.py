"""The engine the shared-index tests run on: milvus-lite in a file of the test's (``shared_uri``)
or of the test module's (``module_shared_uri``: tests that publish projects of their own share
one embedded engine, which costs seconds to start), or the server named by
KENNING_TEST_MILVUS_URI, from which what the tests published is removed afterwards (test modules
load the fixtures with ``pytest_plugins = ["shared_helpers"]``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kenning.shared import Engine

MILVUS_URI = os.environ.get("KENNING_TEST_MILVUS_URI")  # read before the fixtures clear it


def require_engine() -> None:
    pytest.importorskip("pymilvus")
    if not MILVUS_URI:
        pytest.importorskip("milvus_lite")


@contextmanager
def engine_at(folder: Path, projects_under: Path) -> Iterator[str]:
    """An engine: milvus-lite in a file in ``folder``, stopped afterwards, or the test server,
    from which the projects published from under ``projects_under`` go afterwards."""
    from kenning.store.shared_engine import release_all

    try:
        yield MILVUS_URI or str(folder / "shared.db")
        if MILVUS_URI:
            _remove_published(folder, projects_under)
    finally:
        release_all()  # stop the embedded engine (or close the connection)


def _remove_published(folder: Path, base: Path) -> None:
    from kenning import config
    from kenning.embedding import make_embedder
    from kenning.shared import Engine, remove
    from kenning.store import make_descriptor

    with pytest.MonkeyPatch.context() as patch:  # a module's fixture outlives a test's env
        patch.setenv("KENNING_CONFIG", str(folder / "cleanup.toml"))
        settings = config.load({"shared.uri": str(MILVUS_URI)})
        embedder = make_embedder(settings)
        with Engine(settings, make_descriptor(embedder)) as engine:
            heads = (engine.query(engine.manifest, 'kind == "head"', ["project", "info"],
                                  "listing") if engine.exists() else [])
        for head in heads:
            if str(json.loads(head["info"]).get("root", "")).startswith(str(base)):
                remove(settings, head["project"], embedder=embedder)
        embedder.close()


@pytest.fixture
def shared_uri(tmp_path: Path) -> Iterator[str]:
    with engine_at(tmp_path, tmp_path) as uri:
        yield uri


@pytest.fixture(scope="module")
def module_shared_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # the module's tests publish projects of their own, each under its test's folder
    with engine_at(tmp_path_factory.mktemp("shared"), tmp_path_factory.getbasetemp()) as uri:
        yield uri


def head_of(engine: Engine, project: str) -> dict[str, Any]:
    """The head row of ``project``, which must have been published."""
    from kenning.shared import read_head

    head = read_head(engine, project)
    assert head is not None, f"{project} was never published"
    return head
