"""The engine the shared-index tests run on: milvus-lite in a file of each test's own, or the
server named by KENNING_TEST_MILVUS_URI, from which each test removes what it published (test
modules load the fixture ``shared_uri`` with ``pytest_plugins = ["shared_helpers"]``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

MILVUS_URI = os.environ.get("KENNING_TEST_MILVUS_URI")  # read before the fixtures clear it


def require_engine() -> None:
    pytest.importorskip("pymilvus")
    if not MILVUS_URI:
        pytest.importorskip("milvus_lite")


@pytest.fixture
def shared_uri(tmp_path: Path) -> Iterator[str]:
    from kenning.shared.engine import release_all

    if not MILVUS_URI:
        yield str(tmp_path / "shared.db")
        release_all()  # stop the test's embedded engine
        return
    yield MILVUS_URI
    from kenning import config
    from kenning.embedding import make_embedder
    from kenning.shared import Engine, remove
    from kenning.store import make_descriptor

    settings = config.load({"shared.uri": MILVUS_URI})
    embedder = make_embedder(settings)
    with Engine(settings, make_descriptor(embedder)) as engine:
        heads = (engine.query(engine.manifest, 'kind == "head"', ["project", "info"], "listing")
                 if engine.exists() else [])
    for head in heads:
        if str(json.loads(head["info"]).get("root", "")).startswith(str(tmp_path)):
            remove(settings, head["project"], embedder=embedder)
    embedder.close()
    release_all()
