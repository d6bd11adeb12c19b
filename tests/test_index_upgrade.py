"""A new chunker or schema version makes a new index; the chunks whose text did not change keep
the vectors the earlier index of the same model holds, row for row, and are not embedded."""

from __future__ import annotations

from typing import cast

import numpy as np
from index_helpers import CountingEmbedder, check_consistent
from kenning import project
from kenning.indexing.indexer import refresh
from kenning.store import Index
from kenning.store.vectors import names

pytest_plugins = ["index_helpers"]  # fixtures: model, settings, repo


def _rows_by_hash(index: Index) -> dict[bytes, tuple[bytes, bytes, float]]:
    with index.snapshot() as snap:
        rows = snap.chunks_to_publish(sorted(snap.file_digests()))
        hashes = [bytes(cast(bytes, row[11])) for row in rows]
        found = snap.vectors_of_hashes(hashes)
        return {h: (snap.bits[i].tobytes(), snap.int8[i].tobytes(), float(snap.scales[i]))
                for h, i in found.items()}


def _built_by_an_earlier_version(repo, settings, model, monkeypatch) -> Index:
    with monkeypatch.context() as patched:
        patched.setattr(project, "SCHEMA_VERSION", project.SCHEMA_VERSION - 1)
        refresh(repo, settings, embedder=model)
        return Index.open(repo, settings, embedder=model)


def test_an_upgrade_keeps_the_vectors_of_unchanged_chunks(repo, settings, model, monkeypatch):
    earlier = _built_by_an_earlier_version(repo, settings, model, monkeypatch)
    (repo / "app" / "new_module.py").write_text("def brand_new_helper():\n    return 42\n")
    counting = CountingEmbedder(model)
    result = refresh(repo, settings, embedder=counting)
    index = Index.open(repo, settings, embedder=model)
    assert index.dir != earlier.dir
    assert check_consistent(index)["status"] == "complete"
    before, after = _rows_by_hash(earlier), _rows_by_hash(index)
    assert result.vectors_reused == len(before) > 0
    # only the new file's chunk is embedded; every other row is the earlier index's
    assert result.vectors_embedded == len(counting.texts) == len(after) - len(before)
    assert all("brand_new_helper" in text for text in counting.texts)
    assert {h: after[h] for h in before} == before


def test_only_an_index_of_the_same_vectors_lends_them(repo, settings, model, monkeypatch):
    earlier = _built_by_an_earlier_version(repo, settings, model, monkeypatch)
    made = Index(earlier.root, earlier.project_id, {**earlier.descriptor,
                                                    "schema_version": project.SCHEMA_VERSION},
                 earlier.dir.parent.parent / "elsewhere" / earlier.project_id)
    assert [i.dir for i in made.earlier()] == [earlier.dir]
    for key, other in (("model", "another-model"), ("dims", 768), ("document_prefix", "doc: ")):
        unlike = Index(made.root, made.project_id, {**made.descriptor, key: other}, made.dir)
        assert unlike.earlier() == [], key


def test_a_damaged_earlier_index_means_embedding(repo, settings, model, monkeypatch):
    earlier = _built_by_an_earlier_version(repo, settings, model, monkeypatch)
    for name in names():
        (earlier.dir / name).write_bytes(b"")  # its vector files cut to nothing
    counting = CountingEmbedder(model)
    result = refresh(repo, settings, embedder=counting)
    index = Index.open(repo, settings, embedder=model)
    assert result.vectors_reused == 0 and result.vectors_embedded == len(counting.texts) > 0
    assert check_consistent(index)["status"] == "complete"
    with index.snapshot() as snap:
        assert np.count_nonzero(snap.scales) == snap.vector_rows


def test_an_upgrade_killed_at_random_points_of_its_reuse_converges(repo, settings, model,
                                                                   monkeypatch):
    """The upgrade's `kenning index` (reusing in blocks of 2 rows, so the reuse has several
    commits) is SIGKILLed at four points drawn at random, in the order a run reaches them;
    every kill leaves a consistent index, and the run after the last one ends with the earlier
    index's rows, row for row, having embedded nothing."""
    import os
    import random
    import signal
    import subprocess
    import sys

    earlier = _built_by_an_earlier_version(repo, settings, model, monkeypatch)
    before = _rows_by_hash(earlier)
    blocks = (len(before) + 1) // 2
    assert blocks >= 4
    # (stage, block): a block's rows are written, then committed; counted from the first
    stages = [("files-written", 0), ("chunks-committed", 0),
              *((stage, n) for n in range(1, blocks + 1)
                for stage in ("vectors-written", "batch-committed"))]
    start = ("from kenning.indexing import indexer; indexer.REUSE_BLOCK = 2; import runpy; "
             "runpy.run_module('kenning', run_name='__main__', alter_sys=True)")
    committed = 0  # blocks committed by the runs killed so far
    for stage, block in sorted(random.Random(47).sample(stages, 4), key=stages.index):
        point = f"{stage}:{block - committed}" if block else stage  # n-th of this run's blocks
        killed = subprocess.run([sys.executable, "-c", start, "index", str(repo)],
                                env={**os.environ, "KENNING_TEST_KILL_AT": point},
                                capture_output=True, text=True, timeout=240)
        assert killed.returncode == -signal.SIGKILL, (point, killed.stderr)
        committed = block - (stage == "vectors-written") if block else committed
        if stage != "files-written":  # the new index's first commit is made by then
            index = Index.open(repo, settings, embedder=model)
            assert index.dir != earlier.dir
            check_consistent(index)
    counting = CountingEmbedder(model)
    result = refresh(repo, settings, embedder=counting)
    index = Index.open(repo, settings, embedder=model)
    assert check_consistent(index)["status"] == "complete"
    assert counting.texts == [] and result.vectors_embedded == 0
    assert _rows_by_hash(index) == before
