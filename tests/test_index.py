"""Incremental refresh: only changed files are re-read, only unseen chunk texts are embedded."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest
from index_helpers import CountingEmbedder, check_consistent, git, make_repo
from kenning import config, kernels
from kenning.embedding import document_text, make_embedder
from kenning.errors import EmbedderUnavailable
from kenning.indexing.indexer import chunk_budget, refresh
from kenning.project import git_state
from kenning.store import Index, Snapshot

pytest_plugins = ["index_helpers"]  # fixtures: model, settings, repo


def test_first_index_commits_every_chunk_with_a_vector(repo, settings, model):
    emb = CountingEmbedder(model)
    result = refresh(repo, settings, embedder=emb)
    index = Index.open(repo, settings, embedder=emb)
    state = check_consistent(index)
    assert result.files_added == 5 and result.files == 5
    assert state["status"] == "complete" and state["generation"] == 1 == result.generation
    assert state["chunks"] == result.chunks > 0 and state["vectors"] == state["chunks"]
    assert len(emb.texts) == state["rows"] == result.vectors_embedded
    with index.snapshot() as snap:
        assert snap.revision == git(repo, "rev-parse", "HEAD")
        assert snap.branch == "main"
        # the lexical table holds code-aware tokens of text, symbol and path
        hit = snap.lexical_top(["backoff"], {}, 10)
        assert [row.path for row in snap.chunk_rows([cid for cid, _ in hit])] == ["app/server.py"]
        split = snap.symbol_matches(["parse"], 10)  # `parseHeader` is the tokens parse, header
        assert [symbol for _, symbol in split] == ["parseHeader"]
        assert [s for _, s in snap.symbol_matches(["header"], 10)] == ["parseHeader"]
        by_path = snap.lexical_top(["guide"], {"body": 0.0, "symbol": 0.0}, 10)
        assert by_path  # the path's words are in the table too


def test_vectors_belong_to_their_chunks(repo, settings, model):
    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    with index.snapshot() as snap:
        rows = snap._conn.execute("SELECT c.path, c.start_byte, c.end_byte, v.vector_id "
                                 "FROM chunks c JOIN vectors v USING (content_hash)").fetchall()
        texts = [document_text(p, (repo / p).read_bytes()[s:e].decode()) for p, s, e, _ in rows]
        expected = model.embed_documents(texts)
        ids = [r[3] for r in rows]
        assert np.array_equal(snap.bits[ids], kernels.binarize(expected))
        approx = snap.int8[ids].astype(np.float32) * snap.scales[ids][:, None]
        cosine = (approx * expected).sum(axis=1) / np.linalg.norm(approx, axis=1)
        assert cosine.min() > 0.99
        assert snap.center is None


def test_unchanged_tree_does_no_work(repo, settings, model):
    refresh(repo, settings, embedder=model)
    emb = CountingEmbedder(model)
    db_file = Index.open(repo, settings, embedder=model).dir / "index.db"
    before = db_file.stat().st_mtime_ns
    result = refresh(repo, settings, embedder=emb)
    assert result.nothing_changed and result.generation == 1
    assert emb.texts == [] and "hash" not in result.timings and "chunk" not in result.timings
    assert db_file.stat().st_mtime_ns == before


def test_touched_file_is_rehashed_once_and_not_rechunked(repo, settings, model):
    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    with index.snapshot() as snap:
        ids = snap.file_chunks(["app/db.py"])
    target = repo / "app" / "db.py"
    os.utime(target, ns=(time.time_ns(), time.time_ns() + 10**9))
    emb = CountingEmbedder(model)
    result = refresh(repo, settings, embedder=emb)
    assert result.nothing_changed and emb.texts == [] and result.generation == 1
    with index.snapshot() as snap:
        assert snap.file_chunks(["app/db.py"]) == ids  # not re-chunked
    assert refresh(repo, settings, embedder=emb).timings.get("hash") is None  # stat data stored


def _chunk_ids(snap: Snapshot, *, but: str) -> set[int]:
    """The ids of the chunks of every file but ``but``."""
    others = [path for path in snap.file_states() if path != but]
    return {chunk.id for chunks in snap.file_chunks(others).values() for chunk in chunks}


def test_edit_reembeds_only_new_chunk_texts(repo, settings, model):
    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    with index.snapshot() as snap:
        old_ids = _chunk_ids(snap, but="app/db.py")
    path = repo / "app" / "db.py"
    path.write_text(path.read_text() + "\n\ndef vacuum(conn):\n    conn.execute('VACUUM')\n")
    emb = CountingEmbedder(model)
    result = refresh(repo, settings, embedder=emb)
    assert (result.files_changed, result.files_added, result.files_removed) == (1, 0, 0)
    assert result.generation == 2
    assert 1 <= len(emb.texts) <= result.chunks_added
    assert all(t.startswith("Filepath: app/db.py\n") for t in emb.texts)
    state = check_consistent(index)
    assert state["status"] == "complete"
    with index.snapshot() as snap:
        assert _chunk_ids(snap, but="app/db.py") == old_ids  # other files' chunks keep their ids
        assert snap.fts_count("vacuum", 10) == 1


def test_add_and_delete(repo, settings, model):
    refresh(repo, settings, embedder=model)
    (repo / "lib" / "util.js").unlink()
    (repo / "app" / "cache.py").write_text("def lru(size):\n    return {}\n")
    emb = CountingEmbedder(model)
    result = refresh(repo, settings, embedder=emb)
    assert (result.files_added, result.files_removed, result.files_changed) == (1, 1, 0)
    assert len(emb.texts) == result.chunks_added >= 1
    index = Index.open(repo, settings, embedder=model)
    check_consistent(index)
    with index.snapshot() as snap:
        paths = set(snap.file_chunks(list(snap.file_states())))  # the files that have chunks
        assert "lib/util.js" not in paths and "app/cache.py" in paths
        # the emptied directory's cluster is gone
        assert set(snap.cluster_digests()) == {"", "app", "docs"}


def test_rename_costs_no_embedding(repo, settings, model):
    refresh(repo, settings, embedder=model)
    (repo / "app" / "server.py").rename(repo / "app" / "http_server.py")
    emb = CountingEmbedder(model)
    result = refresh(repo, settings, embedder=emb)
    assert (result.files_added, result.files_removed) == (1, 1)
    assert emb.texts == [] and result.status == "complete"
    check_consistent(Index.open(repo, settings, embedder=model))


def test_revert_and_duplicates_cost_nothing(repo, settings, model):
    refresh(repo, settings, embedder=model)
    path = repo / "app" / "db.py"
    original = path.read_text()
    path.write_text(original.replace("WAL", "DELETE"))
    first = CountingEmbedder(model)
    refresh(repo, settings, embedder=first)
    assert first.texts
    path.write_text(original)
    (repo / "copy_of_db.py").write_text(original)
    again = CountingEmbedder(model)
    result = refresh(repo, settings, embedder=again)
    assert again.texts == [] and result.files_changed == 1 and result.files_added == 1
    check_consistent(Index.open(repo, settings, embedder=model))


def test_branch_switch_back_costs_nothing(repo, settings, model):
    refresh(repo, settings, embedder=model)
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "app" / "server.py").write_text("def stop_server():\n    pass\n")
    (repo / "feature.py").write_text("FLAG = True\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "feature")
    on_feature = refresh(repo, settings, embedder=model)
    assert on_feature.branch == "feature" and on_feature.revision == git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    emb = CountingEmbedder(model)
    back = refresh(repo, settings, embedder=emb)
    assert back.branch == "main" and back.files_removed == 1 and back.files_changed == 1
    assert emb.texts == []
    check_consistent(Index.open(repo, settings, embedder=model))


def test_commit_without_file_changes_updates_revision_only(repo, settings, model):
    refresh(repo, settings, embedder=model)
    git(repo, "commit", "-q", "--allow-empty", "-m", "empty")
    result = refresh(repo, settings, embedder=model)
    assert result.nothing_changed and result.generation == 1
    with Index.open(repo, settings, embedder=model).snapshot() as snap:
        assert snap.revision == git(repo, "rev-parse", "HEAD")


def test_embedder_failure_keeps_the_snapshot_and_resumes(repo, settings, model):
    failing = CountingEmbedder(model, fail_after=4)
    with pytest.raises(EmbedderUnavailable) as err:
        refresh(repo, settings, embedder=failing)
    assert "resume" in (err.value.hint or "")
    index = Index.open(repo, settings, embedder=model)
    state = check_consistent(index)
    assert state["status"] == "partial" and state["rows"] == 4 and state["chunks"] > 4
    resumed = CountingEmbedder(model)
    result = refresh(repo, settings, embedder=resumed)
    assert len(resumed.texts) == state["chunks"] - 4 == result.vectors_embedded
    assert not set(resumed.texts) & set(failing.texts)
    assert check_consistent(index)["status"] == "complete" and result.status == "complete"


def test_embed_false_commits_chunks_then_vectors_follow(repo, settings, model):
    emb = CountingEmbedder(model)
    first = refresh(repo, settings, embedder=emb, embed=False)
    assert emb.texts == [] and first.status == "partial" and first.vectors_missing == first.chunks
    second = refresh(repo, settings, embedder=emb)
    assert second.vectors_embedded == first.chunks and second.status == "complete"
    assert second.generation == first.generation  # vectors complete a snapshot, no new one


def test_full_rechunks_but_reuses_vectors(repo, settings, model):
    refresh(repo, settings, embedder=model)
    emb = CountingEmbedder(model)
    result = refresh(repo, settings, embedder=emb, full=True)
    assert emb.texts == [] and result.chunks_added == result.chunks


def test_lock_held_means_busy_and_wait_waits(repo, settings, model):
    refresh(repo, settings, embedder=model)
    index = Index.open(repo, settings, embedder=model)
    (repo / "new.py").write_text("def added():\n    return 1\n")
    with index.writer():
        assert refresh(repo, settings, embedder=model).busy
        outcome: dict[str, object] = {}
        blocked = threading.Event()

        def progress(event: dict[str, object]) -> None:
            if event["type"] == "waiting":
                blocked.set()

        waiter = threading.Thread(target=lambda: outcome.setdefault(
            "result", refresh(repo, settings, embedder=model, wait=True, progress=progress)))
        waiter.start()
        assert blocked.wait(timeout=60)
        # written once the waiter has found the lock held: a waiter that went on without the
        # lock would have walked the tree before it; one that waited walks it after
        (repo / "late.py").write_text("def later():\n    return 2\n")
        assert "result" not in outcome
    waiter.join(timeout=60)
    result = outcome["result"]
    assert not result.busy and result.files_added == 2  # type: ignore[attr-defined]


def test_descriptor_change_is_a_new_index(repo, settings, model):
    refresh(repo, settings, embedder=model)
    other = CountingEmbedder(model, model="all-MiniLM-L6-v2-variant")
    result = refresh(repo, settings, embedder=other)
    assert result.index_dir != str(Index.open(repo, settings, embedder=model).dir)
    assert result.files_added == 5 and len(other.texts) == result.chunks


def test_document_prefix_change_is_a_new_index(repo, settings, model):

    prefixed = make_embedder(config.load({"embedder.document_prefix": "passage: "}))
    assert prefixed.descriptor()["document_prefix"] == "passage: "
    plain_dir = Index.open(repo, settings, embedder=model, create=True).dir
    assert Index.open(repo, settings, embedder=prefixed, create=True).dir != plain_dir


def test_centering_model_stores_a_fixed_center(repo, settings, model):
    emb = CountingEmbedder(model, needs_centering=True, model="centred-variant")
    refresh(repo, settings, embedder=emb)
    index = Index.open(repo, settings, embedder=emb)
    with index.snapshot() as snap:
        assert snap.center is not None and snap.center.shape == (384,)
        first = model.embed_documents(emb.texts[:4])
        assert np.allclose(snap.center, first.mean(axis=0), atol=1e-5)
        assert np.array_equal(snap.bits[:len(emb.texts)],
                              kernels.binarize(model.embed_documents(emb.texts), snap.center))


def test_chunks_fit_the_model_budget_even_under_a_long_path(tmp_path, settings, model):
    from kenning.embedding.profiles import HEADER_RESERVE_TOKENS

    path = "/".join(["a_rather_long_directory_name_for_testing"] * 4) + "/module.py"
    line = "value = compute(" + ", ".join(f"argument_{i}" for i in range(12)) + ")\n"
    repo = make_repo(tmp_path / "r", {path: line * 40})
    header = model.count_tokens(document_text(path, ""))
    assert header > HEADER_RESERVE_TOKENS
    assert chunk_budget(model, path) == model.max_tokens - (header - HEADER_RESERVE_TOKENS)
    emb = CountingEmbedder(model)
    refresh(repo, settings, embedder=emb)
    assert len(emb.texts) > 1
    assert all(model.count_tokens(t) <= model.max_tokens + HEADER_RESERVE_TOKENS
               for t in emb.texts)


def test_git_state_reads_packed_refs_detached_heads_and_worktrees(repo, tmp_path):
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert git_state(repo) == (head, "main")
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    assert git_state(tmp_path / "side") == (head, "side")
    git(repo, "checkout", "-q", "--detach")
    assert git_state(repo) == (head, None)
    assert git_state(tmp_path) == (None, None)  # not a git work tree
