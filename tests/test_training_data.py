"""The training pipeline's data steps: licences, exclusions, and the pairs mined with the real
chunker (no torch needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))

import collect  # noqa: E402
import mine_pairs  # noqa: E402

BANNED = ["requests", "urfave-cli", "express", "ignore", "cobra"]


@pytest.mark.parametrize(("licence", "kept"), [
    ("MIT OR Apache-2.0", True), ("BSD-3-clause", True), ("Expat", True),
    ("Apache Software License", True), ("Unlicense OR MIT", True), ("GPL-2+", False),
    ("MPL-2.0", False), ("GNU Library or Lesser General Public License (LGPL)", False),
    ("unknown", False), ("Apache-2.0 or LGPL-2.1", True),
])
def test_only_permissive_licences_are_kept(licence: str, kept: bool) -> None:
    assert collect.licence_ok(licence) is kept


@pytest.mark.parametrize(("name", "ban"), [
    ("golang-github-urfave-cli-dev", "urfave-cli"), ("node-express", "express"),
    ("requests", "requests"), ("ignore", "ignore"), ("golang-github-spf13-cobra-dev", "cobra"),
    ("requests-toolbelt", "requests"), ("regex", None), ("expressive", None), ("node-glob", None),
])
def test_evaluation_names_are_excluded_as_whole_parts(name: str, ban: str | None) -> None:
    assert collect.excluded_name(name, BANNED) == ban


def test_blob_hash_is_gits(tmp_path: Path) -> None:
    data = b"fn main() {}\n"
    (tmp_path / "f.rs").write_bytes(data)
    git = subprocess.run(["git", "hash-object", str(tmp_path / "f.rs")], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert collect.git_blob_hash(data) == git


def test_a_manifest_is_never_pinned_from_one_registry(tmp_path: Path) -> None:
    # a copy with no sources, so that a regression writes an empty manifest there, not here
    training = Path(collect.__file__).parent
    copy = tmp_path / "training"
    copy.mkdir()
    for name in ("collect.py", "exclusions.json"):
        (copy / name).write_bytes((training / name).read_bytes())
    (copy / "sources.json").write_text('{"pypi": []}')
    work = tmp_path / "work"
    done = subprocess.run([sys.executable, str(copy / "collect.py"), "--work", str(work),
                           "--pin", "--registry", "pypi"], capture_output=True, text=True)
    assert done.returncode == 2 and "--pin writes the whole manifest" in done.stderr
    assert not work.exists() and not (copy / "manifest.json").exists()


def test_identifiers_split_into_words() -> None:
    assert mine_pairs.split_identifier("HttpClient.parse_header_value") == "parse header value"
    assert mine_pairs.split_identifier("readHTTPResponse") == "read http response"
    assert mine_pairs.split_identifier("Store::open") == "open"


def test_first_sentences_drop_markers_links_and_tags() -> None:
    lines = ["/// Search for the first occurrence of a byte in [`haystack`][slice].",
             "/// It is fast.", "///", "/// # Example"]
    assert mine_pairs.first_sentences(lines) == (
        "Search for the first occurrence of a byte in haystack.")
    assert mine_pairs.first_sentences(['"""Ok."""']) is None  # too short to describe anything
    assert mine_pairs.first_sentences(['r"""Return the directed Laplacian matrix of G.']) == (
        "Return the directed Laplacian matrix of G.")
    assert mine_pairs.first_sentences(["// @param x the value"]) is None


def _mine(tmp_path: Path, rel: str, text: str) -> list[dict[str, object]]:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return mine_pairs.mine_file(("pkg", str(path), rel))


def test_python_docstring_becomes_the_query_and_leaves_the_document(tmp_path: Path) -> None:
    rows = _mine(tmp_path, "pkg/headers.py", (
        "def parse_header_value(raw):\n"
        '    """Split a raw HTTP header line into its name and value.\n\n'
        "    Args:\n        raw: the line\n"
        '    """\n'
        "    name, _, value = raw.partition(':')\n"
        "    return name.strip(), value.strip()\n\n\n"
        "def other(x):\n    return x * 2\n"))
    doc = [r for r in rows if r["kind"] == "doc"]
    assert [r["query"] for r in doc] == ["Split a raw HTTP header line into its name and value."]
    document = str(doc[0]["document"])
    assert document.startswith("Filepath: pkg/headers.py\n---\ndef parse_header_value(raw):")
    assert "Split a raw" not in document and "partition" in document
    assert "def other" in str(doc[0]["negative"])
    names = {r["query"] for r in rows if r["kind"] == "name"}
    assert names == {"parse header value"}


def test_rust_doc_comment_becomes_the_query_and_attributes_stay(tmp_path: Path) -> None:
    rows = _mine(tmp_path, "src/lib.rs", (
        "/// Returns the index of the first zero byte in the buffer.\n"
        "///\n/// # Example\n/// ```\n/// assert_eq!(first_zero(b\"a\\0\"), Some(1));\n/// ```\n"
        "#[inline]\n"
        "pub fn first_zero(buf: &[u8]) -> Option<usize> {\n"
        "    buf.iter().position(|&b| b == 0)\n}\n\n"
        "pub fn last_zero(buf: &[u8]) -> Option<usize> {\n"
        "    buf.iter().rposition(|&b| b == 0)\n}\n"))
    doc = [r for r in rows if r["kind"] == "doc"]
    assert [r["query"] for r in doc] == ["Returns the index of the first zero byte in the buffer."]
    document = str(doc[0]["document"])
    assert "///" not in document and "#[inline]" in document and "position" in document
    assert "last_zero" in str(doc[0]["negative"])
