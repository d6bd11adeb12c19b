"""The file walk on real trees in temporary directories, in both walk backends: the Rust core's
and its Python reference twin must give identical results."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from index_helpers import WALK_BACKENDS, needs_rust_walk
from kenning.indexing import sources
from kenning.indexing.sources import Changes, WalkStats, changes, detect_language, walk
from kenning.records import SourceFile

MiB = 1 << 20
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, params=WALK_BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test of this module runs once per walk backend."""
    monkeypatch.setattr(sources, "BACKEND", request.param)
    return str(request.param)


def make(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def paths(root: Path, **kwargs: object) -> list[str]:
    return [f.path for f in walk(root, max_file_size=MiB, **kwargs)]  # type: ignore[arg-type]


def test_records_carry_size_mtime_language_and_come_sorted(tmp_path: Path) -> None:
    make(tmp_path, {"b.py": "x = 1\n", "a/z.go": "package a\n", "a.txt": "hi\n", "a/b/c.rs": ""})
    files = list(walk(tmp_path, max_file_size=MiB))
    assert [f.path for f in files] == ["a.txt", "a/b/c.rs", "a/z.go", "b.py"]
    by_path = {f.path: f for f in files}
    assert by_path["b.py"].size == 6
    assert by_path["b.py"].abs_path == tmp_path / "b.py"
    assert by_path["b.py"].mtime_ns == os.stat(tmp_path / "b.py").st_mtime_ns
    assert by_path["a/z.go"].language == "go"
    assert by_path["a.txt"].language == "text"


def test_nested_gitignore_with_negation_and_info_exclude(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            ".gitignore": "*.log\n/generated/\n",
            ".git/info/exclude": "secret.py\n",
            ".git/HEAD": "ref: refs/heads/main\n",
            "app.py": "",
            "debug.log": "",
            "secret.py": "",
            "generated/out.py": "",
            "pkg/.gitignore": "!keep.log\ntmp_*\n",
            "pkg/keep.log": "",
            "pkg/other.log": "",
            "pkg/tmp_x.py": "",
            "pkg/mod.py": "",
            "pkg/generated/inner.py": "",  # /generated/ is anchored at the root only
            "other/tmp_y.py": "",  # pkg's rules do not reach a sibling folder
        },
    )
    assert paths(tmp_path) == [
        ".gitignore",
        "app.py",
        "other/tmp_y.py",
        "pkg/.gitignore",
        "pkg/generated/inner.py",
        "pkg/keep.log",
        "pkg/mod.py",
    ]


def test_default_excludes_and_kenningignore_reinclude(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            "src/main.js": "main()\n",
            "node_modules/lib/index.js": "x\n",
            "dist/bundle.js": "x\n",
            "build/out.js": "x\n",
            "target/debug/a.rs": "x\n",
            "src/__pycache__/m.py": "x\n",
            "env1/pyvenv.cfg": "home = /usr\n",
            "env1/lib/site.py": "x\n",
            "package-lock.json": "{}\n",
            "Cargo.lock": "x\n",
            "uv.lock": "x\n",
            "yarn.lock": "x\n",
            "static/app.min.js": "x\n",
            "static/app.js.map": "{}\n",
            "vendor/keep.py": "x\n",
            "vendor/drop.py": "x\n",
        },
    )
    stats = WalkStats()
    assert paths(tmp_path, stats=stats) == ["src/main.js", "vendor/drop.py", "vendor/keep.py"]
    assert stats.skipped["default"] == 6
    assert stats.skipped_dirs["default"] == 6  # node_modules, dist, build, target, cache, venv

    (tmp_path / ".kenningignore").write_text("vendor/drop.py\n!dist/\n!Cargo.lock\n")
    assert paths(tmp_path) == [
        ".kenningignore",
        "Cargo.lock",
        "dist/bundle.js",
        "src/main.js",
        "vendor/keep.py",
    ]


def test_kenningignore_beats_gitignore(tmp_path: Path) -> None:
    make(
        tmp_path,
        {".gitignore": "docs/\n", ".kenningignore": "!docs/\n", "docs/guide.md": "# Guide\n"},
    )
    assert "docs/guide.md" in paths(tmp_path)


def test_minified_and_one_line_data_files_are_skipped(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            "vocab.json": '{"vocab": {' + ", ".join(f'"w{i}": {i}' for i in range(2000)) + "}}",
            "short.json": '{"a": 1}',  # one line, but short: kept
            "app.py": "x = 1\n" * 2000,
        },
    )
    stats = WalkStats()
    assert [f.path for f in walk(tmp_path, max_file_size=MiB, stats=stats)] == [
        "app.py",
        "short.json",
    ]
    assert stats.skipped == {"minified": 1}


def test_long_line_markup_and_data_are_minified(tmp_path: Path) -> None:
    path_d = "M12 2C6.48 2 2 6.48 2 12s4.48 10 10 10 10-4.48 10-10S17.52 2 12 2z" * 12
    make(
        tmp_path,
        {
            "icons/star.svg": f'<svg xmlns="http://www.w3.org/2000/svg"><path d="{path_d}"/></svg>',
            "styles/theme.css": ".a{color:red}" * 60 + "\n" + ".b{margin:0}" * 60,
            "data/points.json": "[" + ",".join(f"[{i},{i * 2}]" for i in range(200)) + "]\n",
            "icons/plain.svg": '<svg>\n  <circle r="4"/>\n</svg>\n' * 30,  # written by hand
            "src/app.js": "const answer = compute(42);\n" * 40,
        },
    )
    stats = WalkStats(paths={})
    kept = [f.path for f in walk(tmp_path, max_file_size=MiB, stats=stats, backend="python")]
    assert kept == ["icons/plain.svg", "src/app.js"]
    assert stats.paths == {"minified": ["data/points.json", "icons/star.svg", "styles/theme.css"]}


def test_size_limit_and_binary_files(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            "small.py": "x = 1\n",
            "big.py": "y = 2\n" * 100,
            "blob.dat": b"head\x00tail",
            "late_nul.txt": b"aaaa\n" * 1800 + b"\x00",  # NUL after the first 8 KiB: text
            "utf8.txt": "héllo wörld\n",
        },
    )
    stats = WalkStats()
    found = [f.path for f in walk(tmp_path, max_file_size=300, stats=stats)]
    assert found == ["small.py", "utf8.txt"]
    assert stats.skipped == {"too_large": 2, "binary": 1}
    assert [f.path for f in walk(tmp_path, max_file_size=MiB)] == [
        "big.py",
        "late_nul.txt",
        "small.py",
        "utf8.txt",
    ]


def test_symlinks_are_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    outside = tmp_path / "outside"
    make(root, {"src/a.py": "a\n"})
    make(outside, {"secret.py": "s\n"})
    (root / "src" / "loop").symlink_to(root / "src", target_is_directory=True)
    (root / "up").symlink_to(root, target_is_directory=True)
    (root / "escape").symlink_to(outside, target_is_directory=True)
    (root / "escape.py").symlink_to(outside / "secret.py")
    (root / "alias.py").symlink_to(root / "src" / "a.py")
    (root / "dangling.py").symlink_to(root / "missing.py")
    stats = WalkStats()
    found = paths(root, stats=stats)
    assert found == ["src/a.py"]  # alias.py is src/a.py under another name
    assert stats.skipped["symlink"] == 3  # escape.py, alias.py, dangling.py
    assert stats.skipped_dirs["symlink"] == 3  # escape, and the two loops


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_files_and_folders_are_skipped(tmp_path: Path) -> None:
    make(tmp_path, {"ok.py": "x\n", "locked.py": "y\n", "closed/inner.py": "z\n"})
    (tmp_path / "locked.py").chmod(0)
    (tmp_path / "closed").chmod(0)
    try:
        stats = WalkStats()
        assert paths(tmp_path, stats=stats) == ["ok.py"]
        assert stats.skipped["unreadable"] == 1
        assert stats.skipped_dirs["unreadable"] == 1
    finally:
        (tmp_path / "closed").chmod(0o755)


def test_unreadable_ignore_file_does_not_stop_the_walk(tmp_path: Path) -> None:
    make(tmp_path, {"a.py": "x\n"})
    (tmp_path / ".gitignore").mkdir()  # a folder where a file is expected: unreadable as rules
    assert paths(tmp_path) == ["a.py"]


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a/b.py", "python"),
        ("x.tsx", "tsx"),
        ("x.TS", "typescript"),
        ("lib.rs", "rust"),
        ("Main.kt", "kotlin"),
        ("p.cs", "csharp"),
        ("h.hpp", "cpp"),
        ("h.h", "c"),
        ("run.sh", "bash"),
        ("README.md", "markdown"),
        ("docs/x.rst", "rst"),
        ("Dockerfile", "dockerfile"),
        ("Makefile", "make"),
        (".bashrc", None),
        ("data.unknownext", None),
    ],
)
def test_detect_language(path: str, language: str | None) -> None:
    assert detect_language(path) == language


def stat_blob(files: Iterable[SourceFile]) -> bytes:
    """The stat data of indexed files as the store keeps it (``kenning.store.db``)."""
    return b"\0".join(f"{f.path}\0{f.size}\0{f.mtime_ns}".encode() for f in files)


def test_changes_of_an_unchanged_tree_are_empty_and_read_no_file(tmp_path: Path) -> None:
    make(tmp_path, {"a.py": "x\n", "blob.dat": b"\x00" * 10, "big.py": "y\n" * 200})
    st = os.stat(tmp_path / "blob.dat")
    # A file indexed with this size and mtime is trusted as text without a read.
    known = stat_blob([SourceFile("blob.dat", tmp_path, st.st_size, st.st_mtime_ns, None)])
    stats = WalkStats()
    found = changes(tmp_path, max_file_size=300, known=known, stats=stats)
    assert [f.path for f in found.files] == ["a.py"] and found.removed == []
    assert found.unchanged == 1 and stats.skipped == {"too_large": 1}
    os.utime(tmp_path / "blob.dat", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    found = changes(tmp_path, max_file_size=300, known=known)
    assert [f.path for f in found.files] == ["a.py"]
    assert found.removed == ["blob.dat"] and found.unchanged == 0  # binary now: dropped


def test_changes_detect_edits_deletions_new_ignore_rules_and_the_size_limit(
    tmp_path: Path,
) -> None:
    make(tmp_path, {"a.py": "a = 1\n", "b.py": "b = 1\n", "c.py": "c = 1\n", "d.py": "d\n"})
    first = list(walk(tmp_path, max_file_size=MiB))
    known = stat_blob(first)
    assert changes(tmp_path, max_file_size=MiB, known=known) == Changes([], [], 4)
    (tmp_path / "a.py").write_text("a = 100\n")  # a new size
    (tmp_path / "b.py").unlink()
    (tmp_path / ".gitignore").write_text("c.py\n")  # excludes a file indexed before
    (tmp_path / "d.py").write_text("d\n" * 100)
    found = changes(tmp_path, max_file_size=100, known=known)
    assert [f.path for f in found.files] == [".gitignore", "a.py"]
    assert found.removed == ["b.py", "c.py", "d.py"] and found.unchanged == 0
    assert [f.path for f in changes(tmp_path, max_file_size=MiB, known=known, every=True).files] \
        == [".gitignore", "a.py", "d.py"]


def test_changes_miss_an_edit_that_keeps_size_and_mtime(tmp_path: Path) -> None:
    """The stat pass trusts (size, mtime_ns): an edit that restores both goes unseen until a
    full refresh (``every``), as in git's own racy-clean handling of a checkout."""
    make(tmp_path, {"a.py": "x = 1\n"})
    st = os.stat(tmp_path / "a.py")
    known = stat_blob(walk(tmp_path, max_file_size=MiB))
    (tmp_path / "a.py").write_text("x = 2\n")
    os.utime(tmp_path / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert changes(tmp_path, max_file_size=MiB, known=known).files == []
    assert [f.path for f in changes(tmp_path, max_file_size=MiB, known=known, every=True).files] \
        == ["a.py"]


def test_reread_files_are_read_again_though_their_stat_is_known(tmp_path: Path) -> None:
    make(tmp_path, {"a.py": "x = 1\n", "b.py": "y = 1\n"})
    known = stat_blob(walk(tmp_path, max_file_size=MiB))
    found = changes(tmp_path, max_file_size=MiB, known=known,
                    reread={"a.py", "gone.py"})  # a path not indexed is the walk's to judge
    assert [f.path for f in found.files] == ["a.py"] and found.unchanged == 1


def test_changes_skip_names_that_are_not_utf8(tmp_path: Path) -> None:
    make(tmp_path, {"ok.py": "x\n"})
    (tmp_path / os.fsdecode(b"odd\xff.py")).write_text("x\n")
    stats = WalkStats()
    found = changes(tmp_path, max_file_size=MiB, known=b"", stats=stats)
    assert [f.path for f in found.files] == ["ok.py"] and stats.skipped == {"name": 1}


@pytest.mark.parametrize(
    "blob",
    [
        b"a.py\x003",
        b"a.py\x00x\x001",
        b"a.py\x001\x00",
        b"a.py\x00-1\x001",
        b"a.py\x00+1\x001",
        b"a.py\x001\x009223372036854775808",
    ],
)
def test_malformed_stat_data_is_a_value_error(tmp_path: Path, blob: bytes) -> None:
    with pytest.raises(ValueError, match="known stat data"):
        changes(tmp_path, max_file_size=MiB, known=blob)


def test_extensionless_scripts_take_their_language_from_the_shebang(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            "bin/deploy": "#!/usr/bin/env python3\nprint('hi')\n",
            "bin/setup": "#!/bin/sh -e\necho hi\n",
            "bin/notes": "just words\n",
        },
    )
    files = list(walk(tmp_path, max_file_size=MiB))
    assert {f.path: f.language for f in files} == {
        "bin/deploy": "python",
        "bin/notes": None,
        "bin/setup": "bash",
    }
    assert changes(tmp_path, max_file_size=MiB, known=b"").files == files


def both_walks(root: Path, **kwargs: Any
               ) -> tuple[list[tuple[str, Path, int, int, str | None]], list[WalkStats]]:
    """The records and stats of both backends, which must be equal."""
    found: list[list[tuple[str, Path, int, int, str | None]]] = []
    all_stats: list[WalkStats] = []
    for name in ("python", "rust"):
        stats = WalkStats()
        files = walk(root, max_file_size=MiB, stats=stats, backend=name, **kwargs)
        found.append([(f.path, f.abs_path, f.size, f.mtime_ns, f.language) for f in files])
        all_stats.append(stats)
    assert found[0] == found[1]
    assert all_stats[0] == all_stats[1]
    return found[0], all_stats


def rich_tree(root: Path) -> None:
    """Many rule kinds at several depths, so the two walks are compared where they could differ."""
    files: dict[str, str | bytes] = {
        ".gitignore": "*.log\n/generated/\nbuild-*/\n!important.log\n**/tmp/\n# note\n\\#hash.py\n",
        ".kenningignore": "!dist/\nvendor/big/\n!keep.lock\n*.secret\n",
        ".git/info/exclude": "local.py\n",
        ".git/HEAD": "ref: refs/heads/main\n",
        "#hash.py": "x\n",
        "important.log": "x\n",
        "dist/app.bundle.js": "x\n",
        "dist/plain.js": "x\n",
        "node_modules/m/index.js": "x\n",
        "pkg.egg-info/PKG-INFO": "x\n",
        "venvish/pyvenv.cfg": "home\n",
        "venvish/lib.py": "x\n",
        "condaenv/conda-meta/history": "x\n",
        "keep.lock": "x\n",
        "yarn.lock": "x\n",
        "a.secret": "x\n",
        "local.py": "x\n",
        "blob.bin": b"\x00\x01",
        "nul.txt": b"ab\x00cd",
        "bin/tool": "#!/usr/bin/env bash\necho\n",
        ".hidden/conf.toml": "a = 1\n",
        ".env.example": "A=1\n",
    }
    for i in range(40):
        d = f"src/mod{i % 7}/sub{i % 3}"
        files[f"{d}/file{i}.py"] = f"def f{i}():\n    return {i}\n"
        files[f"{d}/notes{i}.log"] = "log\n"
        files[f"{d}/tmp/scratch{i}.py"] = "x\n"
        files[f"build-{i % 4}/out{i}.txt"] = "x\n"
    files["src/mod1/.gitignore"] = "!*.log\nsub0/\n/file*.py\n"
    files["src/mod2/.kenningignore"] = "!tmp/\n!notes*.log\nfile1*.py\n"
    files["src/mod3/sub1/.gitignore"] = "*\n!*.py\n!*/\n"
    files["src/mod4/.gitignore"] = "sub*/file*\n!sub2/file*\n"
    files["generated/x.py"] = "x\n"
    files["src/generated/y.py"] = "x\n"
    files["vendor/big/huge.py"] = "x\n"
    files["vendor/small.py"] = "x\n"
    make(root, files)
    for raw in (b"odd\xff.py", b"odd\xc3\xa9.py", b"odd\xef\xbf\xbd.py"):  # not UTF-8 and near it
        (root / os.fsdecode(raw)).write_text("x\n")
    (root / "src" / "link_up").symlink_to(root / "src", target_is_directory=True)
    (root / "alias.py").symlink_to(root / "src" / "mod0" / "sub0" / "file0.py")
    (root / "dangling.py").symlink_to(root / "nowhere.py")


@needs_rust_walk
def test_both_backends_agree_on_a_tree_with_many_rule_kinds(tmp_path: Path) -> None:
    rich_tree(tmp_path)
    found, stats = both_walks(tmp_path)
    paths_found = [row[0] for row in found]
    assert "dist/plain.js" in paths_found  # re-included by .kenningignore over the defaults
    assert "keep.lock" in paths_found and "yarn.lock" not in paths_found
    assert "important.log" in paths_found and "#hash.py" not in paths_found
    pruned = ("venvish/", "condaenv/", "generated/", "vendor/big/")
    assert not any(p.startswith(pruned) for p in paths_found)
    assert "src/generated/y.py" in paths_found
    assert stats[0].skipped["binary"] == 1  # nul.txt; blob.bin goes by its name
    known = b"\0".join(f"{p}\0{size}\0{mtime}".encode() for p, _, size, mtime, _ in found
                       if os.fsencode(p).decode("utf-8", "ignore") == p)
    assert "odd\udcff.py" not in paths_found and stats[0].skipped["name"] == 1
    assert both_changes(tmp_path, known) == Changes([], [], len(found), ["odd\udcff.py"])
    (tmp_path / "src" / "mod0" / ".gitignore").write_text("sub1/\n")
    (tmp_path / "keep.lock").write_text("changed\n")
    (tmp_path / "important.log").unlink()
    (tmp_path / "new.py").write_text("x\n")
    found_after = both_changes(tmp_path, known)
    assert [f.path for f in found_after.files] == ["keep.lock", "new.py", "src/mod0/.gitignore"]
    assert "important.log" in found_after.removed
    assert all(p.startswith("src/mod0/sub1/") for p in found_after.removed[1:])


def both_changes(root: Path, known: bytes) -> Changes:
    """The comparison of both backends with ``known``, which must be equal."""
    found = [changes(root, max_file_size=MiB, known=known, backend=name)
             for name in ("python", "rust")]
    assert found[0] == found[1]
    return found[0]


@needs_rust_walk
def test_both_backends_agree_on_a_wide_and_deep_tree(tmp_path: Path) -> None:
    """Folders are read by several threads in the core: the order must not depend on them."""
    files: dict[str, str | bytes] = {}
    for i in range(300):
        folder = "/".join(f"d{(i >> shift) % 4}" for shift in (0, 2, 4, 6))
        files[f"{folder}/f{i}.py"] = f"x = {i}\n"
        files[f"{folder}/{i}.txt"] = "t\n"
    files["d0/.gitignore"] = "*.txt\n!d1/\n"
    files["d1/d2/.kenningignore"] = "f1*.py\n"
    make(tmp_path, files)
    found, _ = both_walks(tmp_path)
    paths_found = [row[0] for row in found]
    assert paths_found == sorted(paths_found) and len(paths_found) > 400
    for _ in range(3):
        assert both_walks(tmp_path)[0] == found


@needs_rust_walk
def test_both_backends_agree_on_this_repository() -> None:
    found, _ = both_walks(REPO)
    assert "python/kenning/indexing/sources.py" in [row[0] for row in found]


def test_a_repeated_walk_of_an_unchanged_tree_gives_the_same_answer(tmp_path: Path) -> None:
    make(
        tmp_path,
        {"a.py": "x\n", "big.py": "y\n" * 200, "blob.txt": b"\x00", "bin/run": "#!/bin/sh\n"},
    )
    first_stats = WalkStats()
    first = list(walk(tmp_path, max_file_size=300, stats=first_stats))
    assert list(walk(tmp_path, max_file_size=300)) == first
    again_stats = WalkStats()
    found = changes(tmp_path, max_file_size=300, known=stat_blob(first), stats=again_stats)
    assert found == Changes([], [], 2)
    assert again_stats == first_stats == WalkStats(Counter({"too_large": 1, "binary": 1}))
    found = changes(tmp_path, max_file_size=MiB, known=stat_blob(first))
    assert [f.path for f in found.files] == ["big.py"]  # within the new limit: indexed now
    (tmp_path / "a.py").write_bytes(b"\x00\x01 now binary")  # a new size: sniffed again
    found = changes(tmp_path, max_file_size=MiB, known=stat_blob(first))
    assert [f.path for f in found.files] == ["big.py"] and found.removed == ["a.py"]
