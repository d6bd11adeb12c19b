"""Project identity and where its index lives.

A project is a root directory. A path inside a git work tree is lifted to the tree's root. The
id is explicit in config, else the git remote (lower-cased host/owner/repo) or the folder name,
plus a short hash of the root path, so two checkouts of one remote never share an index.
Indexes live in ``$KENNING_HOME/indices/<descriptor-slug>/<project-id>/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kenning import hostos
from kenning.errors import IndexError_, UsageError

SCHEMA_VERSION = 4


def find_root(path: str | os.PathLike[str]) -> Path:
    """The project root for ``path``: the enclosing git work tree's root, else ``path`` itself."""
    start = Path(path).expanduser()
    if not start.exists():
        raise UsageError(f"{start} does not exist.")
    if not start.is_dir():
        raise UsageError(f"{start} is not a directory.")
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


def git_dirs(root: Path) -> tuple[Path, Path] | None:
    """(this work tree's git dir, the common git dir): they differ for linked worktrees."""
    git = root / ".git"
    if git.is_file():  # a worktree or submodule: "gitdir: <path>"
        text = git.read_text(encoding="utf-8", errors="replace").strip()
        if not text.startswith("gitdir:"):
            return None
        git = (root / text.removeprefix("gitdir:").strip()).resolve()
        common = git / "commondir"
        if common.exists():
            return git, (git / common.read_text().strip()).resolve()
    return (git, git) if git.is_dir() else None


def git_state(root: Path) -> tuple[str | None, str | None]:
    """(HEAD commit, branch) read from the git directory itself; (None, None) outside git."""
    dirs = git_dirs(root)
    if dirs is None:
        return None, None
    own, common = dirs
    try:
        head = (own / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None, None
    if not head.startswith("ref:"):
        return head or None, None  # detached HEAD
    ref = head.removeprefix("ref:").strip()
    branch = ref.removeprefix("refs/heads/")
    for base in (own, common):
        try:
            return (base / ref).read_text(encoding="utf-8").strip() or None, branch
        except OSError:
            pass
    try:
        for line in (common / "packed-refs").read_text(encoding="utf-8").splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                return sha, branch
    except OSError:
        pass
    return None, branch  # a branch with no commits yet


def head_commit(root: Path) -> str | None:
    """The commit the work tree at ``root`` has checked out, read from its git folder (no git
    run) when that lies inside ``root``; None outside git, and for a linked worktree or a
    submodule, whose git folder lies elsewhere."""
    dirs = git_dirs(root)
    inside = root.resolve()
    if dirs is None or not all(d.resolve().is_relative_to(inside) for d in dirs):
        return None
    return git_state(root)[0]


def _git_remote(root: Path) -> str | None:
    """The ``origin`` URL from ``.git/config``, read directly so no git binary is needed."""
    dirs = git_dirs(root)
    if dirs is None:
        return None
    try:
        config = (dirs[1] / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    match = re.search(r'\[remote "origin"\][^\[]*?url\s*=\s*(\S+)', config)
    return match.group(1) if match else None


def _remote_slug(url: str) -> str:
    """``git@github.com:Owner/Repo.git`` -> ``github.com/owner/repo``."""
    url = re.sub(r"^[a-z+]+://", "", url.strip())
    url = re.sub(r"^[^@/]+@", "", url).replace(":", "/", 1)
    return url.removesuffix(".git").strip("/").lower()


# The characters of derived ids. An id names the index folder, so an explicit one keeps to
# them too: no separators, no "." or "..", nothing a glob or a shell would read.
ID_RULE = "lower-case letters, digits, '.', '_' and '-' (not only dots), at most 200 of them"
_VALID_ID = re.compile(r"(?!\.+\Z)[a-z0-9._-]{1,200}")


def is_valid_id(pid: object) -> bool:
    return isinstance(pid, str) and _VALID_ID.fullmatch(pid) is not None


# Folder names that say what a folder holds in any project rather than which project it is: a
# root so named leaves its name in queries.
_GENERIC_NAMES = frozenset({
    "src", "source", "sources", "lib", "libs", "app", "api", "core", "code", "main", "server",
    "client", "web", "backend", "frontend", "project", "repo", "service", "pkg", "packages",
})


def names(root: Path, pid: str) -> frozenset[str]:
    """What the project at ``root`` with id ``pid`` is called, so searches can leave its name
    out of queries: a configured id (one not derived from ``root``) is the name the user gave
    it; else its folder's name and its git remote's repository name."""
    remote = _git_remote(root)
    if pid != _derived_id(root, remote):
        found = {pid}
    else:
        found = {root.name, *([_remote_slug(remote).rsplit("/", 1)[-1]] if remote else [])}
    return frozenset(name for name in found if len(name) >= 3
                     and name.lower() not in _GENERIC_NAMES)


def project_id(root: Path) -> str:
    return _derived_id(root, _git_remote(root))


def _derived_id(root: Path, remote: str | None) -> str:
    base = _remote_slug(remote) if remote else root.name.lower()
    base = re.sub(r"[^a-z0-9._-]+", "-", base).strip("-") or "project"
    # one folder, one id: on Windows ``C:\\Proj`` and ``c:\\proj`` name the same folder
    digest = hashlib.blake2b(hostos.path_key(str(root)).encode(), digest_size=4).hexdigest()
    return f"{base}-{digest}"


# Files or folders at the top of a project. A first index of a root with none of them is
# refused above MARKERLESS_LIMIT files: such a root is usually a parent of projects, or a
# download or home folder, not the project meant.
PROJECT_MARKERS = (
    ".git", ".hg", ".svn", ".jj", ".kenningignore", "pyproject.toml", "setup.py", "setup.cfg",
    "requirements.txt", "Cargo.toml", "package.json", "deno.json", "go.mod", "pom.xml",
    "build.gradle", "build.gradle.kts", "settings.gradle", "CMakeLists.txt", "Makefile",
    "meson.build", "Gemfile", "composer.json", "mix.exs", "Package.swift", "pubspec.yaml",
)
MARKERLESS_LIMIT = 20_000
# folders never read: version control, dependencies, caches and build output
DEFAULT_EXCLUDED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".jj",
        "node_modules", "bower_components", "jspm_packages", ".yarn", ".pnpm-store",
        ".venv", "venv", "virtualenv", ".virtualenv", ".tox", ".nox", ".eggs",
        "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis",
        ".cache", ".parcel-cache", ".next", ".nuxt", ".svelte-kit", ".turbo", ".gradle",
        ".terraform", ".idea", ".vs", ".kenning",
        "dist", "build", "target", "out", "coverage", "htmlcov", "_build", "site-packages",
    }
)  # fmt: skip
FORCE_HINT = ("Run kenning in a project folder (for the MCP server: --project PATH or "
              "[[projects]] in the config), or insist with --force-root or `kenning config set "
              "index.force_root true`.")


def check_root(root: Path, *, force: bool, first_index: bool) -> None:
    """Refuse to index a home folder or a filesystem root, and on a first index a root without
    a project marker that holds more than MARKERLESS_LIMIT files; ``force`` allows them all."""
    if force:
        return
    if root in (Path.home().resolve(), Path(root.anchor)):
        what = "your home folder" if root == Path.home().resolve() else "a filesystem root"
        raise UsageError(f"{root} is {what}, not a project: indexing it would read every file "
                         "below it.", hint=FORCE_HINT)
    if first_index and not any((root / name).exists() for name in PROJECT_MARKERS) \
            and _more_files_than(root, MARKERLESS_LIMIT):
        raise UsageError(f"{root} holds more than {MARKERLESS_LIMIT:,} files and no project "
                         "marker (.git, pyproject.toml, package.json, go.mod, ...).",
                         hint=FORCE_HINT)


def _more_files_than(root: Path, limit: int) -> bool:
    """Whether ``root`` holds more than ``limit`` files outside the always-excluded folders;
    stops counting there."""
    count = 0
    for _folder, folders, files in os.walk(root):  # symlinks are not followed
        folders[:] = [f for f in folders if f not in DEFAULT_EXCLUDED_DIRS]
        count += len(files)
        if count > limit:
            return True
    return False


def kenning_home() -> Path:
    override = os.environ.get("KENNING_HOME")
    if override:
        return Path(override)
    return hostos.folders()[1]


def home_error(exc: OSError) -> IndexError_:
    """The error for a kenning home (or a folder in it) that cannot be created or written."""
    home = kenning_home()
    where = exc.filename or home
    reason = (exc.strerror or str(exc)).lower()
    return IndexError_(f"Cannot write to {where} ({reason}).",
                       hint=f"kenning keeps its indexes in {home}: make it writable, or set "
                            "KENNING_HOME to a folder you can write to.")


def model_slug(model: str) -> str:
    """The part of an index's descriptor folder name that names its model."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-").lower()


def descriptor_slug(descriptor: Mapping[str, Any]) -> str:
    """A readable, collision-safe folder name for an embedding descriptor."""
    model = model_slug(str(descriptor["model"]))
    canonical = json.dumps(dict(descriptor), sort_keys=True)
    digest = hashlib.blake2b(canonical.encode(), digest_size=4).hexdigest()
    return f"{model}-{descriptor['dims']}-{digest}"


def index_dir(descriptor: Mapping[str, Any], pid: str) -> Path:
    if not is_valid_id(pid):  # config ids are checked on load; this guards every other way in
        raise UsageError(f"{pid!r} is not a valid project id: use {ID_RULE}.")
    return kenning_home() / "indices" / descriptor_slug(descriptor) / pid
