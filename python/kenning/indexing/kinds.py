"""What each file is to the project, decided when the walk lists it and stored with its chunks.

A file's kind is one of ``KINDS``. Most are known by the path at search time
(``indexing.classes``: tests, docs, examples, completions, generated names); the kinds this
module decides need evidence beyond the path, and are stored:

- ``vendored``: another project's code, copied in. A folder is such a copy when ``.gitmodules``
  names it, when it holds a repository of its own (a ``.git``), when it is a dependency tree
  its ecosystem writes (Go's ``vendor/`` beside ``vendor/modules.txt`` or ``go.mod``, PHP's
  ``vendor/`` with ``autoload.php`` or beside ``composer.json``, Ruby's beside a ``Gemfile``),
  when it is named for copies (``third_party/``, ``external/``, ``extern/``, ``vendored/``), or
  when it holds a licence file unlike every licence at the root (a copied library brings its
  own; a workspace member repeats the project's, years aside).
- ``generated``: a tool wrote it, as its first lines say (``chunking.generated``) or as its
  shape shows: a large source file whose first 8 KiB are literals alone (a table: Unicode
  data, a lexer's states, an embedded blob) is no hand-written code.
- ``fixture``: the inputs and expected outputs of tests (``testdata/``, ``tests/data/``,
  ``fixtures/``, ``__snapshots__/``, ``golden/``, ``*.golden``, ``*.snap``, syntax-test inputs).
- ``data``: grammars and syntax definitions (``.sublime-syntax``, ``.tmLanguage``...), locale
  tables (``.po``, ``locales/*.json``), patches, CSV and TSV, and YAML, JSON, XML or TOML over
  32 KiB.

Vendored folders known by more than a licence come first (a vendored module's ``testdata/``
is vendored), then fixtures (a test's sample source keeps its licence beside it).

``.kenningkinds`` at the project root corrects any of it: each line is a kind and a gitignore
pattern (``data assets/syntaxes/``, ``code src/generated/``); the last line that matches a
path decides, before any evidence. A change of that file, of ``.gitmodules`` or of the files
that are evidence (a licence, a manifest) re-decides every file's kind on the next refresh,
and only the files whose kind changed are chunked again (their vectors are kept by content).
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from kenning import safe_read
from kenning.chunking.generated import says_generated
from kenning.chunking.languages import named
from kenning.errors import UsageError
from kenning.records import FILE_KINDS

if TYPE_CHECKING:
    import pathspec

KINDS = FILE_KINDS
KINDS_FILE = ".kenningkinds"
GITMODULES = ".gitmodules"
# Bump when the rules below change: stored kinds are decided again on the next refresh.
RULES_VERSION = "1"

# A licence file by its name (LICENSE, COPYING, LICENSE-MIT, LICENCE.md; not docs/license.rst,
# a page about the project's licence, nor license-checks.sh) and by its words.
LICENCE = re.compile(r"(?i:licen[cs]e|copying|unlicense)(-[A-Z0-9][A-Z0-9.-]*)?(?i:\.(txt|md))?")
_LICENCE_WORDS = re.compile(rb"copyright|permission is hereby granted|licensed under"
                            rb"|general public license|public domain", re.IGNORECASE)
# Files whose arrival or removal can change the kind of other files.
EVIDENCE = re.compile(r"(^|/)(licen[cs]e[^/]*|copying[^/]*|unlicense[^/]*|modules\.txt"
                      r"|autoload\.php|go\.mod|composer\.json|gemfile)$", re.IGNORECASE)
_COPY_FOLDERS = frozenset({"third_party", "thirdparty", "third-party", "3rdparty", "external",
                           "extern", "vendored"})
# What a vendor/ folder holds when its ecosystem wrote it, and what stands beside it.
_VENDOR_INSIDE = frozenset({"modules.txt", "autoload.php", "composer", "bundle"})
_VENDOR_BESIDE = frozenset({"go.mod", "composer.json", "Gemfile", "Gemfile.lock"})

_FIXTURE = re.compile(
    r"(^|/)(testdata|test_data|test-data|fixtures?|__fixtures__|__snapshots__|goldens?"
    r"|syntax[-_]tests?)/"
    r"|(^|/)(tests?|__tests__|spec)/(.+/)?(data|snapshots|expected|examples)/"
    r"|\.(golden|snap|expected)$|(^|/)syntax_test_[^/]*$", re.IGNORECASE)
_GRAMMAR = re.compile(r"\.(sublime-syntax|tmlanguage|tmlanguage\.json|tmlanguage\.ya?ml"
                      r"|yaml-tmlanguage|tmtheme|tmpreferences|sublime-settings)$", re.IGNORECASE)
_LOCALE = re.compile(r"\.(po|pot|xliff|xlf|strings|arb)$"
                     r"|(^|/)(locales?|i18n|l10n|translations)/.*\.(json|ya?ml|properties|toml)$",
                     re.IGNORECASE)
_PATCH = re.compile(r"\.(patch|diff)$", re.IGNORECASE)  # changes to other files, not code
_TABLE = re.compile(r"\.(csv|tsv|psv)$", re.IGNORECASE)
DATA_LANGUAGES = named("data")
LARGE_DATA_BYTES = 32 * 1024
# A source file this large whose head is literals alone is a generated table.
TABLE_BYTES = 64 * 1024
_LITERALS = re.compile(rb"[\s\d,;:{}()\[\]<>=+\-.]*"
                       rb"|[\s\d,;:{}()\[\]<>=+\-.]*(\"[^\"]*\"|'[^']*'|0x[0-9a-fA-F]+"
                       rb"|[\s\d,;:{}()\[\]<>=+\-.])+[\s,;:{}()\[\]]*")


class Kinds:
    """The evidence of one project's tree, read lazily folder by folder (every folder read is
    opened without following a symlink), and the kind it gives each file."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._names: dict[str, frozenset[str]] = {}
        self._copy: dict[tuple[str, bool], bool] = {}
        rules = self._read(KINDS_FILE)
        modules = self._read(GITMODULES)
        self.rules = _parse_rules(rules)
        self.submodules = frozenset(
            m.group(1).strip().strip("/") for m in
            re.finditer(r"^\s*path\s*=\s*(.+?)\s*$", modules.decode("utf-8", "replace"), re.M))
        self.root_licences = frozenset(
            _licence_key(self._read(name)) for name in self.names("") if LICENCE.fullmatch(name))
        self.digest = hashlib.blake2b(b"\0".join([RULES_VERSION.encode(), rules, modules]),
                                      digest_size=12).hexdigest()

    def _read(self, rel: str, limit: int = 1 << 20) -> bytes:
        try:
            return safe_read.read(self.root, rel, limit)[0]
        except safe_read.Refused:
            return b""

    def names(self, folder: str) -> frozenset[str]:
        """The entries of ``folder`` ("" for the root); none when it cannot be opened."""
        found = self._names.get(folder)
        if found is None:
            found = self._names[folder] = safe_read.names(self.root, folder)
        return found

    def of(self, rel: str, size: int, language: str | None, head: bytes) -> str | None:
        """The stored kind of a file: the user's, else one evidence shows, else None (its path
        decides at search time). ``head``: its first bytes (the walk's 8 KiB sniff)."""
        for kind, spec in reversed(self.rules):
            if spec.match_file(rel):
                return kind
        if self.vendored(rel, licences=False):
            return "vendored"
        if _FIXTURE.search(rel):  # a sample source with its licence is still a test's input
            return "fixture"
        if self.vendored(rel):
            return "vendored"
        if says_generated(head) or _table(size, language, head):
            return "generated"
        if (_GRAMMAR.search(rel) or _PATCH.search(rel) or _LOCALE.search(rel) or _TABLE.search(rel)
                or (language in DATA_LANGUAGES and size > LARGE_DATA_BYTES)):
            return "data"
        return None

    def vendored(self, rel: str, *, licences: bool = True) -> bool:
        """Whether a folder above ``rel`` is a copy of another project (with ``licences``,
        also one known by its licence alone)."""
        parts = rel.split("/")[:-1]
        return any(self._copied("/".join(parts[:i + 1]), licences) for i in range(len(parts)))

    def _copied(self, folder: str, licences: bool) -> bool:
        found = self._copy.get((folder, licences))
        if found is None:
            found = self._copy[(folder, licences)] = self._is_copy(folder, licences)
        return found

    def _is_copy(self, folder: str, by_licence: bool) -> bool:
        parent, _, name = folder.rpartition("/")
        if name.lower() in _COPY_FOLDERS or folder in self.submodules:
            return True
        inside = self.names(folder)
        if ".git" in inside:
            return True
        if name == "vendor" and (inside & _VENDOR_INSIDE or self.names(parent) & _VENDOR_BESIDE):
            return True
        if not by_licence:
            return False
        texts = [self._read(f"{folder}/{n}") for n in inside if LICENCE.fullmatch(n)]
        texts = [text for text in texts if _LICENCE_WORDS.search(text)]
        return bool(self.root_licences and texts and not any(
            _licence_key(text) in self.root_licences for text in texts))


def _licence_key(text: bytes) -> bytes:
    """A licence's text without years and spacing: a member's copy of the root's is the same."""
    return re.sub(rb"[\d\s]+", b"", text.lower())


def _table(size: int, language: str | None, head: bytes) -> bool:
    """Whether a large source file starts with literals alone: a generated table."""
    if size < TABLE_BYTES or language is None or language in DATA_LANGUAGES:
        return False
    lines = [line for line in head.split(b"\n")[1:-1] if line.strip()]  # cut lines aside
    literal = sum(1 for line in lines if _LITERALS.fullmatch(line))
    return len(lines) >= 20 and literal >= 0.9 * len(lines)


def _parse_rules(data: bytes) -> list[tuple[str, pathspec.GitIgnoreSpec]]:
    """The lines of ``.kenningkinds``: a kind, then a gitignore pattern; UsageError for a line
    that names no kind (a typo would otherwise pass unnoticed)."""
    from kenning.indexing.sources import compile_patterns

    rules = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        kind, _, pattern = text.partition(" ")
        if kind not in KINDS or not pattern.strip():
            raise UsageError(
                f"Line {number} of {KINDS_FILE} ({text!r}) is not a kind and a pattern.",
                hint=f"Write lines such as `data assets/syntaxes/`; the kinds are "
                     f"{', '.join(KINDS)}.")
        rules.append((kind, compile_patterns([pattern.strip()])))
    return rules

