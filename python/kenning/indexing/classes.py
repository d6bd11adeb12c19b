"""What a file or region is, beyond being code: test code, documentation, generated text, shell
completion scripts, examples, vendored or legacy copies.

Paths say most of it (``tests/``, ``*_test.go``, ``*.spec.ts``, ``*Test.java``, ``docs/``,
``Cargo.lock``); a file's first lines say it is generated (``chunking.generated``, stored with
each chunk); the language says prose (Markdown, reStructuredText, man pages); the symbol
says inline test code (a Rust ``#[cfg(test)] mod tests`` qualifies its members ``tests.*``).
The kinds that need evidence beyond the path (vendored copies, fixtures, data and grammars,
generated tables: ``indexing.kinds``) are decided when the file is indexed and stored with each
chunk (``file_kind``); where one is stored it is the chunk's class, a correction the user wrote
in ``.kenningkinds`` included. Ranking puts all these below the implementation unless the query
asks for them, and ``--kind`` filters by them inside retrieval (``chunk_class``, which the
store calls on each chunk).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from kenning.chunking import DOCS_LANGUAGES
from kenning.tokens import QUALIFIER

# category -> a path pattern
_PATTERNS = {
    "test": re.compile(
        r"(^|/)(tests?|testing|__tests__|spec|specs|test_?utils|testdata|fixtures?)(/|$)"
        r"|(^|/)(test_[^/]*|[^/]*_test\.[^/]+|[^/]*_tests\.[^/]+|[^/]*\.(test|spec)\.[^/]+"
        r"|[^/]*_spec\.[^/]+|[^/]*Tests?\.[^/]+|conftest\.py)$"),
    "example": re.compile(r"(^|/)[_.]?(examples?|samples?|demos?|docs_src|tutorials?"
                          r"|benchmarks?|benches)(/|$)"),
    "vendored": re.compile(r"(^|/)(vendor|vendored|third_party|thirdparty|node_modules|external"
                           r"|extern|deps)(/|$)"),
    "generated": re.compile(
        r"(^|/)(generated|gen|__generated__|gen-[a-z]+)(/|$)|_pb2(_grpc)?\.pyi?$"
        # protobuf, gRPC and Thrift outputs; minified and generated files by their names
        r"|\.pb\.(go|cc|h|gw\.go|validate\.go)$|_grpc\.pb\.go$|\.pb\.(ts|js)$"
        r"|_pb\.(js|d\.ts)$|_grpc_pb\.(js|d\.ts)$|\.pb\.swift$|\.grpc\.swift$"
        r"|\.min\.(js|css)$|\.generated\.[^/]+$|_generated\.[^/]+$"
        # lock files and API dumps: written by tools, read by tools
        r"|\.lock$|(^|/)(go\.sum|package-lock\.json|npm-shrinkwrap\.json|pnpm-lock\.yaml)$"
        r"|(^|/)godoc[^/]*\.txt$"),
    # prose only: a release workflow (release.yml) is code
    "changelog": re.compile(r"(^|/)(changes|changelog|history|news|releases?|release[-_]notes)"
                            r"(\.(md|markdown|rst|txt|adoc))?$", re.IGNORECASE),
    "compat": re.compile(r"(^|/)_?(compat|legacy|polyfills?|shims?|deprecated|obsolete)(/|$)"
                         r"|(^|/)[^/]*(compat|legacy)\.[^/]+$"),
    # man pages (roff sources `fd.1`, `man/`), besides the prose languages
    "docs": re.compile(r"(^|/)man[1-9]?/|(^|/)[^/.]+\.[1-9](\.in)?$"),
    "completion": re.compile(r"(^|/)(completions?|autocomplete)(/|$)|(^|/)_[\w-]+$"
                             r"|[^/]*[-_.]completions?(\.[a-z]+)?$"),
}
_VERSION_DIR = re.compile(r"(^|/)v(\d+)/")
# A folder or file named as the alternative of another: ``time_alt/``, ``darwin-legacy/``.
_ALTERNATIVE = re.compile(r"(^|/)([^/]+?)[_-](old|alt|legacy|deprecated|bak|orig)(/|\.[^/]*$)",
                          re.IGNORECASE)
# Symbol components that mark test code inside a source file (`mod tests` and its members).
_TEST_SCOPES = frozenset({"test", "tests"})

# The class a --kind filter selects: a stored file kind, else the first category of a chunk in
# this order, else "code".
CLASSES = ("vendored", "generated", "fixture", "data", "docs", "test", "completion", "example")
# the multiplier a chunk of each category gets in ranking unless the query asks for it; a first
# index takes files in the same order (``indexing.priority``)
PENALTY = {"test": 0.3, "example": 0.6, "vendored": 0.5, "generated": 0.5, "compat": 0.6,
           "changelog": 0.4, "docs": 0.35, "completion": 0.5, "fixture": 0.3, "data": 0.35}
_CLASS_OF = {"changelog": "docs"}  # release notes are written by people, for people
# The categories that say what a file is (the rest, compat and changelog, say how old or what
# for): a file kind the user stored in place of them wins.
_KIND_CATEGORIES = frozenset({*CLASSES, "changelog"})


@lru_cache(maxsize=16384)  # per path and symbol: the same ones come back search after search
def categories(path: str, language: str | None = None, symbol: str | None = None,
               generated: bool = False, file_kind: str | None = None) -> tuple[str, ...]:
    """The categories of a chunk (none for the implementation itself); ``generated``: its
    file's first lines say a tool wrote it (``chunking.generated``); ``file_kind``: the kind
    stored for its file (``indexing.kinds``), "code" when the user says so."""
    found = [name for name, pattern in _PATTERNS.items() if pattern.search(path)]
    if generated and "generated" not in found:
        found.append("generated")
    if language in DOCS_LANGUAGES and "docs" not in found:
        found.append("docs")
    if file_kind == "code":
        found = [c for c in found if c not in _KIND_CATEGORIES]
    elif file_kind is not None and file_kind not in found:
        found.append(file_kind)
    if symbol and "test" not in found and _TEST_SCOPES.intersection(QUALIFIER.split(symbol)):
        found.append("test")
    return tuple(found)


def chunk_class(path: str, language: str | None, symbol: str | None,
                generated: bool = False, file_kind: str | None = None) -> str:
    """One of CLASSES, or "code" for the implementation (legacy code included): the stored
    kind of its file where there is one (a test module inside code is "test")."""
    if file_kind is not None and file_kind != "code":
        return file_kind
    found = {_CLASS_OF.get(c, c)
             for c in categories(path, language, symbol, bool(generated), file_kind)}
    return next((c for c in CLASSES if c in found), "code")


def superseded(paths: Iterable[str], query: str = "") -> set[str]:
    """The paths under a version folder (``v1/``) whose counterpart, the same path without
    that folder or under a later version, is among ``paths`` too: copies kept for old users
    (``pydantic/v1/fields.py`` beside ``pydantic/fields.py``); and the paths in a folder or
    file named as another's alternative (``time_alt/``, ``client-legacy/``, ``parse_old.py``)
    when that other is among them. A version or an alternative the query names stays."""
    paths = set(paths)
    named = {m.group(1) for m in re.finditer(r"\bv(\d+)\b", query.lower())}
    words = set(re.findall(r"[a-z]+", query.lower()))
    old = {path for path in paths if _alternative_of(path, paths, words)}
    groups: dict[str, list[tuple[float, str]]] = {}
    for path in paths:
        found = _VERSION_DIR.search(path)
        if found is None:
            groups.setdefault(path, []).append((float("inf"), path))
        elif found.group(2) not in named:
            rest = path[: found.start()] + found.group(1) + path[found.end():]
            groups.setdefault(rest, []).append((int(found.group(2)), path))
    for group in groups.values():
        newest = max(version for version, _ in group)
        old.update(path for version, path in group if version < newest)
    return old


def _alternative_of(path: str, paths: set[str], words: set[str]) -> bool:
    """Whether ``path`` is in a folder or file named as the alternative of one in ``paths``."""
    found = _ALTERNATIVE.search(path)
    if found is None or found.group(3).lower() in words:
        return False
    current = path[: found.start()] + found.group(1) + found.group(2)
    if found.group(4) == "/":  # a folder: any file of its counterpart
        return any(p.startswith(current + "/") for p in paths)
    return current + found.group(4) in paths
