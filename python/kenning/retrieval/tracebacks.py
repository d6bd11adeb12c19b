"""Stack traces in a query: their frames, mapped to the project's files, and their messages.

A bug report often carries a traceback. Its frames name the files and lines where the failure
passed, and its message (``ValueError: bad thing``, ``panic: ...``) is text the code that raised
it often says. ``parse`` reads the frames of Python tracebacks (and pytest's short form),
Java/Kotlin stack traces (``Caused by`` too), Go panics and goroutine dumps, Rust backtraces and
panic messages, JavaScript/TypeScript stacks (V8 and Firefox) and C/C++ sanitizer reports, the
innermost frame first. ``locate`` maps a frame's path to an indexed file: the same relative
path, else the indexed path that the frame's path ends with (a path from another machine,
``/home/ci/build/proj/src/a.py`` is ``src/a.py``), else the one indexed path that ends with the
frame's relative path (``src/x.rs`` of a crate in a workspace), and a Java frame by its package
path and file name. Frames of the standard library, installed packages and toolchains are
outside the project and ignored, unless the project is that package: a frame at
``.../site-packages/requests/sessions.py`` is in a checkout of requests that has one
``requests/sessions.py``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kenning.chunking.languages import frame_extensions

if TYPE_CHECKING:
    from kenning.store.reads import FileChunk


@dataclass(frozen=True, slots=True)
class Frame:
    path: str  # as the trace gives it, normalised to forward slashes without a scheme
    line: int
    function: str | None
    language: str
    outside: bool  # in a standard library, an installed package or a toolchain
    # the path within that package (``requests/sessions.py`` of ``.../site-packages/...``):
    # where the project searched is that package, the frame is in it all the same
    within: str | None = None


@dataclass(frozen=True, slots=True)
class Trace:
    frames: tuple[Frame, ...]  # innermost first, each (path, line) once
    messages: tuple[str, ...]  # the error lines' messages ("bad thing" of "ValueError: bad thing")
    frame_lines: frozenset[int]  # the numbers (0-based) of the query's lines that are frames


# -- the frame of each format -------------------------------------------------------------

# Line numbers are ASCII digits (``\d`` would take Arabic-Indic ones, which int() reads), at
# most nine of them: no file has a billion lines.
MAX_LINE_DIGITS = 9


def _ending(frames: str) -> str:
    """A pattern of the extensions of the files that ``frames`` traces name (the languages'
    ``frames`` part)."""
    return r"\.(?:" + "|".join(map(re.escape, frame_extensions(frames))) + ")"


_PYTHON = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>[0-9]+)(?:, in (?P<func>\S+))?')
_PYTEST = re.compile(rf"^(?P<path>[\w./\\-]+{_ending('python')}):(?P<line>[0-9]+): "
                     r"(?:in (?P<func>\S+)|\w+)")
_JAVA = re.compile(r"^\s*at (?:[\w.-]+(?:@[\w.-]+)?/+)?(?P<qual>[\w$.<>]+)"
                   rf"\((?P<file>[\w$.-]+{_ending('java')}):(?P<line>[0-9]+)\)")
_GO = re.compile(rf"^\s+(?P<path>\S+{_ending('go')}):(?P<line>[0-9]+)(?:\s+\+0x[0-9a-fA-F]+)?\s*$")
_RUST_AT = re.compile(rf"(?:^|\s)at (?P<path>\S+{_ending('rust')}):(?P<line>[0-9]+)(?::\d+)?\b")
_RUST_PANIC = re.compile(rf"panicked at (?:'(?P<msg>.*)', )?(?P<path>\S+{_ending('rust')})"
                         r":(?P<line>[0-9]+)(?::\d+)?:?\s*$")
_RUST_FUNC = re.compile(r"^\s*\d+: (?P<func>\S+)")
_JS_EXT = _ending("javascript")
_V8 = re.compile(r"^\s*at (?:(?:async |new )?(?P<func>[^\s(]+)(?: \[as [^\]]+\])? \()?"
                 rf"(?P<path>[^\s()]+?{_JS_EXT}):(?P<line>[0-9]+)(?::\d+)?\)?\s*$")
_FIREFOX = re.compile(rf"^\s*(?P<func>[^@\s]*)@(?P<path>\S+?{_JS_EXT}):(?P<line>[0-9]+)"
                      r"(?::\d+)?\s*$")
_SANITIZER = re.compile(r"^\s*#\d+ 0x[0-9a-fA-F]+ in (?P<func>.+?) "
                        r"(?P<path>[^\s()]+?):(?P<line>[0-9]+)(?::\d+)?\s*$")

# The lines that open a trace or join two: no words of the report.
_HEADER = re.compile(r"^\s*(?:Traceback \(most recent call last\):|stack backtrace:"
                     r"|goroutine \d+ \[[^\]]*\]:|During handling of the above exception"
                     r"|The above exception was the direct cause|\.\.\. \d+ more$)")
# The headers of a Python traceback, which start a trace of their own.
_CHAINED = ("Traceback", "During handling", "The above exception")
# The error line of each format: what was raised or panicked, and its message.
_ERROR = re.compile(r"^\s*(?:Caused by: |Exception in thread \"[^\"]*\" |Uncaught )?"
                    r"(?P<type>[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*"
                    r"(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fault|Panic|Throwable))"
                    r"(?:: (?P<msg>.+))?\s*$")
_GO_PANIC = re.compile(r"^(?:panic|fatal error): (?P<msg>.+?)(?: \[recovered\])?\s*$")
_SANITIZER_ERROR = re.compile(r"^==\d+==ERROR: \w+Sanitizer: (?P<msg>\S+)")
_RUST_MESSAGE_AFTER = re.compile(r"panicked at \S+\.rs:\d+(?::\d+)?:\s*$")

# Paths of code that is not the project's: standard libraries, installed packages, toolchains.
_OUTSIDE = re.compile(
    r"(?:^|/)(?:site-packages|dist-packages|node_modules|\.venv|venv|\.tox|\.nox)/"
    r"|/lib/python\d[\d.]*/|/Python\d+/Lib/|^<[^>]*>$|^<frozen "
    r"|^node:|^internal/|^(?:\w+:)?/?rustc/|/\.cargo/(?:registry|git)/|/\.rustup/"
    r"|^/?library/(?:std|core|alloc|panic_\w+|test)/src/"
    r"|/go/src/(?:runtime|testing|net|internal|reflect|sync|os)/|/usr/(?:local/)?(?:lib/)?go/"
    r"|/pkg/mod/|^GOROOT/|^\$GOROOT/"
    r"|^/usr/(?:include|lib|lib64|libexec)/|^/lib(?:64)?/|/compiler-rt/|/llvm-project/")
_OUTSIDE_JAVA = ("java.", "javax.", "jdk.", "sun.", "com.sun.", "kotlin.", "kotlinx.", "scala.",
                 "org.junit.", "junit.", "org.gradle.", "org.apache.maven.", "worker.org.gradle.")
# Where an installed package's own paths start in an outside path.
_PACKAGE_ROOT = re.compile(r"^.*/(?:site-packages|dist-packages|node_modules|lib/python\d[\d.]*"
                           r"|Python\d+/Lib"
                           r"|pkg/mod/[^/]+@[^/]+|registry/src/[^/]+/[^/]+|rustc/[0-9a-f]+)/")
# A URL's path (a bundle served over HTTP, a webpack source) is relative to some folder of the
# project; a file URL's is the machine's own.
_URL = re.compile(r"^(?:webpack|https?)://[^/]*/+")
_FILE_URL = re.compile(r"^file://(?:localhost)?(?=/)")


def _normalised(path: str) -> str:
    """``path`` with forward slashes and without a URL scheme and host or a leading ``./``."""
    path = path.strip().replace("\\", "/")
    path = _FILE_URL.sub("", _URL.sub("", path))
    path = re.sub(r"^[A-Za-z]:(?=/)", "", path)  # a Windows drive
    path = re.sub(r"(?:^|(?<=/))\./", "", path)
    return re.sub(r"/{2,}", "/", path)


def line_number(digits: str) -> int | None:
    """The line that ASCII ``digits`` name; None for a number no file reaches (more than
    MAX_LINE_DIGITS digits, which also keeps ``int()`` from its limit of 4,300)."""
    return int(digits) if len(digits) <= MAX_LINE_DIGITS else None


def _frame(path: str, line: str, func: str | None, language: str,
           outside: bool = False) -> Frame | None:
    number = line_number(line)
    if number is None or number < 1:
        return None
    norm = _normalised(path)
    if not (outside or _OUTSIDE.search(norm)):
        return Frame(norm, number, func or None, language, False)
    within = _PACKAGE_ROOT.sub("", norm) if _PACKAGE_ROOT.match(norm) else None
    if language == "java":  # a class of a library: its package path
        within = norm
    return Frame(norm, number, func or None, language, True, within)


def _java(match: re.Match[str]) -> Frame | None:
    qual = match.group("qual")
    parts = qual.split(".")
    package = "/".join(parts[:-2])  # the class and the method are the last two
    path = f"{package}/{match.group('file')}" if package else match.group("file")
    return _frame(path, match.group("line"), parts[-1], "java", qual.startswith(_OUTSIDE_JAVA))


def parse(text: str) -> Trace | None:
    """The frames and error messages of the traces in ``text``; None when it has no frame."""
    lines = text.splitlines()
    # each block: the frames of one trace in the order the text has them, and whether that
    # order is outermost first (Python's "most recent call last"). An error line or a chained
    # exception's header ends a block: the last block is the exception reported (Python) or
    # the root cause (Java's last "Caused by"), and its frames come first. (A goroutine dump
    # or a sanitizer report is one block, in its order: the failing goroutine or access first.)
    blocks: list[tuple[list[Frame], bool]] = []
    frame_lines: set[int] = set()
    messages: list[str] = []
    ended = False  # the last block ended

    def add(frame: Frame | None, number: int, outermost_first: bool) -> None:
        nonlocal ended
        frame_lines.add(number)
        if frame is None:
            return
        if ended or not blocks or blocks[-1][1] != outermost_first:
            blocks.append(([], outermost_first))
            ended = False
        blocks[-1][0].append(frame)

    for number, line in enumerate(lines):
        if m := _PYTHON.match(line):
            add(_frame(m["path"], m["line"], m["func"], "python"), number, True)
            below = lines[number + 1] if number + 1 < len(lines) else ""
            if below.startswith((" ", "\t")) and not (_PYTHON.match(below) or _ERROR.match(below)):
                frame_lines.add(number + 1)  # the source line Python prints under a frame
        elif m := _JAVA.match(line):
            add(_java(m), number, False)
        elif m := _RUST_PANIC.search(line):
            add(_frame(m["path"], m["line"], None, "rust"), number, False)
            if m["msg"]:
                messages.append(m["msg"])
            elif _RUST_MESSAGE_AFTER.search(line) and number + 1 < len(lines):
                messages.append(lines[number + 1].strip())
        elif m := _GO.match(line):
            above = lines[number - 1].strip() if number else ""
            func = re.sub(r"\([^()]*\)$", "", above) or None
            add(_frame(m["path"], m["line"], func, "go"), number, False)
            frame_lines.add(number - 1)
        elif m := _SANITIZER.match(line):
            add(_frame(m["path"], m["line"], m["func"], "c"), number, False)
        elif (m := _V8.match(line)) or (m := _FIREFOX.match(line)):
            add(_frame(m["path"], m["line"], m["func"], "javascript"), number, False)
        elif m := _RUST_AT.search(line):
            above = lines[number - 1] if number else ""
            func = f.group("func") if (f := _RUST_FUNC.match(above)) else None
            add(_frame(m["path"], m["line"], func, "rust"), number, False)
            frame_lines.add(number - 1)
        elif m := _PYTEST.match(line):
            add(_frame(m["path"], m["line"], m["func"], "python"), number, True)
        elif m := _HEADER.match(line):
            frame_lines.add(number)
            ended = ended or m.group(0).lstrip().startswith(_CHAINED)
        elif m := (_GO_PANIC.match(line) or _SANITIZER_ERROR.match(line)):
            messages.append(m["msg"])
        elif m := _ERROR.match(line):
            messages.append(m["msg"] or "")
            ended = True
    frames: list[Frame] = []
    for found, outermost_first in reversed(blocks):  # the last trace is the one reported
        frames += reversed(found) if outermost_first else found
    first: dict[tuple[str, int], Frame] = {}
    for frame in frames:
        first.setdefault((frame.path, frame.line), frame)
    unique = list(first.values())
    if not unique:
        return None
    frame_lines.discard(-1)
    return Trace(tuple(unique), tuple(dict.fromkeys(m.strip() for m in messages if m.strip())),
                 frozenset(frame_lines))


def without_frames(text: str, trace: Trace) -> str:
    """``text`` without its frame lines: the words of a bug report and its error lines."""
    return "\n".join(line for number, line in enumerate(text.splitlines())
                     if number not in trace.frame_lines)


# A quoted value, a number, an address or a punctuation mark in a message splits it: the code
# that raised it says the words around them (``"could not convert string to float: %r"``).
_MESSAGE_BREAK = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`|\[[^\]]*\]|0x[0-9a-fA-F]+|\d+"
                            r"|[:;,()=<>{}]")


def message_parts(messages: Iterable[str]) -> list[str]:
    """The runs of text that the messages say between their variable parts."""
    return [part.strip() for message in messages for part in _MESSAGE_BREAK.split(message)
            if part.strip()]


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


class Locator:
    """Maps frames' paths to the project's indexed paths."""

    def __init__(self, paths: Collection[str]) -> None:
        self.paths = set(paths)
        self.by_name: dict[str, list[str]] = {}
        for path in paths:
            self.by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)

    def locate(self, frame: Frame) -> str | None:
        """The indexed path ``frame`` names, or None (outside, not indexed, or ambiguous)."""
        if frame.outside:
            return self._package_file(frame.within)
        if frame.path in self.paths:
            return frame.path
        parts = _parts(frame.path)
        if not parts:
            return None
        same_name = self.by_name.get(parts[-1], [])
        # an indexed path that the frame's path ends with: the longest is the most specific
        ending = [p for p in same_name if parts[-len(_parts(p)):] == _parts(p)]
        if ending:
            return max(ending, key=len)
        if not frame.path.startswith("/"):  # a relative path that an indexed path ends with
            longer = [p for p in same_name if _parts(p)[-len(parts):] == parts]
            if len(longer) == 1:
                return longer[0]
        if frame.language == "java" and len(same_name) == 1:
            return same_name[0]  # a class whose folders do not follow its package
        return None

    def _package_file(self, within: str | None) -> str | None:
        """The one indexed path that ends with ``within``, a path inside an installed package
        of two parts or more (``requests/sessions.py``): the project is that package."""
        parts = _parts(within or "")
        if len(parts) < 2:
            return None
        found = [p for p in self.by_name.get(parts[-1], []) if _parts(p)[-len(parts):] == parts]
        return found[0] if len(found) == 1 else None


def located(trace: Trace, paths: Collection[str]) -> list[tuple[Frame, str]]:
    """The frames of ``trace`` in the project (innermost first) and their indexed paths."""
    locator = Locator(paths)
    return [(frame, path) for frame in trace.frames
            if (path := locator.locate(frame)) is not None]


def frame_chunks(frames: Sequence[tuple[Frame, str]],
                 file_chunks: dict[str, list[FileChunk]]) -> list[int]:
    """The ids of the chunks that hold each frame's line, innermost frame first, each once:
    of the chunks of its file that span the line, the smallest that declares something (the
    function the frame is in), else the smallest."""
    ids: list[int] = []
    for frame, path in frames:
        holding = [row for row in file_chunks.get(path, ()) if row[3] <= frame.line <= row[4]]
        if not holding:
            continue
        best = min(holding, key=lambda row: (row[6] is None, row[4] - row[3]))
        if best[0] not in ids:
            ids.append(best[0])
    return ids
