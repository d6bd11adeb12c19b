"""`kenning doctor`: an end-to-end self-test, each failure with its fix."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

_PROBE = '''def retry_with_backoff(call, attempts=3):
    """Call again after a failure, waiting longer each time."""
    for attempt in range(attempts):
        try:
            return call()
        except OSError:
            time.sleep(2 ** attempt)
'''


def _check(name: str, run: Callable[[], str], checks: list[dict[str, Any]]) -> bool:
    from kenning.errors import KenningError

    try:
        detail = run()
    except KenningError as exc:
        checks.append({"check": name, "ok": False, "detail": exc.message, "fix": exc.hint})
        return False
    except Exception as exc:  # noqa: BLE001 - doctor reports any failure instead of crashing
        checks.append({"check": name, "ok": False, "detail": f"{type(exc).__name__}: {exc}",
                       "fix": "Reinstall kenning (`pip install --force-reinstall kenning`)."})
        return False
    checks.append({"check": name, "ok": True, "detail": detail, "fix": None})
    return True


def run_checks() -> list[dict[str, Any]]:
    from kenning import config

    checks: list[dict[str, Any]] = []
    state: dict[str, Any] = {}

    def load_config() -> str:
        state["settings"] = config.load()
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
        from kenning.retrieval import ProjectRef, search
        from kenning.store import index_dirs, project_id_for, remove_dir

        with tempfile.TemporaryDirectory(prefix="kenning-doctor-") as tmp:
            root = Path(tmp).resolve()
            (root / "retry.py").write_text(_PROBE, encoding="utf-8")
            pid = project_id_for(root, state["settings"])
            try:
                result = search("how are failed calls retried", [ProjectRef(pid, root)],
                                settings=state["settings"], embedder=state["embedder"], limit=3)
            finally:
                for directory in index_dirs(pid):
                    remove_dir(directory)
            hits = result["results"]
            if not hits or hits[0]["path"] != "retry.py":
                raise RuntimeError("the probe file was not found by a search")
            return f"indexed a probe file and found it (score {hits[0]['score']:.3f})"

    def index_integrity() -> str:
        from kenning.index_admin import check
        from kenning.project import find_root

        root = find_root(Path.cwd())
        count = check(root, state["settings"])
        if not count:
            return f"{root} has no index yet"
        return (f"{count} index{'es' if count > 1 else ''} of {root} checked in full: "
                "database, full-text table, vector files and their checksums")

    if _check("config", load_config, checks):
        _check("kernels", kernels, checks)
        embedder_ok = _check("embedder", embedder, checks)
        home_ok = _check("index writable", writable, checks)
        if embedder_ok and home_ok:
            _check("search round trip", round_trip, checks)
        _check("index integrity", index_integrity, checks)
    return checks


@click.command()
@click.option("--json-output", is_flag=True, help="Print JSON for machines.")
def doctor(json_output: bool) -> None:
    """Check the model, the embedder, the index and a search.

    Checks that the model loads, the embedder answers, indexes can be written and a search
    finds what was indexed; each failure comes with its fix. The indexes of the project in
    the current directory are checked in full too: the database, the full-text table, the
    vector files and their checksums.
    """
    checks = run_checks()
    ok = all(c["ok"] for c in checks)
    if json_output:
        click.echo(json.dumps({"type": "doctor", "ok": ok, "checks": checks}))
    else:
        for c in checks:
            mark = click.style("ok  ", fg="green") if c["ok"] else click.style("FAIL", fg="red")
            click.echo(f"{mark} {c['check']}: {c['detail']}")
            if c["fix"]:
                click.echo(f"     fix: {c['fix']}")
    if not ok:
        raise SystemExit(1)
