"""Result ids of a published project name the chunk they say, after the local index was built
anew: its chunk ordinals start over, so a publish sends every file again, not only the changed
ones (milvus-lite, a file of its own for the module, or KENNING_TEST_MILVUS_URI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from index_helpers import make_repo
from kenning import config
from kenning.cli.publish_cmd import summary
from kenning.errors import StaleChunkId
from kenning.indexing.indexer import refresh
from kenning.retrieval import ProjectRef
from kenning.services import index_admin
from kenning.services.chunks import get_chunk
from kenning.services.search import search
from kenning.shared import Engine, publish, publishing, reads
from kenning.store import Index
from kenning.store.shared_engine import release_all
from shared_helpers import head_of, require_engine

require_engine()
pytest_plugins = ["index_helpers", "shared_helpers"]

SPAN = ("path", "start_line", "end_line", "start_byte", "end_byte")


@pytest.fixture
def shared(module_shared_uri: str, monkeypatch: pytest.MonkeyPatch) -> config.Settings:
    monkeypatch.setenv("KENNING_SHARED_URI", module_shared_uri)
    return config.load({"embedder.batch_size": "8", "embedder.concurrency": "1"})


def _files(topic: str) -> dict[str, str]:
    """A small project of its own per test (the tests share one engine)."""
    return {
        f"{topic}/ledger.py": (f"def post_{topic}_entry(book, entry):\n"
                               f'    """Append a {topic} entry to the ledger book."""\n'
                               "    book.append(entry)\n    return len(book)\n"),
        f"{topic}/audit.py": (f"def audit_{topic}_totals(book):\n"
                              f'    """Check that the {topic} debits equal the credits."""\n'
                              "    return sum(e.amount for e in book) == 0\n"),
        f"{topic}/rates.py": (f"def {topic}_exchange_rate(a, b):\n"
                              f'    """The {topic} rate between two currencies."""\n'
                              "    return a / b\n"),
        "README.md": f"# {topic.title()}\n\nPosting and auditing {topic} entries.\n",
    }


def _published_then_rebuilt(shared: config.Settings, model: Any, root: Path) -> tuple[str, str]:
    """Index (with an edit, so the first index's ordinals run past the second's), publish,
    then remove the local index and build it again; the old and new index tokens."""
    assert refresh(root, shared, embedder=model).status == "complete"
    audit = next(root.glob("*/audit.py"))
    audit.write_text(audit.read_text() + "\n\ndef audit_count(book):\n    return len(book)\n")
    publish(root, shared, embedder=model)
    old = _token(shared, model, root)
    index_admin.remove(root, shared)
    assert refresh(root, shared, embedder=model).status == "complete"
    new = _token(shared, model, root)
    assert new != old
    return old, new


def _token(settings: config.Settings, model: Any, root: Path) -> str:
    with Index.open(root, settings, embedder=model).snapshot() as snap:
        return str(snap.token)


def _rows(settings: config.Settings, model: Any, root: Path) -> tuple[str, list[dict]]:
    index = Index.open(root, settings, embedder=model)
    with Engine(settings, index.descriptor) as engine:
        head = reads.published(engine, [index.project_id])[index.project_id]
        rows = engine.query(engine.chunks, f'project == "{index.project_id}"',
                            ["ordinal", "text", *SPAN], "reading")
    return index.project_id, [{**r, "id": head.chunk_id(r["ordinal"])} for r in rows]


def _assert_ids_name_their_rows(settings: config.Settings, model: Any, root: Path,
                                query: str, elsewhere: Path) -> None:
    pid, rows = _rows(settings, model, root)
    with Index.open(root, settings, embedder=model).snapshot() as snap:
        assert len(rows) == snap.chunks
    here = [ProjectRef(pid, root)]
    for row in rows:  # through the local index: the chunk its id names is the row's
        local = get_chunk(row["id"], here, settings=settings, embedder=model, scope="chunk")
        assert {k: local[k] for k in SPAN} == {k: row[k] for k in SPAN}
        assert local["content"] == row["text"]
    shared = config.load({"search.backend": "shared", "embedder.batch_size": "8"})
    hits = search(query, here, settings=shared, embedder=model,
                  shared_projects=[pid])["results"]
    assert hits
    away = [ProjectRef(pid, elsewhere)]  # no index of the project there: the engine answers
    for hit in hits:
        got = get_chunk(hit["id"], away, settings=shared, embedder=model, scope="chunk")
        # a hit spans its unit, as locally (here: short siblings together), which holds the
        # chunk its id names
        assert got["path"] == hit["path"]
        assert hit["start_byte"] <= got["start_byte"] and got["end_byte"] <= hit["end_byte"]
        assert got["content"] in hit["content"]


def test_a_rebuilt_local_index_is_published_again_whole(shared: config.Settings, model: Any,
                                                         tmp_path: Path):
    root = make_repo(tmp_path / "books", _files("bookkeeping"))
    _published_then_rebuilt(shared, model, root)
    _, before = _rows(shared, model, root)
    dry = publish(root, shared, embedder=model, dry_run=True)
    assert dry.resend_all and (dry.files_added, dry.files_changed) == (0, 4)
    assert dry.chunks_sent == len(before) and _rows(shared, model, root)[1] == before
    assert "every file is sent again" in summary(dry.to_dict())
    index = Index.open(root, shared, embedder=model)
    with index.snapshot() as snap, Engine(shared, index.descriptor) as engine:
        assert publishing.unpublished(engine, snap, index.project_id) == {
            "added": 0, "changed": 4, "removed": 0}  # what status says is to publish
    done = publish(root, shared, embedder=model)
    assert done.resend_all and (done.generation, done.files_changed) == (2, 4)
    _assert_ids_name_their_rows(shared, model, root, "check that the debits equal the credits",
                                tmp_path)
    again = publish(root, shared, embedder=model)  # the same index again: incremental
    assert again.nothing_changed and again.resend_all is None and again.generation == 2


def test_a_killed_republish_of_a_rebuilt_index_converges(shared: config.Settings, model: Any,
                                                         tmp_path: Path):
    root = make_repo(tmp_path / "treasury", _files("treasury"))
    old, new = _published_then_rebuilt(shared, model, root)
    _, before = _rows(shared, model, root)
    release_all()  # an embedded engine's file is for one process at a time
    env = {**os.environ, "KENNING_TEST_KILL_AT": "chunks-sent"}
    killed = subprocess.run([sys.executable, "-m", "kenning", "publish", str(root)], env=env,
                            capture_output=True, text=True, timeout=240)
    assert killed.returncode == -9, killed.stderr
    index = Index.open(root, shared, embedder=model)
    with Engine(shared, index.descriptor) as engine:
        head = head_of(engine, index.project_id)
    assert head["index_token"] == old and head["resending"]  # not the new token over old rows
    shared_only = config.load({"search.backend": "shared", "embedder.batch_size": "8"})
    with pytest.raises(StaleChunkId, match="being published again"):
        get_chunk(before[0]["id"], [ProjectRef(index.project_id, tmp_path)],
                  settings=shared_only, embedder=model)
    done = publish(root, shared, embedder=model)
    assert done.resend_all and done.generation == 2
    with Engine(shared, index.descriptor) as engine:
        head = head_of(engine, index.project_id)
    assert head["index_token"] == new and not head.get("resending")
    _assert_ids_name_their_rows(shared, model, root, "the rate between two currencies",
                                tmp_path)
