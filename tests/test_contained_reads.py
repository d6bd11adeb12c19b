"""Reads stay inside the project and only read regular files, in both walks.

Each attack of a checkout that changes under kenning's feet, on real files and processes: a
file or a folder swapped for a symlink to a secret outside the project after indexing (the CLI's
``search --no-refresh``, MCP ``code_search`` before its refresh and ``code_get_chunk``), or
between the walk and the read; a symlink to ``/dev/zero`` or a FIFO as a source file and as an
ignore file; a file that grows past the size limit after its size was checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from index_helpers import WALK_BACKENDS
from kenning import config, safe_read
from kenning.indexing import indexer, sources
from kenning.indexing.sources import WalkStats, changes, walk
from kenning.services.index_admin import project_status
from kenning.store import Index
from test_mcp_server import serve, text_of

SECRET_WORD = "zanzibarquux"
SECRET = f"{SECRET_WORD} credentials of the machine owner"
FILES = {
    "src/keep.py": 'def keep_going():\n    """Retry the request with backoff."""\n    return 1\n',
    "src/target.py": 'def load_settings():\n    """Read the settings file of the service."""\n'
                     '    return {"port": 8080}\n',
    "lib/paths.py": 'def settings_path():\n'
                    '    """Where the settings file of the service lives."""\n'
                    '    return "/etc/service.toml"\n',
}
MiB = 1 << 20

pytestmark = pytest.mark.timeout(120)  # a read that blocks on a FIFO fails instead of hanging


@pytest.fixture(params=WALK_BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The walk in this process, and the kernels of the processes the test starts."""
    monkeypatch.setattr(sources, "BACKEND", request.param)
    monkeypatch.setenv("KENNING_KERNELS", "numpy" if request.param == "python" else "rust")
    return str(request.param)


@pytest.fixture(params=["descriptors", "handles"])
def reads(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The safe read on POSIX descriptors, or through the Rust core as on Windows (its
    platform seam opens each component on this system's own calls)."""
    monkeypatch.setattr(safe_read, "BY_HANDLES", request.param == "handles")
    return str(request.param)


def make_tree(base: Path) -> tuple[Path, Path]:
    """A project with two source files, and a secret file outside it."""
    root, outside = base / "repo", base / "outside"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".git").mkdir()
    outside.mkdir()
    for rel in FILES:  # the same names, holding the secret
        (outside / rel.split("/")[-1]).write_text(f'def {rel}():\n    """{SECRET}"""\n')
    return root, outside


def index(root: Path) -> indexer.RefreshResult:
    result = indexer.refresh(root, config.load())
    assert result.status == "complete"
    return result


def indexed_text(root: Path) -> str:
    """Every file path and full-text entry the index of ``root`` holds, as one string."""
    with Index.open(root, config.load()).snapshot() as snap:
        rows = [*snap._conn.execute("SELECT path FROM files"),
                *snap._conn.execute("SELECT body, symbol, path FROM chunks_fts")]
    return "\n".join(str(field) for row in rows for field in row).lower()


def cli_search(root: Path, query: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "kenning", "search", query, str(root), "--no-refresh",
         "--json-output"], capture_output=True, text=True, env=dict(os.environ), timeout=90)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def swap_for_link(path: Path, target: Path | str) -> None:
    """``path`` (a file, or a folder moved aside) replaced by a symlink to ``target``."""
    if path.is_dir():
        path.rename(path.with_name(path.name + ".old"))
    else:
        path.unlink()
    path.symlink_to(target)


# -- the safe read itself ---------------------------------------------------------------------

def test_the_safe_read_refuses_links_on_the_way_special_files_and_growth(
        tmp_path: Path, reads: str) -> None:
    root, outside = make_tree(tmp_path)
    data, stamp = safe_read.read(root, "src/keep.py", MiB)
    assert data == FILES["src/keep.py"].encode()
    st = (root / "src/keep.py").stat()
    assert stamp == (st.st_size, st.st_mtime_ns)
    (root / "link.py").symlink_to(outside / "keep.py")
    (root / "linkdir").symlink_to(outside)
    (root / "zero.py").symlink_to("/dev/zero")
    os.mkfifo(root / "fifo.py")
    (root / "big.py").write_bytes(b"x" * 2000)
    for rel, reason in [("link.py", "symlink"), ("linkdir/keep.py", "symlink"),
                        ("zero.py", "symlink"), ("fifo.py", "special"), ("big.py", "too_large"),
                        ("missing.py", "unreadable"), ("../outside/keep.py", "unreadable"),
                        ("src/../src/keep.py", "unreadable")]:
        with pytest.raises(safe_read.Refused) as refused:
            safe_read.read(root, rel, 1000)
        assert refused.value.reason == reason, rel
    assert safe_read.read(root, "src/keep.py", MiB, head=5)[0] == b"def k"


def test_names_list_a_folder_without_following_a_link_on_the_way(tmp_path: Path,
                                                                  reads: str) -> None:
    root, outside = make_tree(tmp_path)
    (root / "linkdir").symlink_to(outside)
    assert safe_read.names(root, "") == {".git", "lib", "linkdir", "src"}
    assert safe_read.names(root, "src") == {"keep.py", "target.py"}
    for refused in ("linkdir", "src/keep.py", "missing", "src/..", "../outside"):
        assert safe_read.names(root, refused) == frozenset(), refused


def test_the_safe_read_imports_and_reads_on_handles_where_os_has_no_posix_flags(
        tmp_path: Path) -> None:
    """What Windows' ``os`` lacks is taken away before the import, as there: the module then
    reads through the Rust core, and the descriptor functions say they cannot run."""
    root, outside = make_tree(tmp_path)
    (root / "linkdir").symlink_to(outside)
    program = f"""
import os
from kenning import hostos
hostos.WINDOWS = True
for flag in ("O_DIRECTORY", "O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC"):
    delattr(os, flag)
from kenning import safe_read
from kenning.errors import ConfigError
root = {str(root)!r}
print(safe_read.BY_HANDLES, safe_read.read(root, "src/keep.py", 1 << 20)[0][:8])
try:
    safe_read.read(root, "linkdir/keep.py", 1 << 20)
except safe_read.Refused as refused:
    print(refused.reason)
try:
    with safe_read.root_dir(root):
        pass
except ConfigError as error:
    print(error)
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          check=True)
    assert done.stdout.splitlines() == [
        "True b'def keep'", "symlink",
        "The NumPy twin of the walk reads through POSIX descriptors, which this system does "
        "not have."]


# -- ignore files and source files that are FIFOs or /dev/zero ---------------------------------


def test_heads_read_in_folders_at_once_refuse_what_read_refuses_in_the_order_given(
        tmp_path: Path, reads: str) -> None:
    root, outside = make_tree(tmp_path)
    (root / "linkdir").symlink_to(outside)
    (root / "zero.py").symlink_to("/dev/zero")
    os.mkfifo(root / "fifo.py")
    many = root / "many"
    many.mkdir()
    for i in range(150):  # more than one thread's share of a folder
        (many / f"m{i:03}.py").write_text(f"m{i:03}\n")
    rels = ["fifo.py", "linkdir/keep.py", "linkdir/target.py", *sorted(
        f"many/{p.name}" for p in many.iterdir()), "missing.py", "src/keep.py", "zero.py",
        "src/../src/keep.py"]
    got = list(safe_read.heads(root, rels, MiB, 5))
    assert len(got) == len(rels)
    for rel, head in zip(rels, got, strict=True):
        try:
            expected: bytes | str = safe_read.read(root, rel, MiB, head=5)[0]
        except safe_read.Refused as refused:
            expected = refused.reason
        assert (head.reason if isinstance(head, safe_read.Refused) else head) == expected, rel
    assert got[3:153] == [f"m{i:03}\n".encode() for i in range(150)] and got[-3] == b"def k"

def test_fifos_and_dev_zero_as_source_and_ignore_files_neither_hang_nor_exhaust_memory(
        tmp_path: Path, backend: str) -> None:
    root, _ = make_tree(tmp_path)
    os.mkfifo(root / "pipe.py")
    (root / "zero.py").symlink_to("/dev/zero")
    os.mkfifo(root / ".gitignore")
    (root / "src" / ".gitignore").symlink_to("/dev/zero")
    (root / "src" / "deep").mkdir()
    os.mkfifo(root / "src" / "deep" / ".kenningignore")
    (root / "src" / "deep" / "x.py").write_text("def x():\n    return 1\n")
    (root / ".git" / "info").mkdir()
    (root / ".git" / "info" / "exclude").symlink_to("/dev/zero")
    stats = WalkStats()
    assert [f.path for f in walk(root, max_file_size=MiB, stats=stats)] == [
        "lib/paths.py", "src/deep/x.py", "src/keep.py", "src/target.py"]
    assert stats.skipped["symlink"] == 2  # zero.py, src/.gitignore; a FIFO is no file at all
    assert index(root).files == 4
    changed = project_status(root, config.load())["changed_since"]
    assert changed == {"added": 0, "changed": 0, "removed": 0}
    assert cli_search(root, "retry the request")["results"]


def test_a_symlinked_gitignore_is_not_followed_as_git_does(tmp_path: Path, backend: str) -> None:
    root, outside = make_tree(tmp_path)
    (outside / "rules").write_text("*.py\n")
    (root / ".gitignore").symlink_to(outside / "rules")
    (root / "src" / ".gitignore").write_text("target.py\n")
    assert [f.path for f in walk(root, max_file_size=MiB)] == [
        "lib/paths.py", "src/.gitignore", "src/keep.py"]


# -- swapped after indexing: search --no-refresh, MCP search and get_chunk ----------------------

@pytest.mark.parametrize("swap", ["file", "folder", "dev_zero", "fifo"])
def test_a_file_swapped_after_indexing_is_stale_and_never_served(
        tmp_path: Path, swap: str) -> None:
    root, outside = make_tree(tmp_path)
    index(root)
    target = root / "src" / "target.py"
    if swap == "file":
        swap_for_link(target, outside / "target.py")
    elif swap == "folder":
        swap_for_link(root / "src", outside)
    elif swap == "dev_zero":
        swap_for_link(target, "/dev/zero")
    else:
        target.unlink()
        os.mkfifo(target)
    hits = {h["path"]: h for h in cli_search(root, "read the settings file")["results"]}
    assert "src/target.py" in hits and SECRET_WORD not in json.dumps(hits)
    for path, hit in hits.items():
        unsafe = path == "src/target.py" or (swap == "folder" and path.startswith("src/"))
        assert (hit["stale"] and hit["content"] == "") if unsafe else hit["content"], hit


def test_mcp_search_and_get_chunk_never_serve_a_swapped_in_secret(tmp_path: Path) -> None:
    root, outside = make_tree(tmp_path)
    index(root)
    env = {**os.environ, "KENNING_MCP_REFRESH_INTERVAL": "3600"}  # no refresh before a search
    with serve(env, root, tmp_path / "mcp.log") as client:
        first = client.ok("code_search", query="the settings file of the service", limit=10)
        ids = {h["path"]: h["id"] for h in first.structured_content["results"]}
        assert {"src/target.py", "lib/paths.py"} <= set(ids)
        swap_for_link(root / "src" / "target.py", outside / "target.py")  # a file
        swap_for_link(root / "lib", outside)  # a folder on the way
        for path in ("src/target.py", "lib/paths.py"):
            chunk = client.ok("code_get_chunk", id=ids[path]).structured_content
            assert SECRET_WORD not in json.dumps(chunk) and chunk["body_may_be_stale"] is True
        found = client.ok("code_search", query="the settings file of the service", limit=10)
        assert SECRET_WORD not in json.dumps(found.structured_content)
        assert SECRET_WORD not in text_of(found)
        stale = {h["path"] for h in found.structured_content["results"] if h["stale"]}
        assert {"src/target.py", "lib/paths.py"} <= stale


# -- swapped or grown between the walk and the read ---------------------------------------------

def _after_walk(monkeypatch: pytest.MonkeyPatch, then: Any) -> None:
    """Runs ``then`` right after the refresh's walk, before it reads any file."""
    real = sources.changes

    def walk_then(*args: Any, **kwargs: Any) -> sources.Changes:
        found = real(*args, **kwargs)
        then()
        return found

    monkeypatch.setattr(indexer, "changes", walk_then)


@pytest.mark.parametrize("swap", ["file", "folder", "fifo"])
def test_a_swap_between_walk_and_read_indexes_nothing_from_outside(
        tmp_path: Path, backend: str, swap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root, outside = make_tree(tmp_path)
    target = root / "src" / "target.py"

    def do_swap() -> None:
        if swap == "file":
            swap_for_link(target, outside / "target.py")
        elif swap == "folder":
            swap_for_link(root / "src", outside)
        else:
            target.unlink()
            os.mkfifo(target)

    _after_walk(monkeypatch, do_swap)
    index(root)
    held = indexed_text(root)
    assert SECRET_WORD not in held
    assert "src/target.py" not in held
    assert ("src/keep.py" in held) is (swap != "folder")  # a swapped folder is all outside


def test_a_file_grown_past_the_limit_after_the_size_check_is_skipped(
        tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = make_tree(tmp_path)
    config.set_value("index.max_file_size", "4000")
    grown = root / "src" / "target.py"
    found = changes(root, max_file_size=4000, known=b"")
    assert "src/target.py" in [f.path for f in found.files]  # small enough when walked
    _after_walk(monkeypatch, lambda: grown.write_text("# padding\n" * 1000))
    index(root)
    assert "src/target.py" not in indexed_text(root)
    assert "src/keep.py" in indexed_text(root)
