"""Which files of a project get indexed.

Rules, strongest first:

1. ``.kenningignore`` files (gitignore syntax, any level, deeper files win): a match decides,
   so ``!pattern`` re-includes even what the default excludes or ``.gitignore`` would drop.
2. Default excludes: dependency and build folders (``node_modules``, virtualenvs, ``dist``,
   ``build``, ``target``, caches, ``.git``), lock files, minified bundles and source maps.
3. ``.gitignore`` files at every level (deeper files win, negations honoured), then
   ``.git/info/exclude``.

Then files larger than ``max_file_size``, binary files (a NUL byte in the first 8 KiB) and
minified or machine-written data (no line break in the first 8 KiB of a longer file: bundles,
one-line JSON such as a tokenizer vocabulary; SVG, JSON, JavaScript and CSS of long lines, such
as an icon's one-line SVG) are skipped. Ignored directories are pruned,
never walked. Symlinks are not followed: one pointing inside the root is an alias of a path the
walk reaches under its own name (as git stores it; indexing both would return every result
twice), one pointing outside leaves the project. A folder already open higher up (a bind mount
loop) is not entered again. Unreadable files and directories are skipped silently: one bad
file never stops a walk. Every folder, ignore file and file is opened through
``kenning.safe_read`` (no symlink at any step, regular files only, at most ``max_file_size``
bytes), so a path swapped for a symlink or a FIFO after the walk listed it is skipped, not
followed or waited on; an ignore file that is a symlink is no rule, as in git.

Ignore files are policy, not content: each is read whole up to ``IGNORE_FILE_LIMIT`` (16 MiB,
whatever ``max_file_size`` is). One larger than that cannot be applied, and skipping it would
index what it excludes (a ``secrets.py``), so ``walk`` and ``changes`` refuse the project with a
``UsageError`` naming the file.

The tree walk runs in the Rust core (``kenning._core.walk``) when it is built; this module's
Python walk is its reference twin, used when ``KENNING_KERNELS=numpy`` forces the pure-Python
side (on POSIX: on Windows the walk is always the core's) or the core lacks the walk. Both
yield the same candidate files in the same order; the binary sniff and language detection below
are shared. ``changes`` is the refresh's view: the
walk compared with the stat data of the files indexed before (in the core as well), so that
only new and changed files are read and turned into records.
"""

from __future__ import annotations

import importlib
import os
import re
import stat
import warnings
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kenning import safe_read
from kenning.chunking import languages
from kenning.display import visible
from kenning.errors import UsageError
from kenning.project import DEFAULT_EXCLUDED_DIRS
from kenning.records import SourceFile

if TYPE_CHECKING:
    import pathspec  # the Python walk's matcher, imported only when that walk runs

    from kenning.indexing.kinds import Kinds

BINARY_SNIFF_BYTES = 8192
# Data and markup that tools write on one or a few long lines (a minified script or stylesheet,
# an icon's SVG, a JSON dump): skipped as minified when longer than MINIFIED_MIN_BYTES and its
# lines, in the first 8 KiB, run MINIFIED_LINE_BYTES long on average. Written by hand, such
# files average well under 100 bytes a line.
MINIFIABLE_SUFFIXES = (".svg", ".json", ".js", ".mjs", ".cjs", ".css")
MINIFIED_MIN_BYTES = 512
MINIFIED_LINE_BYTES = 300

DEFAULT_EXCLUDED_FILES = frozenset(
    {
        "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb",
        "bun.lock", "Cargo.lock", "poetry.lock", "uv.lock", "Pipfile.lock", "pdm.lock",
        "composer.lock", "Gemfile.lock", "go.sum", "flake.lock", "mix.lock", "pubspec.lock",
        "Podfile.lock", "packages.lock.json", "gradle.lockfile", "conda-lock.yml",
        ".DS_Store", "Thumbs.db", ".git",  # a worktree's or submodule's pointer file
    }
)  # fmt: skip
DEFAULT_EXCLUDED_DIR_SUFFIXES = (".egg-info",)
# Generated or binary by name alone: skipped without reading them.
DEFAULT_EXCLUDED_SUFFIXES = (
    ".min.js", ".min.css", ".min.mjs", ".map", ".bundle.js",
    ".pyc", ".pyo", ".class", ".o", ".obj", ".a", ".so", ".dylib", ".dll", ".exe", ".wasm",
    ".png", ".jpg", ".jpeg", ".gif", ".ico", ".webp", ".pdf", ".zip", ".gz", ".tgz", ".bz2",
    ".xz", ".7z", ".jar", ".whl", ".woff", ".woff2", ".ttf", ".otf", ".mp3", ".mp4",
    ".sqlite", ".db", ".onnx", ".pt", ".bin", ".npy", ".parquet",
)  # fmt: skip
# A folder holding one of these files is an environment, whatever its name.
ENV_MARKERS = ("pyvenv.cfg", "conda-meta")

IGNORE_FILE = ".gitignore"
KENNING_IGNORE_FILE = ".kenningignore"
IGNORE_FILE_LIMIT = 16 * 1024 * 1024  # bytes; a larger ignore file refuses the walk

# Every language a chunk can have (the values `search --lang` accepts).
LANGUAGES = frozenset(languages.LANGUAGES)


def detect_language(path: str) -> str | None:
    """The tree-sitter language name for ``path`` by file name or extension, else None."""
    name = path.rsplit("/", 1)[-1]
    if name in languages.BY_FILENAME:
        return languages.BY_FILENAME[name]
    dot = name.rfind(".")
    if dot <= 0:
        return None
    return languages.BY_EXTENSION.get(name[dot:].lower())


@dataclass
class WalkStats:
    """What a walk left out, by reason (``ignored``, ``default``, ``too_large``, ``binary``,
    ``minified``, ``symlink``, ``special`` (a FIFO or device met when reading), ``unreadable``,
    ``name`` (not UTF-8)); pruned folders count once, as a folder."""

    skipped: Counter[str] = field(default_factory=Counter)
    skipped_dirs: Counter[str] = field(default_factory=Counter)
    # reason -> skipped paths (folders end in "/"), kept only when asked for: set it to {} and
    # walk with the Python walker (the Rust one counts only)
    paths: dict[str, list[str]] | None = None
    # ignore files over IGNORE_FILE_LIMIT, sorted once the walk is over: rules not applied
    oversized_ignores: list[str] = field(default_factory=list)

    def skip(self, reason: str, path: str, *, folder: bool = False) -> None:
        (self.skipped_dirs if folder else self.skipped)[reason] += 1
        if self.paths is not None:
            self.paths.setdefault(reason, []).append(path + "/" if folder else path)


@dataclass(frozen=True, slots=True)
class _Rules:
    """Ignore specs of one folder, with the folder's path relative to the root ("" or "a/b/")."""

    prefix: str
    git: pathspec.GitIgnoreSpec | None
    kenning: pathspec.GitIgnoreSpec | None


def _read_spec(
    dir_fd: int, name: str, limit: int, rel: str, stats: WalkStats
) -> pathspec.GitIgnoreSpec | None:
    """The rules of an ignore file; none when it is a symlink (git does not follow one either)
    or not a regular file; one over ``limit`` bytes is listed in ``stats`` (read whole or not
    at all)."""
    try:
        data, _ = safe_read.read_at(dir_fd, name, limit)
    except safe_read.Refused as refused:
        if refused.reason == "too_large":
            stats.oversized_ignores.append(rel)
        return None
    # as the Rust walk reads it (invalid UTF-8 replaced), then one character per byte
    spec = compile_patterns(_bytewise(data.decode("utf-8", "replace")).splitlines())
    return spec if len(spec) else None


def compile_patterns(lines: list[str]) -> pathspec.GitIgnoreSpec:
    """The rules of an ignore file's lines, as the Rust walk reads them: a line that is no
    valid pattern (``\\``, ``!``, ``[z-a]``, ``[[:alpha:]``) is one rule lost, never the whole
    file. re2 matches all patterns in one pass but refuses a set that is too large (thousands
    of patterns, one very long line): then Python's ``re`` matches them one by one."""
    import pathspec
    import re2
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    patterns = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # re: "possible nested set" in "[["
        for line in lines:
            spelled = _posix_classes(line)
            if spelled is not None:
                spelled = _slashless_brackets(spelled)
            if spelled is None:
                continue
            try:
                pattern = GitIgnoreSpecPattern(spelled)
            except (ValueError, re.error):
                continue
            if pattern.regex is not None and "[^" in pattern.regex.pattern:
                pattern = GitIgnoreSpecPattern(
                    re.compile(_no_separator(pattern.regex.pattern)), pattern.include)
            patterns.append(pattern)
    try:
        return pathspec.GitIgnoreSpec(patterns)
    except re2.error:
        return pathspec.GitIgnoreSpec(patterns, backend="simple")


# POSIX classes inside brackets, as git and the Rust walk read them; pathspec would take
# "[[:alpha:]]" for the characters "[:alph" and then a "]".
# The ranges of the printable and punctuation classes leave out "/", which no bracket matches
# and which pathspec would cut the pattern at, and none starts with "!" or "^" (a negation
# where the class opens its bracket).
_POSIX_CLASSES = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
    "xdigit": "0-9A-Fa-f", "blank": " \t", "space": " \t\n\v\f\r", "cntrl": "\x00-\x1f\x7f",
    "graph": "0-~!-.", "print": " -.0-~", "punct": "{-~!-.:-@[-`",
}  # fmt: skip
_POSIX_CLASS = re.compile(r"\[:([a-z]*):\]")


def _brackets(text: str, negators: str, *,
              classes: bool = False) -> Iterator[tuple[str, str, bool, bool]]:
    """``text`` in pieces as a glob or a regex reads its brackets: ``(kind, piece, negated,
    inside)`` with kind "escape" (a backslash and what it escapes), "open" (``[``, a negator
    from ``negators`` after it, and a ``]`` right after those, which is literal), "close",
    "class" (with ``classes``, a POSIX class such as ``[:alpha:]`` inside a bracket), or
    "char"; ``negated`` tells whether the bracket (open, or just closed) is negated, ``inside``
    whether a bracket is open after the piece."""
    i, inside, negated = 0, False, False
    while i < len(text):
        char = text[i]
        if char == "\\":
            yield "escape", text[i:i + 2], negated, inside
            i += 2
        elif not inside and char == "[":
            after = text[i + 1:i + 2]
            negated, inside = after != "" and after in negators, True
            opening = 2 if negated else 1
            if text.startswith("]", i + opening):
                opening += 1
            yield "open", text[i:i + opening], negated, inside
            i += opening
        elif inside and classes and (found := _POSIX_CLASS.match(text, i)) is not None:
            yield "class", found.group(), negated, inside
            i = found.end()
        elif inside and char == "]":
            inside = False
            yield "close", char, negated, inside
            i += 1
        else:
            yield "char", char, negated, inside
            i += 1


def _posix_classes(line: str) -> str | None:
    """``line`` with each POSIX class in a bracket spelled out; None, dropping the line, for
    a class kenning does not spell out or a bracket that a class leaves unclosed."""
    if "[:" not in line:
        return line
    pieces = list(_brackets(line, "!^", classes=True))
    out: list[str] = []
    for kind, piece, _, _ in pieces:
        if kind == "class" and piece[2:-2] not in _POSIX_CLASSES:
            return None
        out.append(_POSIX_CLASSES[piece[2:-2]] if kind == "class" else piece)
    spelled = any(kind == "class" for kind, *_ in pieces)
    if spelled and pieces[-1][3]:  # a bracket a class left unclosed
        return None
    return "".join(out)


def _slashless_brackets(line: str) -> str | None:
    """``line`` without the ``/`` of its brackets, as git reads them: a bracket never matches
    the separator, but pathspec cuts a pattern at every ``/`` first, brackets or not. A bracket
    left empty matches nothing, so neither does the line (None); a negated one is any character
    (``?``). The ``/`` still anchored the pattern to its ignore file's folder, so a leading
    ``/`` keeps that when no other ``/`` does."""
    out: list[str] = []
    bracket: list[str] | None = None  # the pieces of the bracket being read
    dropped = False
    for kind, piece, negated, _ in _brackets(line, "!^"):
        if kind == "open":
            bracket = [piece]
        elif bracket is None:
            out.append(piece)
        elif kind == "close":
            if len(bracket) == 1 and not bracket[0].endswith("]"):  # nothing left in it
                if not negated:
                    return None
                bracket = ["?"]
            else:
                bracket.append(piece)
            out.extend(bracket)
            bracket = None
        elif piece in ("/", "\\/"):
            dropped = True
        else:
            bracket.append(piece)
    if not dropped or bracket is not None:  # one never closed: git matches nothing anyway
        return line
    text = "".join(out)
    if "/" not in text.rstrip(" ").removesuffix("/"):
        text = "!/" + text[1:] if text.startswith("!") else "/" + text
    return text


def _no_separator(regex: str) -> str:
    """``regex`` with ``/`` added to each negated set: in git (and the Rust walk) ``[!x]`` never
    matches the separator, but pathspec's ``[^x]`` does, so ``a[!x]`` would ignore
    ``a/x.py``. The ``/`` goes last, since a ``]`` right after ``[^`` is a literal."""
    out: list[str] = []
    for kind, piece, negated, _ in _brackets(regex, "^"):
        if kind == "close" and negated:
            out.append("/")
        out.append(piece)
    return "".join(out)


def _decide(stack: list[_Rules], rel: str, is_dir: bool, attr: str) -> bool | None:
    """True = ignored, False = explicitly kept, None = no rule matched; deepest folder wins."""
    for rules in reversed(stack):
        spec = getattr(rules, attr)
        if spec is None:
            continue
        sub = _bytewise(rel[len(rules.prefix) :])
        verdict = _folder_verdict(spec, sub + "/") if is_dir else spec.check_file(sub).include
        if verdict is not None:
            return bool(verdict)
    return None


def _bytewise(text: str) -> str:
    """``text`` with one character per byte of its UTF-8 (a name that is not UTF-8: its own
    bytes): git matches patterns byte by byte, so ``?`` is one byte and ``?.py`` does not
    match ``é.py``, where pathspec would take one character. Both a pattern and a name go
    through this, so a literal non-ASCII character still matches itself."""
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode("latin-1")


def _folder_verdict(spec: pathspec.GitIgnoreSpec, path: str) -> bool | None:
    """The last pattern matching a folder decides, as in git: GitIgnoreSpec ranks a folder
    pattern below an earlier file pattern even for the folder itself, so ``*`` then ``!*/``
    would prune every folder."""
    verdict = None
    for pattern in spec.patterns:
        if pattern.include is not None and pattern.match_file(path) is not None:
            verdict = pattern.include
    return verdict


def _default_excluded(name: str, is_dir: bool) -> bool:
    if is_dir:
        return name in DEFAULT_EXCLUDED_DIRS or name.endswith(DEFAULT_EXCLUDED_DIR_SUFFIXES)
    return name in DEFAULT_EXCLUDED_FILES or name.endswith(DEFAULT_EXCLUDED_SUFFIXES)


_SHEBANG = re.compile(rb"#![^\n]*?\b(%s)[0-9.]*\b"
                      % "|".join(map(re.escape, languages.BY_INTERPRETER)).encode())


def _shebang_language(head: bytes) -> str | None:
    found = _SHEBANG.match(head)
    return languages.BY_INTERPRETER[found.group(1).decode()] if found else None


_Row = tuple[str, int, int]  # a candidate file: relative path, size, mtime_ns


@dataclass(slots=True)
class _Folder:
    prefix: str  # relative path with a trailing slash ("" for the root)
    fd: int  # the open folder: names inside it are opened relative to it
    rules: list[_Rules]
    ancestors: frozenset[tuple[int, int]]
    rows: list[tuple[str, os.DirEntry[str], bool, bool]]  # (sort key, entry, is_dir, is_link)
    next: int = 0


class _Walker:
    """Folders are opened from their parent's descriptor without following symlinks, so a
    folder swapped for a symlink during the walk is not entered."""

    def __init__(self, root: str, stats: WalkStats, limit: int) -> None:
        self.root = root
        self.stats = stats
        self.limit = limit

    def _skip_reason(self, stack: list[_Rules], rel: str, name: str, is_dir: bool) -> str | None:
        kept = _decide(stack, rel, is_dir, "kenning")
        if kept is not None:
            return "ignored" if kept else None
        if _default_excluded(name, is_dir):
            return "default"
        return "ignored" if _decide(stack, rel, is_dir, "git") else None

    def walk(self) -> Iterator[_Row]:
        """Depth first over a stack of open folders (no generator per level: a file deep in
        the tree is not passed up through one frame per folder)."""
        try:
            root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            self.stats.skip("unreadable", "", folder=True)
            return
        stack: list[_Folder] = []
        try:
            exclude = _read_exclude(root_fd, self.limit, self.stats)
            # .git/info/exclude sits below every .gitignore: a root-level entry under them.
            base = [_Rules("", exclude, None)] if exclude else []
            if (root := self._open(root_fd, "", base, frozenset())) is not None:
                stack.append(root)
            yield from self._walk(stack)
        finally:
            for folder in stack:
                os.close(folder.fd)

    def _walk(self, stack: list[_Folder]) -> Iterator[_Row]:
        while stack:
            folder = stack[-1]
            if folder.next >= len(folder.rows):
                os.close(stack.pop().fd)
                continue
            _, entry, is_dir, is_link = folder.rows[folder.next]
            folder.next += 1
            rel = folder.prefix + entry.name
            reason = self._skip_reason(folder.rules, rel, entry.name, is_dir)
            if reason is None and is_link:
                reason = "symlink"
            if reason is not None:
                self.stats.skip(reason, rel, folder=is_dir)
            elif is_dir:
                try:
                    fd = safe_read.open_dir_at(folder.fd, entry.name)
                except safe_read.Refused as refused:  # swapped for a symlink since listed
                    self.stats.skip(refused.reason, rel, folder=True)
                    continue
                inner = self._open(fd, rel + "/", folder.rules, folder.ancestors)
                if inner is not None:
                    stack.append(inner)
            else:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    self.stats.skip("unreadable", rel)
                    continue
                if stat.S_ISREG(st.st_mode):  # a FIFO, socket or device is no file to read
                    yield rel, st.st_size, safe_read.mtime_ns(st)

    def _open(
        self,
        fd: int,
        prefix: str,
        rules: list[_Rules],
        ancestors: frozenset[tuple[int, int]],
    ) -> _Folder | None:
        """A folder's entries, sorted, with the ignore rules that apply inside it; takes
        ``fd`` over (closed here when the folder is not entered)."""
        try:
            st = os.fstat(fd)
            key = (st.st_dev, st.st_ino)
            if key in ancestors:  # a bind mount of a folder above: walking it never ends
                self.stats.skip("symlink", prefix[:-1], folder=True)
                os.close(fd)
                return None
            with os.scandir(fd) as it:
                entries = list(it)
        except OSError:
            self.stats.skip("unreadable", prefix[:-1], folder=True)
            os.close(fd)
            return None
        names = {e.name for e in entries}
        is_env = prefix and any(marker in names for marker in ENV_MARKERS)
        if is_env and _decide(rules, prefix[:-1], True, "kenning") is not False:
            self.stats.skip("default", prefix[:-1], folder=True)  # a virtualenv, whatever its name
            os.close(fd)
            return None
        if IGNORE_FILE in names or KENNING_IGNORE_FILE in names:
            git = ken = None
            if IGNORE_FILE in names:
                git = _read_spec(fd, IGNORE_FILE, self.limit, prefix + IGNORE_FILE, self.stats)
            if KENNING_IGNORE_FILE in names:
                ken = _read_spec(fd, KENNING_IGNORE_FILE, self.limit,
                                 prefix + KENNING_IGNORE_FILE, self.stats)
            if git or ken:
                rules = [*rules, _Rules(prefix, git, ken)]
        rows = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()  # follows symlinks
                is_link = entry.is_symlink()
            except OSError:
                self.stats.skip("unreadable", prefix + entry.name)
                continue
            rows.append((entry.name + "/" if is_dir else entry.name, entry, is_dir, is_link))
        rows.sort(key=lambda row: row[0])  # "a.txt" < "a/b": output sorted by path
        return _Folder(prefix, fd, rules, ancestors | {key}, rows)


def _read_exclude(root_fd: int, limit: int, stats: WalkStats) -> pathspec.GitIgnoreSpec | None:
    """The rules of ``.git/info/exclude``, each folder on the way opened without following."""
    try:
        git = safe_read.open_dir_at(root_fd, ".git")
    except safe_read.Refused:
        return None
    try:
        info = safe_read.open_dir_at(git, "info")
    except safe_read.Refused:
        return None
    finally:
        os.close(git)
    try:
        return _read_spec(info, "exclude", limit, ".git/info/exclude", stats)
    finally:
        os.close(info)


def _python_rows(root: str, stats: WalkStats, limit: int) -> Iterable[_Row]:
    """The candidate files; ignore files over ``limit`` bytes go to ``stats``."""
    return _Walker(root, stats, limit).walk()


_Change = tuple[str, int, int, bool]  # a new or changed file: path, size, mtime_ns, known before


def _rust_kwargs() -> dict[str, list[str]]:
    return {
        "dirs": sorted(DEFAULT_EXCLUDED_DIRS),
        "dir_suffixes": list(DEFAULT_EXCLUDED_DIR_SUFFIXES),
        "files": sorted(DEFAULT_EXCLUDED_FILES),
        "suffixes": list(DEFAULT_EXCLUDED_SUFFIXES),
        "env_markers": list(ENV_MARKERS),
    }


def _rust_rows(root: str, stats: WalkStats, limit: int) -> Iterable[_Row]:
    core = importlib.import_module("kenning._core")
    files, skipped, skipped_dirs, oversized = core.walk(
        root, ignore_file_limit=limit, **_rust_kwargs()
    )
    stats.skipped.update(skipped)
    stats.skipped_dirs.update(skipped_dirs)
    stats.oversized_ignores.extend(oversized)
    return files  # type: ignore[no-any-return]


def _parse_known(blob: bytes) -> dict[str, tuple[int, int]]:
    """The Python reading of the stat blob ``kenning.store.db.read_file_stats`` returns."""
    if not blob:
        return {}
    fields = blob.split(b"\0")
    if len(fields) % 3:
        raise ValueError("known stat data: a record lacks its size or mtime")
    return {fields[i].decode("utf-8", "surrogateescape"):
            (_integer(fields[i + 1], 0), _integer(fields[i + 2], -(1 << 63)))
            for i in range(0, len(fields), 3)}


_INTEGER = re.compile(rb"-?[0-9]+")


def _integer(text: bytes, low: int) -> int:
    """A decimal integer in 64 bits as SQLite writes one (the core reads them alike)."""
    if not _INTEGER.fullmatch(text) or not low <= (value := int(text)) < 1 << 63:
        raise ValueError("known stat data: a size or mtime is not a number")
    return value


def _python_changes(
    root: str, known: bytes, max_file_size: int, every: bool, stats: WalkStats
) -> tuple[list[_Change], list[str], int]:
    stamps = _parse_known(known)
    found: list[_Change] = []
    unchanged = 0
    for rel, size, mtime_ns in _python_rows(root, stats, IGNORE_FILE_LIMIT):
        if size > max_file_size:
            stats.skip("too_large", rel)
            continue
        stamp = stamps.pop(rel, None)
        if stamp == (size, mtime_ns) and not every:
            unchanged += 1
        else:
            found.append((rel, size, mtime_ns, stamp is not None))
    return found, sorted(stamps), unchanged


def _rust_changes(
    root: str, known: bytes, max_file_size: int, every: bool, stats: WalkStats
) -> tuple[list[_Change], list[str], int]:
    core = importlib.import_module("kenning._core")
    found, removed, unchanged, skipped, skipped_dirs, oversized = core.walk_changes(
        root, known, max_file_size=max_file_size, ignore_file_limit=IGNORE_FILE_LIMIT,
        all=every, **_rust_kwargs()
    )
    stats.skipped.update(skipped)
    stats.skipped_dirs.update(skipped_dirs)
    stats.oversized_ignores.extend(oversized)
    return found, removed, unchanged


WALKERS: dict[str, Callable[[str, WalkStats, int], Iterable[_Row]]] = {
    "python": _python_rows,
    "rust": _rust_rows,
}
COMPARERS: dict[
    str, Callable[[str, bytes, int, bool, WalkStats], tuple[list[_Change], list[str], int]]
] = {"python": _python_changes, "rust": _rust_changes}


def _default_backend() -> str:
    from kenning import kernels

    # the Python walk opens POSIX descriptors: on handles (Windows) the walk is the core's,
    # whichever kernels are live
    if kernels.BACKEND != "rust" and not safe_read.BY_HANDLES:
        return "python"
    core = importlib.import_module("kenning._core")
    return "rust" if hasattr(core, "walk") and hasattr(core, "walk_changes") else "python"


BACKEND: str = _default_backend()


def _minified(rel: str, size: int, head: bytes) -> bool:
    """Whether a file is minified or machine-written on long lines: no line break in the first
    8 KiB of a longer file, or data or markup of long lines (MINIFIABLE_SUFFIXES)."""
    if size > BINARY_SNIFF_BYTES and b"\n" not in head:
        return True
    if size <= MINIFIED_MIN_BYTES or not rel.lower().endswith(MINIFIABLE_SUFFIXES):
        return False
    lines = head.rstrip(b"\n").count(b"\n") + 1
    return len(head) / lines > MINIFIED_LINE_BYTES


def _source_files(root: str, rows: list[tuple[str, int, int]], limit: int, stats: WalkStats,
                  kinds: Kinds | None = None) -> Iterator[SourceFile | None]:
    """``_source_file`` of each candidate ``(path, size, mtime_ns)``, in their order, their
    heads read together (``safe_read.heads``)."""
    heads = safe_read.heads(root, [row[0] for row in rows], limit, BINARY_SNIFF_BYTES)
    for (rel, size, mtime_ns), head in zip(rows, heads, strict=True):
        yield _source_file(root, rel, size, mtime_ns, head, stats, kinds)


def _source_file(root: str, rel: str, size: int, mtime_ns: int, head: bytes | safe_read.Refused,
                 stats: WalkStats, kinds: Kinds | None = None) -> SourceFile | None:
    """The record of a candidate file within the size limit, or None (counted in ``stats``)
    when ``head``, its first 8 KiB, shows it binary or minified, or it is no regular file in
    the project any more (``safe_read``). ``kinds`` gives it the kind its evidence shows."""
    if isinstance(head, safe_read.Refused):
        stats.skip(head.reason, rel)
        return None
    if b"\0" in head:
        stats.skip("binary", rel)
        return None
    if _minified(rel, size, head):
        stats.skip("minified", rel)  # chunks no one would search, found for any query
        return None
    language = detect_language(rel) or _shebang_language(head)  # bin/deploy: ask #!
    kind = kinds.of(rel, size, language, head) if kinds is not None else None
    return SourceFile(rel, Path(root + os.sep + rel), size, mtime_ns, language, kind)


def walk(
    root: Path,
    *,
    max_file_size: int,
    stats: WalkStats | None = None,
    backend: str | None = None,
    kinds: Kinds | None = None,
) -> Iterator[SourceFile]:
    """Every file of ``root`` to index, sorted by relative POSIX path; never raises for a file.

    Pass ``stats`` to learn what was skipped and why (``kenning index --dry-run`` reports it).
    ``backend`` ("rust" or "python") overrides ``BACKEND``; ``kinds`` decides each file's kind.
    """
    stats = stats if stats is not None else WalkStats()
    real = os.path.realpath(root)
    rows = list(WALKERS[backend or BACKEND](real, stats, IGNORE_FILE_LIMIT))
    _refuse_oversized_ignores(real, stats)
    candidates = []
    for rel, size, mtime_ns in rows:
        if size > max_file_size:
            stats.skip("too_large", rel)
        elif not storable(rel):
            stats.skip("name", rel)
        else:
            candidates.append((rel, size, mtime_ns))
    yield from filter(None, _source_files(real, candidates, max_file_size, stats, kinds))


def listed(root: Path, *, max_file_size: int) -> Iterator[tuple[str, int, str | None]]:
    """(path, size, language) of the files a walk would consider, from the folder listings
    and stat data alone: no file is read, so binary and minified files are among them. What an
    estimate needs (``services.embed_budget``), at a fraction of ``walk``'s cost."""
    real = os.path.realpath(root)
    stats = WalkStats()
    rows = list(WALKERS[BACKEND](real, stats, IGNORE_FILE_LIMIT))
    _refuse_oversized_ignores(real, stats)
    for rel, size, _ in rows:
        if size <= max_file_size:
            yield rel, size, detect_language(rel)


@dataclass(slots=True)
class Changes:
    """A walk compared with the files indexed before."""

    files: list[SourceFile]  # new and changed files to index, sorted by path
    removed: list[str]  # indexed paths to drop: deleted, now ignored, too large or not text
    unchanged: int  # files whose size and mtime are the indexed ones (not read at all)
    unnamed: list[str] = field(default_factory=list)  # left out: their names are not UTF-8


def changes(
    root: Path,
    *,
    max_file_size: int,
    known: bytes,
    every: bool = False,
    reread: Collection[str] = (),
    stats: WalkStats | None = None,
    backend: str | None = None,
    kinds: Kinds | None = None,
) -> Changes:
    """What a refresh must index and drop, given ``known``, the stat data of the files indexed
    before (the blob of ``kenning.store.db.read_file_stats``). A file whose size and mtime match
    was text when indexed and is not read again, so a refresh of an unchanged tree is a stat
    pass that builds no record at all. ``every`` lists unchanged files too (a full refresh);
    ``reread``, indexed files to read again although their size and mtime match (a search saw
    their bytes change: ``cp -p``, ``rsync -t``, tar keep both).
    Names that are not UTF-8 cannot be stored and are skipped (reason ``name``). ``kinds``
    decides the kind of each file listed.
    """
    stats = stats if stats is not None else WalkStats()
    real = os.path.realpath(root)
    found, removed, unchanged = COMPARERS[backend or BACKEND](
        real, known, max_file_size, every, stats
    )
    _refuse_oversized_ignores(real, stats)
    if reread:
        found, unchanged = _with_reread(real, found, unchanged, known, reread)
    files: list[SourceFile] = []
    unnamed: list[str] = []
    named: list[_Change] = []
    for change in found:
        if storable(change[0]):
            named.append(change)
        else:
            stats.skip("name", change[0])
            unnamed.append(change[0])
    records = _source_files(real, [change[:3] for change in named], max_file_size, stats, kinds)
    for (rel, *_, was_known), record in zip(named, records, strict=True):
        if record is not None:
            files.append(record)
        elif was_known:
            removed.append(rel)  # indexed as text, binary or unreadable now
    return Changes(files, sorted(removed), unchanged, unnamed)


def _with_reread(root: str, found: list[_Change], unchanged: int, known: bytes,
                 reread: Collection[str]) -> tuple[list[_Change], int]:
    """``found`` and ``unchanged`` with the indexed files of ``reread`` that the comparison
    took as unchanged moved to ``found``."""
    listed = {change[0] for change in found}
    indexed = set(known.split(b"\0")[::3])
    extra: list[_Change] = []
    for rel in sorted(set(reread) - listed):
        if rel.encode("utf-8", "surrogateescape") not in indexed:
            continue  # not indexed: the walk decides about it
        try:
            st = os.stat(root + os.sep + rel, follow_symlinks=False)
        except OSError:
            continue  # gone since: the comparison lists it as removed
        extra.append((rel, st.st_size, safe_read.mtime_ns(st), True))
    return sorted([*found, *extra]), unchanged - len(extra)


def _refuse_oversized_ignores(root: str, stats: WalkStats) -> None:
    """Refuse a walk that met an ignore file it could not apply (see the module docstring)."""
    stats.oversized_ignores.sort()
    if stats.oversized_ignores:
        first = stats.oversized_ignores[0]
        raise UsageError(
            f"The ignore file {first} of {root} is larger than "
            f"{IGNORE_FILE_LIMIT // (1024 * 1024)} MiB, so kenning cannot apply it and does not "
            "index the project (indexing it would take in files it excludes).",
            hint=f"Shrink or split {first}: ignore files are read whole, up to "
                 f"{IGNORE_FILE_LIMIT // (1024 * 1024)} MiB.")


RENAME_HINT = "Rename such files to UTF-8 names to have them searched."


def unnamed_message(paths: list[str]) -> str:
    """The sentence that names files left out for names that are not UTF-8."""
    shown = ", ".join(visible(path) for path in paths[:3])
    more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
    return f"Not indexed, for a name that is not UTF-8: {shown}{more}."


def storable(name: str) -> bool:
    """Whether ``name`` can be stored: a name that is not UTF-8 (its bytes decoded as lone
    surrogates) cannot."""
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
