"""A new chunker or schema version makes a new index; the chunks whose text did not change keep
the vectors the earlier index of the same model holds, row for row, and are not embedded."""

from __future__ import annotations

import numpy as np
from index_helpers import CountingEmbedder, check_consistent
from kenning import project
from kenning.indexing.indexer import refresh
from kenning.store import Index
from kenning.store.vectors import names

pytest_plugins = ["index_helpers"]  # fixtures: model, settings, repo


def _rows_by_hash(index: Index) -> dict[bytes, tuple[bytes, bytes, float]]:
    with index.snapshot() as snap:
        hashes = [bytes(row[11]) for row in snap.chunks_to_publish(sorted(snap.file_digests()))]
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
