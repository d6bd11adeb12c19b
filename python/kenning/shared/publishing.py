"""``publish``: push a project's committed snapshot to the shared index, incrementally.

The local cluster manifest is diffed (``kernels.diff``) against the one published in the engine,
then the file manifests of the clusters that differ; only the chunks of added and changed files
are sent, with the vectors of the local index (nothing is embedded again). The order makes any
interruption harmless:

1. the files about to change are marked in the published manifest (digest ``""``);
2. their chunks are upserted under deterministic primary keys (a retry writes the same rows);
3. rows of the old versions of changed and removed files are deleted, in a few large calls;
4. the manifest is updated last: files, clusters, then the head row with the new generation.

With step 2, each sent chunk's vector is stored by content (``store.shared_vectors``) for the
first path that holds its text, the one a fresh local index embeds it from; then the rows of
every file not sent are read back, and those that are absent or do not open (a project
published before vectors were stored by content, rows a writer without the text deleted or
changed) are stored again, so every publish repairs the cache of its project.

A publish killed anywhere leaves marked files, which the next publish treats as changed (or
removed), so it converges. Result ids name a row by the local index's token and the chunk's
ordinal in it, so when the local index was built anew (its token is not the published one) every
file is sent again with its new ordinal and every other row of the project is deleted; the head
is marked ``resending`` meanwhile (ids of the project are refused) and gets the new token only
at the end, so a publish killed midway leaves the mismatch for the next one to redo.

Publishers of one project are serialised by the head row: a publish claims it (owner, time) and
checks the claim is still its own before the manifest is written; a claim whose process is gone
(same host) or that is older than ``LEASE`` seconds is taken over.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import socket
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kenning import hostos, kernels, safe_read
from kenning.chunking.generated import says_generated
from kenning.config import Settings
from kenning.embedding import document_text
from kenning.errors import IndexError_, SharedBusy
from kenning.indexing.classes import chunk_class
from kenning.retrieval.lexical import COLUMN_WEIGHTS
from kenning.shared.reads import (
    any_head,
    chunk_ids,
    chunks_of_paths,
    manifest_besides_head,
    manifest_rows,
    read_head,
)
from kenning.store import shared_vectors
from kenning.store.shared_engine import (
    CLASS_FIELD,
    MANIFEST_DIM,
    PATH_MAX,
    PATHS_PER_QUERY,
    SYMBOL_WORDS_MAX,
    TEXT_MAX,
    Engine,
    configured_uri,
    row_key,
)

if TYPE_CHECKING:
    from kenning.embedding import Embedder
from kenning.store.writer import crash_point

LEASE = 600.0  # seconds a claim holds without being renewed
RENEW = 60.0  # a long publish renews its claim this often
UPSERT_ROWS = 500  # chunk rows per upsert call
DELETE_IDS = 16_384  # ids per delete call: one call costs ~0.6 s at 200k rows in milvus-lite
# FTS5's bm25() counts a hit in a weighted column as `weight` hits of one frequency per row, so
# the symbol's and the path's tokens repeated by their weight (relative to the body's) in the
# engine's single BM25 field give the same weighted frequencies as the local lexical branch;
# only the row length both normalise by differs (FTS5 counts each token once).
_BODY_W, _SYMBOL_W, _PATH_W = (COLUMN_WEIGHTS[c] for c in ("body", "symbol", "path"))
SYMBOL_REPEAT, PATH_REPEAT = round(_SYMBOL_W / _BODY_W), round(_PATH_W / _BODY_W)

Progress = Callable[[dict[str, Any]], None]


@dataclass
class PublishResult:
    project: str
    root: str
    uri: str
    dry_run: bool = False
    generation: int = 0  # the published generation (unchanged by a dry run or no change)
    snapshot_generation: int = 0  # the local snapshot it comes from
    revision: str | None = None
    files_added: int = 0
    files_changed: int = 0
    files_removed: int = 0
    chunks_sent: int = 0
    bytes_sent: int = 0
    rows_deleted: int = 0
    skipped: list[str] = field(default_factory=list)  # changed on disk since the snapshot
    resend_all: str | None = None  # why every file is sent again (None: only what changed)
    vectors_stored: int = 0  # vectors stored by content (``store.shared_vectors``)
    vectors_repaired: int = 0  # of those, rows of files not sent that were absent or did not open
    collection: str = ""  # the chunks collection (its companions add _manifest and _vectors2)
    seconds: float = 0.0

    @property
    def nothing_changed(self) -> bool:
        return not (self.files_added or self.files_changed or self.files_removed
                    or self.resend_all)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "publish_result", **asdict(self), "nothing_changed": self.nothing_changed}


# -- the local side ------------------------------------------------------------------------------

def _clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, on a character boundary."""
    data = text.encode()
    return text if len(data) <= limit else data[:limit].decode("utf-8", "ignore")


def _read_verified(root: Path, path: str, digest: bytes, limit: int) -> bytes | None:
    """The file's bytes if they are still the ones the snapshot indexed, else None; read as
    every project file is (``safe_read``: no symlink, regular files, at most ``limit``)."""
    try:
        data, _ = safe_read.read(root, path, limit)
    except safe_read.Refused:
        return None
    return data if kernels.hash_many([data])[0] == digest else None


def _chunk_rows(snap: Any, root: Path, project: str, paths: Sequence[str],
                digests: dict[str, bytes], skipped: list[str], max_file_size: int,
                classes: bool, by_content: _ByContent | None = None) -> list[dict[str, Any]]:
    """The engine rows of the chunks of ``paths``, vectors from the snapshot (and each chunk's
    class where the collection has the field); ``by_content`` collects their vectors by
    content."""
    rows: list[dict[str, Any]] = []
    texts: dict[str, bytes | None] = {}
    for (ordinal, generation, path, start_byte, end_byte, start_line, end_line, language, kind,
         symbol, signature, content_hash, vector_id, body_words, symbol_words,
         path_words, file_kind) in snap.chunks_to_publish(paths):
        if path not in texts:
            texts[path] = _read_verified(root, path, digests[path], max_file_size)
            if texts[path] is None:
                skipped.append(path)
        data = texts[path]
        if data is None:
            continue
        text = data[start_byte:end_byte].decode("utf-8", "replace")
        if by_content is not None:
            by_content.add(path, text, content_hash, snap, vector_id)
        rescore = base64.b64encode(snap.int8[vector_id].tobytes()
                                   + snap.scales[vector_id:vector_id + 1].tobytes()).decode()
        words = " ".join([body_words, *[symbol_words] * SYMBOL_REPEAT,
                          *[path_words] * PATH_REPEAT])
        rows.append({
            "id": row_key(project, path, start_byte, end_byte, start_line, content_hash.hex()),
            "project": project, "path": path, "content_hash": content_hash.hex(),
            "ordinal": ordinal, "generation": generation, "start_line": start_line,
            "end_line": end_line, "start_byte": start_byte, "end_byte": end_byte,
            "language": language or "", "kind": kind, "symbol": _clip(symbol or "", PATH_MAX),
            "signature": _clip(signature or "", PATH_MAX),
            "symbol_words": [w[:256] for w in dict.fromkeys(symbol_words.split())][
                :SYMBOL_WORDS_MAX],
            "text": _clip(text, TEXT_MAX),
            "words": _clip(words, TEXT_MAX), "bits": snap.bits[vector_id].tobytes(),
            "rescore": rescore})
        if classes:
            rows[-1][CLASS_FIELD] = chunk_class(path, language, symbol, says_generated(data),
                                                file_kind)
    return rows


class _ByContent:
    """The vectors of one publish by content: for each chunk text, the first path that holds
    it (paths come in order), as a fresh local index embeds it."""

    def __init__(self) -> None:
        self.seen: set[bytes] = set()
        self.entries: list[tuple[str, bytes]] = []  # (embedding text, payload)
        self.stored = 0

    def add(self, path: str, text: str, content_hash: bytes, snap: Any, vector_id: int) -> None:
        if content_hash in self.seen or kernels.hash_many([text])[0] != content_hash:
            return  # a later path of the same text, or a text the decoding changed
        self.seen.add(content_hash)
        self.entries.append((document_text(path, text), shared_vectors.payload(
            snap.bits[vector_id], snap.int8[vector_id], snap.scales[vector_id])))

    def flush(self, engine: Engine, dry_run: bool) -> None:
        if self.entries and not dry_run:
            shared_vectors.put(engine, self.entries)
            crash_point("vectors-stored")
        self.stored += len(self.entries)
        self.entries = []

    def repair(self, engine: Engine, dry_run: bool) -> None:
        """Store again the entries whose row is absent or does not open (deleted, or written by
        someone without the text); a row that opens was made by a holder of the text and
        stays."""
        present = shared_vectors.exists(engine)
        for start in range(0, len(self.entries), shared_vectors.GET_IDS):
            part = self.entries[start:start + shared_vectors.GET_IDS]
            held = (shared_vectors.get(engine, [text for text, _ in part]) if present
                    else [None] * len(part))
            lost = [entry for entry, found in zip(part, held, strict=True) if found is None]
            if lost and not dry_run:
                shared_vectors.put(engine, lost)
                crash_point("vectors-stored")
            self.stored += len(lost)
        self.entries = []


def _row_bytes(row: dict[str, Any]) -> int:
    """Roughly what a row costs on the wire and in the engine."""
    return sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in row.values()
               if not isinstance(v, list)) + sum(len(w) for w in row["symbol_words"])


# -- the published manifest ------------------------------------------------------------------


def _manifest_row(project: str, kind: str, key: str, *, cluster: str = "", digest: str = "",
                  info: str = "") -> dict[str, Any]:
    return {"id": row_key(project, kind, key), "project": project, "kind": kind, "key": key,
            "cluster": cluster, "digest": digest, "info": info,
            "unused": bytes(MANIFEST_DIM // 8)}


def _write_head(engine: Engine, project: str, head: dict[str, Any]) -> None:
    engine.upsert(engine.manifest, [_manifest_row(project, "head", "",
                                                  info=json.dumps(head, sort_keys=True))],
                  "writing the published head")


def _claim_lapsed(head: dict[str, Any], now: float) -> bool:
    owner = head.get("owner") or {}
    if now - float(head.get("claimed_at") or 0) > LEASE:
        return True
    return owner.get("host") == socket.gethostname() \
        and not hostos.alive(int(owner.get("pid", 0)))


class _Claim:
    """This process's claim on a project's head row."""

    def __init__(self, engine: Engine, project: str) -> None:
        self.engine, self.project = engine, project
        self.owner = {"host": socket.gethostname(), "pid": os.getpid(),
                      "token": secrets.token_hex(8)}
        self.head: dict[str, Any] = {}
        self.renewed = 0.0

    def take(self) -> dict[str, Any]:
        """Claim the head; returns it as it was ({}: none). SharedBusy if another publish holds
        it."""
        now = time.time()
        found = read_head(self.engine, self.project)
        head = found or {"generation": 0}
        if head.get("state") == "publishing" and not _claim_lapsed(head, now):
            self._busy(head)
        before = dict(found or {})
        self.head = {**head, "state": "publishing", "owner": self.owner, "claimed_at": now}
        _write_head(self.engine, self.project, self.head)
        self.renewed = now
        self.check()
        return before

    def check(self) -> None:
        """SharedBusy unless the head is still claimed by this process."""
        head = read_head(self.engine, self.project) or {}
        if head.get("owner") != self.owner or head.get("state") != "publishing":
            self._busy(head)

    def renew(self) -> None:
        now = time.time()
        if now - self.renewed >= RENEW:
            self.check()
            self.head["claimed_at"] = now
            _write_head(self.engine, self.project, self.head)
            self.renewed = now

    def mark_resending(self) -> None:
        """Say in the head that its rows are being replaced by those of another local index:
        until a publish finishes, ids of the project name no row for sure."""
        self.check()
        self.head["resending"] = True
        _write_head(self.engine, self.project, self.head)

    def release(self) -> None:
        """Give the claim up after a failure, if it is still this process's (best effort: the
        engine may be what failed)."""
        from kenning.errors import SharedIndexError

        try:
            head = read_head(self.engine, self.project) or {}
            if head.get("owner") == self.owner:
                _write_head(self.engine, self.project, {**head, "state": "interrupted"})
        except SharedIndexError:
            pass

    def _busy(self, head: dict[str, Any]) -> None:
        owner = head.get("owner") or {}
        since = time.strftime("%H:%M:%S", time.localtime(float(head.get("claimed_at") or 0)))
        raise SharedBusy(f"{self.project} is being published by another process "
                         f"({owner.get('host', '?')}, pid {owner.get('pid', '?')}, since "
                         f"{since}).", hint="Try again once it is done; a publish that died is "
                         f"taken over after {int(LEASE // 60)} minutes.")


def _hex_manifest(rows: Iterable[dict[str, Any]]) -> dict[str, bytes]:
    return {r["key"]: bytes.fromhex(r["digest"]) for r in rows}


def _batches(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


# -- publish -----------------------------------------------------------------------------------


def publish(root: Path, settings: Settings, *, dry_run: bool = False,
            embedder: Embedder | None = None,
            refresh: bool = True, progress: Progress | None = None) -> PublishResult:
    """Publish the committed snapshot of the project at ``root`` (refreshed first, unless
    ``refresh=False``). ``dry_run`` reports what would be sent and changes nothing."""
    from kenning.embedding import borrowed
    from kenning.indexing.indexer import refresh as refresh_index
    from kenning.store import Index, make_descriptor

    started = time.perf_counter()
    configured_uri(settings)  # a missing or bad shared.uri is said before any indexing
    with borrowed(settings, embedder) as emb:
        with Engine(settings, make_descriptor(emb)) as engine:
            engine.exists()  # an engine that is unreachable or refuses the token: before indexing
        if refresh:
            done = refresh_index(root, settings, embedder=emb, wait=True, progress=progress)
            if done.vectors_missing:
                raise IndexError_(f"{done.vectors_missing} chunks of {root} still lack a vector, "
                                  "so the snapshot cannot be published yet.",
                                  hint=f"Run `kenning index {root}` until it completes.")
        index = Index.open(root, settings, embedder=emb)
    with index.snapshot() as snap, Engine(settings, index.descriptor) as engine:
        if snap.generation == 0 or snap.status != "complete":
            raise IndexError_(f"The index of {index.root} is not complete, so it cannot be "
                              "published.", hint=f"Run `kenning index {index.root}` first.")
        result = PublishResult(index.project_id, str(index.root), engine.uri, dry_run=dry_run,
                               snapshot_generation=snap.generation, revision=snap.revision,
                               collection=engine.chunks)
        run = _Publish(engine, snap, index.root, index.project_id, result,
                       progress or (lambda event: None), int(settings["index.max_file_size"]))
        run.go(dry_run)
    result.seconds = round(time.perf_counter() - started, 3)
    return result


class _Publish:
    def __init__(self, engine: Engine, snap: Any, root: Path, project: str,
                 result: PublishResult, emit: Progress, max_file_size: int) -> None:
        self.engine, self.snap, self.root, self.project = engine, snap, root, project
        self.result, self.emit, self.max_file_size = result, emit, max_file_size

    def go(self, dry_run: bool) -> None:
        engine, project = self.engine, self.project
        if not dry_run:
            engine.ensure()
        claim = _Claim(engine, project)
        if dry_run:
            before = (read_head(engine, project) if engine.exists() else None) or {}
            self._run(claim, before, dry_run)
            return
        before = claim.take()
        try:
            self._run(claim, before, dry_run)
        except BaseException:
            claim.release()  # an interrupt or failure: the next publish needs no lease to lapse
            raise

    def _run(self, claim: _Claim, before: dict[str, Any], dry_run: bool) -> None:
        engine, result, project = self.engine, self.result, self.project
        result.generation = int(before.get("generation") or 0)
        result.resend_all = resend_reason(before, self.snap)
        plan = plan_of(engine, self.snap, project, resend_all=result.resend_all is not None)
        result.files_added, result.files_changed = len(plan.added), len(plan.changed)
        result.files_removed = len(plan.removed)
        self.emit({"type": "publish_diff", "added": len(plan.added),
                   "changed": len(plan.changed), "removed": len(plan.removed)})
        sending = sorted([*plan.added, *plan.changed])  # in order: see _ByContent
        classes = engine.classes if engine.exists() else engine.create_with_classes
        # centred bits depend on the index that made them: such models share no vectors
        by_content = _ByContent() if self.snap.center is None else None
        if by_content is not None and not dry_run:
            shared_vectors.ensure(engine)
        if result.resend_all and not dry_run:
            claim.mark_resending()
        if not dry_run:  # 1. mark: a publish killed from here on leaves these files to redo
            engine.upsert(engine.manifest, [
                _manifest_row(project, "file", p, cluster=plan.cluster_of[p])
                for p in [*sending, *plan.removed]], "marking the files being published")
            crash_point("files-marked")
        new_ids: set[str] = set()
        files_done = 0
        for part in _batches(sending, PATHS_PER_QUERY):  # 2. upsert the chunks
            rows = _chunk_rows(self.snap, self.root, project, part, plan.digests,
                               result.skipped, self.max_file_size, classes, by_content)
            if by_content is not None:
                by_content.flush(engine, dry_run)
            for i in range(0, len(rows), UPSERT_ROWS):
                batch = rows[i:i + UPSERT_ROWS]
                if not dry_run:
                    engine.upsert(engine.chunks, batch, "sending chunks")
                    claim.renew()
                new_ids.update(r["id"] for r in batch)
                result.chunks_sent += len(batch)
                result.bytes_sent += sum(_row_bytes(r) for r in batch)
            files_done += len(part)
            self.emit({"type": "publishing", "done": files_done, "total": len(sending),
                       "chunks": result.chunks_sent})
        if by_content is not None:
            sent = set(sending)
            repaired = self._repair([p for p in sorted(plan.digests) if p not in sent],
                                    plan.digests, dry_run, classes, claim)
            result.vectors_stored, result.vectors_repaired = by_content.stored + repaired, repaired
        crash_point("chunks-sent")
        skipped = set(result.skipped)
        stale: list[str] = []  # 3. the rows of old versions
        if engine.exists() and result.resend_all:  # every row not sent again has an old ordinal
            stale = [pk for pk in chunk_ids(engine, self.project, "finding stale chunks")
                     if pk not in new_ids]
        elif engine.exists():
            for part in _batches([*plan.changed, *plan.removed], PATHS_PER_QUERY):
                old = chunks_of_paths(engine, self.project, part, ["id", "path"],
                                      "finding stale chunks")
                stale += [r["id"] for r in old
                          if r["id"] not in new_ids and r["path"] not in skipped]
        result.rows_deleted = len(stale)
        if dry_run:
            return
        for i in range(0, len(stale), DELETE_IDS):
            engine.delete_ids(engine.chunks, stale[i:i + DELETE_IDS], "deleting stale chunks")
            self.emit({"type": "deleting", "done": min(len(stale), i + DELETE_IDS),
                       "total": len(stale)})
        crash_point("stale-deleted")
        claim.check()  # 4. the manifest, last, only if the claim is still this process's
        engine.upsert(engine.manifest, [
            _manifest_row(project, "file", p, cluster=plan.cluster_of[p],
                          digest=plan.digests[p].hex())
            for p in sending if p not in skipped], "updating the published files")
        engine.delete_ids(engine.manifest, [row_key(project, "file", p) for p in plan.removed],
                          "updating the published files")
        engine.upsert(engine.manifest, [_manifest_row(project, "cluster", c, digest=d.hex())
                                        for c, d in plan.clusters.items()],
                      "updating the published clusters")
        engine.delete_ids(engine.manifest,
                          [row_key(project, "cluster", c) for c in plan.removed_clusters],
                          "updating the published clusters")
        crash_point("manifest-written")
        if not result.nothing_changed:
            result.generation += 1
        center = self.snap.center
        _write_head(engine, project, {
            "generation": result.generation, "state": "published",
            "snapshot_generation": self.snap.generation, "revision": self.snap.revision,
            "index_token": self.snap.token,
            "branch": self.snap.branch, "files": len(plan.digests), "chunks": self.snap.chunks,
            "published_at": time.time(), "root": str(self.root),
            "vectors_by_content": by_content is not None,
            "center": (base64.b64encode(center.astype("<f4").tobytes()).decode()
                       if center is not None else None)})


    def _repair(self, paths: Sequence[str], digests: dict[str, bytes], dry_run: bool,
                classes: bool, claim: _Claim) -> int:
        """Store again the vectors by content of the files not sent (``paths``, in order, so each
        text's first path is checked) whose rows are absent or do not open: those of a project
        published before vectors were stored by content, or that a writer without the text
        deleted or changed. Files changed on disk since the snapshot are left out. Returns how
        many were stored."""
        checking = _ByContent()
        for part in _batches(paths, PATHS_PER_QUERY):
            _chunk_rows(self.snap, self.root, self.project, part, digests, [],
                        self.max_file_size, classes, checking)
            checking.repair(self.engine, dry_run)
            if not dry_run:
                claim.renew()
        return checking.stored


@dataclass
class _Plan:
    added: list[str]
    changed: list[str]
    removed: list[str]
    clusters: dict[str, bytes]  # local clusters whose published digest differs or is absent
    removed_clusters: list[str]
    digests: dict[str, bytes]  # path -> digest of every file of the snapshot
    cluster_of: dict[str, str]  # path -> cluster, local or (removed files) published


def resend_reason(head: dict[str, Any], snap: Any) -> str | None:
    """Why every file of ``snap`` must be sent again over the published ``head`` ({}: none):
    its rows carry the ordinals of another local index (built anew since, or a publish of
    another index began and did not finish)."""
    if not head or (head.get("index_token") == snap.token and not head.get("resending")):
        return None
    if not head.get("snapshot_generation"):
        return ("the first publish of the project did not finish, so every file is sent "
                "again")
    if head.get("index_token") == snap.token:
        return ("a publish that sent every file again did not finish, so every file is sent "
                "again")
    return ("the published rows carry the chunk ids of another local index of the project "
            "(built anew since), so every file is sent again")


def plan_of(engine: Engine, snap: Any, project: str, *, resend_all: bool = False) -> _Plan:
    """What differs between a snapshot and the project's published manifest: the clusters
    whose digests differ, then the files of those (files a publish began to change count as
    changed). ``resend_all``: every local file counts as changed."""
    local_clusters = snap.cluster_digests()
    local_files = snap.file_digests()
    published_clusters: dict[str, bytes] = {}
    pending: list[dict[str, Any]] = []
    exists = engine.exists()  # not before the first publish (or in its dry run)
    if exists:
        published_clusters = _hex_manifest(manifest_rows(
            engine, project, "cluster", ["key", "digest"], "reading the published clusters"))
        pending = manifest_rows(engine, project, "file", ["key", "cluster"],
                                "reading unfinished files", unfinished=True)
    _, changed_c, added_c, removed_c = kernels.diff(published_clusters, local_clusters)
    dirty = list(dict.fromkeys([*changed_c, *added_c, *removed_c,
                                *(r["cluster"] for r in pending)]))
    if resend_all:  # every local file, and every published one whatever its cluster
        dirty = list(dict.fromkeys([*local_clusters, *dirty]))
    published: dict[str, bytes] = {}
    published_cluster: dict[str, str] = {}
    of_clusters: list[Sequence[str] | None] = (
        [None] if resend_all else list(_batches(dirty, PATHS_PER_QUERY)))
    for clusters in of_clusters if exists else []:
        rows = manifest_rows(engine, project, "file", ["key", "digest", "cluster"],
                             "reading the published files", clusters=clusters)
        published.update(_hex_manifest(rows))
        published_cluster.update((r["key"], r["cluster"]) for r in rows)
    wanted = set(dirty)
    local = {p: d for p, (d, c) in local_files.items() if c in wanted}
    same, changed, added, removed = kernels.diff(published, local)
    if resend_all:
        changed = [*same, *changed]
    return _Plan(added, changed, removed,
                 clusters={c: local_clusters[c] for c in [*changed_c, *added_c]},
                 removed_clusters=removed_c,
                 digests={p: d for p, (d, _) in local_files.items()},
                 cluster_of={**published_cluster, **{p: c for p, (_, c) in local_files.items()}})


def unpublished(engine: Engine, snap: Any, project: str) -> dict[str, int]:
    """How many files of a snapshot a publish would send or delete: added, changed and removed
    since the project's published manifest."""
    head = read_head(engine, project) if engine.exists() else None
    plan = plan_of(engine, snap, project, resend_all=resend_reason(head or {}, snap) is not None)
    return {"added": len(plan.added), "changed": len(plan.changed),
            "removed": len(plan.removed)}


def remove(settings: Settings, project: str, *, embedder: Embedder | None = None) -> int:
    """Take ``project`` out of the shared index (the configured model's collection); returns
    how many chunk rows it had. The head row goes last, so an interrupted removal is still
    listed and the next removal finishes it; a publish under way makes it SharedBusy."""
    from kenning.embedding import borrowed
    from kenning.errors import UsageError
    from kenning.store import make_descriptor

    with borrowed(settings, embedder) as emb:
        descriptor = make_descriptor(emb)
    with Engine(settings, descriptor) as engine:
        if not engine.exists() or read_head(engine, project) is None:
            raise UsageError(f"{project} is not in {engine.where} (for {descriptor['model']}).",
                             hint="`kenning search --backend shared` lists what is published.")
        claim = _Claim(engine, project)
        claim.take()
        rows = chunk_ids(engine, project, "listing its chunks")
        for i in range(0, len(rows), DELETE_IDS):
            engine.delete_ids(engine.chunks, rows[i:i + DELETE_IDS], "deleting its chunks")
        claim.check()
        engine.delete_where(engine.manifest, manifest_besides_head(project),
                            "deleting its manifest")
        engine.delete_ids(engine.manifest, [row_key(project, "head", "")], "deleting its head")
        if not engine.classes and not any_head(engine, "listing what is left"):
            engine.drop()  # empty, and made before classes: the next publish makes it anew
        return len(rows)
