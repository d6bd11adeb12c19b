"""The end-to-end self-test behind ``kenning.doctor`` and `kenning doctor`: each check runs in
order, a failure carries its fix, and a check that needs an earlier one is left out when that
one failed."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kenning.embedders import BACKENDS

if TYPE_CHECKING:
    from kenning.config import Settings
    from kenning.embedding import Embedder
    from kenning.services.library import DoctorCheck
    from kenning.store import Index

_PROBE = '''def retry_with_backoff(call, attempts=3):
    """Call again after a failure, waiting longer each time."""
    for attempt in range(attempts):
        try:
            return call()
        except OSError:
            time.sleep(2 ** attempt)
'''


def _check(name: str, run: Callable[[], str], checks: list[DoctorCheck]) -> bool:
    from kenning.errors import KenningError
    from kenning.services.library import DoctorCheck

    try:
        detail = run()
    except KenningError as exc:
        checks.append(DoctorCheck(name, False, exc.message, exc.hint))
        return False
    except Exception as exc:  # noqa: BLE001 - doctor reports any failure instead of crashing
        checks.append(DoctorCheck(name, False, f"{type(exc).__name__}: {exc}",
                                  "Reinstall kenning (`pip install --force-reinstall kenning`)."))
        return False
    checks.append(DoctorCheck(name, True, detail, None))
    return True


def run_checks(path: str | os.PathLike[str],
               settings: Settings | None = None) -> list[DoctorCheck]:
    """The checks in order: config (``settings``, else the config file), kernels, embedder
    (and the local model's runtime: which, its version and why), a writable KENNING_HOME, a
    search round trip over a probe file, and the full check of the indexes of the project at
    ``path`` (lifted to its git work tree's root)."""
    from kenning import config

    checks: list[DoctorCheck] = []
    state: dict[str, Any] = {}

    def load_config() -> str:
        state["settings"] = settings if settings is not None else config.load()
        return str(config.config_path())

    def kernels() -> str:
        from kenning import kernels as k

        return f"{k.BACKEND} kernels"

    def embedder() -> str:
        from kenning.embedding import make_embedder

        emb = make_embedder(state["settings"])
        emb.check()
        vector = emb.embed_query("doctor")
        if vector.shape != (emb.dims,):
            raise RuntimeError(f"the model returned {vector.shape[0]} dims, expected {emb.dims}")
        state["embedder"] = emb
        return f"{state['settings']['embedder.backend']} {emb.model}, {emb.dims} dims"

    def runtime() -> str:
        from kenning.services.index_admin import runtime_status

        found = runtime_status(state["settings"], load=True)
        assert found is not None  # checked for a backend run in process only
        return f"{found['name']} {found['version']}, by {found['reason']}"

    def writable() -> str:
        from kenning.project import home_error, kenning_home

        home = kenning_home()
        try:
            home.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=home, prefix=".doctor-"):
                pass
        except OSError as exc:
            raise home_error(exc) from None
        return str(home)

    def round_trip() -> str:
        from kenning.errors import IndexMissing
        from kenning.retrieval import ProjectRef
        from kenning.services.index_admin import remove
        from kenning.services.search import search
        from kenning.store import project_id_for

        with tempfile.TemporaryDirectory(prefix="kenning-doctor-") as tmp:
            probe = Path(tmp).resolve()
            (probe / "retry.py").write_text(_PROBE, encoding="utf-8")
            pid = project_id_for(probe, state["settings"])
            try:
                result = search("how are failed calls retried", [ProjectRef(pid, probe)],
                                settings=state["settings"], embedder=state["embedder"], limit=3)
            finally:
                with contextlib.suppress(IndexMissing):
                    remove(probe, state["settings"])
            hits = result["results"]
            if not hits or hits[0]["path"] != "retry.py":
                raise RuntimeError("the probe file was not found by a search")
            return f"indexed a probe file and found it (score {hits[0]['score']:.3f})"

    def index_integrity() -> str:
        from kenning.project import find_root
        from kenning.services.index_admin import check

        root = find_root(path)
        count = check(root, state["settings"])
        if not count:
            return f"{root} has no index yet"
        detail = (f"{count} index{'es' if count > 1 else ''} of {root} checked in full: "
                  "database, full-text table, vector files and their checksums")
        return detail + (_sampled(root, state) if "embedder" in state else "")

    if _check("config", load_config, checks):
        _check("kernels", kernels, checks)
        embedder_ok = _check("embedder", embedder, checks)
        if embedder_ok and BACKENDS[state["settings"]["embedder.backend"]].in_process:
            _check("runtime", runtime, checks)
        home_ok = _check("index writable", writable, checks)
        if embedder_ok and home_ok:
            _check("search round trip", round_trip, checks)
        _check("index integrity", index_integrity, checks)
    return checks


def _sampled(root: Path, state: dict[str, Any]) -> str:
    """The vectors of the index of ``root`` for the configured model, a few drawn at random and
    embedded again: what ``index_integrity`` adds to its detail, or IndexDamaged."""
    from kenning.errors import IndexDamaged, IndexMissing
    from kenning.store import Index

    embedder = state["embedder"]
    try:
        index = Index.open(root, state["settings"], embedder=embedder)
    except IndexMissing:
        return ""
    drawn, differ = sample_disagreement(index, embedder,
                                        int(state["settings"]["index.max_file_size"]))
    if not drawn:
        return ""
    if differ:
        raise IndexDamaged(
            f"{differ} of {drawn} vectors drawn from the index of {root} are not what "
            f"{embedder.model} makes of their chunks (taken from a shared index before its "
            "rows were checked, or forged).",
            hint=f"Run `kenning remove-index {root}`, then `kenning index {root}`: none of its "
            "vectors can be trusted.")
    return f"; {drawn} vectors drawn at random are what the model makes of their chunks"


def sample_disagreement(index: Index, embedder: Embedder,
                        max_file_size: int) -> tuple[int, int]:
    """``(drawn, differing)``: how many stored vectors were drawn at random and embedded again
    (``store.plausible.SAMPLE`` at most, of those whose file is unchanged), and how many
    differ (``store.plausible.disagreeing``)."""
    import numpy as np

    from kenning.indexing.indexer import chunk_texts
    from kenning.store.plausible import SAMPLE, disagreeing
    from kenning.store.vectors import VectorRows
    from kenning.store.writer import MissingVector

    with index.snapshot() as snap:
        drawn = snap.sample_vectors(SAMPLE)
        texts = chunk_texts(index.root, [MissingVector(h, path, start, end)
                                         for _, h, path, start, end in drawn], max_file_size)
        kept = [(v, h) for v, h, *_ in drawn if h in texts]
        ids = np.asarray([v for v, _ in kept], np.int64)
        rows = VectorRows(snap.bits[ids], snap.int8[ids], snap.scales[ids])
    if not kept:
        return 0, 0
    embedded = embedder.embed_documents([texts[h] for _, h in kept])
    return len(kept), int(disagreeing(rows, embedded).sum())
