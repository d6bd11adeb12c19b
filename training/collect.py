"""Download the pinned training sources and unpack their code, minus everything the evaluations use.

    python training/collect.py --work /tmp/kenning-train            # verify against manifest.json
    python training/collect.py --work /tmp/kenning-train --pin      # (re)write manifest.json
    python training/collect.py --work /tmp/kenning-train --registry pypi   # one registry's part

Sources (``sources.json``): sdists from PyPI (the file its simple index lists), crates from
the crate registry, Debian ``-dev`` and ``node-*`` binary packages (Go modules, C/C++ headers,
JavaScript/TypeScript) and Debian source packages (Java). Each archive's sha256 and licence are
recorded in ``manifest.json``; only permissive licences are kept (MPL-2.0 is left out: its
copyleft is per file, and a training set mixing it would need file-level tracking for no gain).

Exclusions, by name and by content: every package named by the evaluations (``exclusions.json``)
is skipped before download, and every unpacked file whose git blob hash matches a file of an
evaluation repository or corpus (``--exclude-tree``, ``--exclude-git``) is dropped, so a vendored
copy cannot slip in. The counts go to ``<work>/collect-report.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from pathlib import Path
from urllib.parse import unquote

HERE = Path(__file__).parent
REGISTRIES = ("pypi", "crates", "debian", "debian_source")
CODE_SUFFIXES = {".py", ".rs", ".go", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".java",
                 ".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx"}
MAX_FILE_BYTES = 400_000  # generated tables and bundles, not code anyone writes
PERMISSIVE = re.compile(r"\b(mit|expat|bsd|0bsd|apache|isc|zlib|unlicense|psf|python software"
                        r"|public[ -]domain|boost|bsl-1\.0|hpnd|cc0|libpng|x11|ijg|sqlite)\b", re.I)
COPYLEFT = re.compile(r"\b(a?gpl|lgpl|mpl|mozilla|epl|eclipse|cddl|eupl|osl|cc-by-sa)", re.I)
APT_SOURCES = ("deb-src http://deb.debian.org/debian bookworm main\n"
               "deb-src http://deb.debian.org/debian-security bookworm-security main\n")


def licence_ok(text: str) -> bool:
    """Permissive unless every alternative of an ``A or B`` expression names a copyleft licence."""
    for alternative in re.split(r"\s+or\s+|\s*\|\|\s*|\s*/\s*", text, flags=re.I):
        if PERMISSIVE.search(alternative) and not COPYLEFT.search(alternative):
            return True
    return False


def git_blob_hash(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                   env={**os.environ, **(env or {})})


def download(registry: str, name: str, version: str, dest: Path, apt_opts: list[str]) -> Path:
    """The archive of one source; already-present files are reused."""
    dest.mkdir(parents=True, exist_ok=True)
    if registry == "pypi":
        # the sdist listed by PyPI's simple index (`pip download --no-binary` would also build
        # its metadata, which needs each package's build tools)
        with urllib.request.urlopen(f"https://pypi.org/simple/{_norm(name)}/",
                                    timeout=60) as resp:
            index = resp.read().decode()
        pattern = rf'href="([^"]+/({re.escape(name)}|{re.escape(name.replace("-", "_"))})-'
        pattern += rf'{re.escape(version)}\.(?:tar\.gz|zip))#sha256=[0-9a-f]+"'
        found = re.search(pattern, index, re.I)
        if not found:
            raise LookupError(f"no sdist of {name}=={version} on PyPI")
        path = dest / found.group(1).rsplit("/", 1)[1]
        if not path.exists():
            with urllib.request.urlopen(found.group(1), timeout=300) as resp:
                path.write_bytes(resp.read())
        return path
    if registry == "crates":
        path = dest / f"{name}-{version}.crate"
        if not path.exists():
            url = f"https://static.crates.io/crates/{name}/{name}-{version}.crate"
            with urllib.request.urlopen(url, timeout=60) as resp:
                path.write_bytes(resp.read())
        return path
    if registry == "debian":
        found = sorted(dest.glob(f"{name}_*.deb"))
        if not found:
            _run(["apt-get", "download", f"{name}={version}" if version else name], dest)
            found = sorted(dest.glob(f"{name}_*.deb"))
        return found[0]
    if registry == "debian_source":
        found = sorted(dest.glob(f"{name}_*.orig.tar.*"))
        if not found:
            _run(["apt-get", *apt_opts, "source", "--download-only",
                  f"{name}={version}" if version else name], dest)
            found = sorted(dest.glob(f"{name}_*.orig.tar.*"))
        return found[0]
    raise ValueError(registry)


def _norm(s: str) -> str:
    return re.sub(r"[-_.]+", "-", s).lower()


def members(archive: Path) -> list[tuple[str, bytes]]:
    """(path, bytes) of every regular file in an sdist, crate, .deb or source tarball."""
    name = archive.name
    if name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            return [(i.filename, zf.read(i)) for i in zf.infolist() if not i.is_dir()]
    if name.endswith(".deb"):
        listing = subprocess.run(["ar", "t", str(archive)], check=True, capture_output=True,
                                 text=True).stdout.split()
        data_member = next(m for m in listing if m.startswith("data.tar"))
        blob = subprocess.run(["ar", "p", str(archive), data_member], check=True,
                              capture_output=True).stdout
        return _tar_members(tarfile.open(fileobj=io.BytesIO(blob)))
    return _tar_members(tarfile.open(archive))


def _tar_members(tf: tarfile.TarFile) -> list[tuple[str, bytes]]:
    out = []
    with tf:
        for info in tf:
            if info.isfile() and info.size <= MAX_FILE_BYTES * 4:
                fh = tf.extractfile(info)
                if fh is not None:
                    out.append((info.name.lstrip("./"), fh.read()))
    return out


def licence_of(registry: str, name: str, files: list[tuple[str, bytes]]) -> str:
    """The licence the package declares: PKG-INFO, Cargo.toml, or Debian's copyright file (for a
    source package, ``files`` holds its ``debian/`` folder)."""
    by_name = {p: d for p, d in files}
    if registry == "pypi":
        info = next((d for p, d in files if p.count("/") == 1 and p.endswith("/PKG-INFO")), b"")
        text = info.decode("utf-8", "replace")
        expr = re.search(r"^License-Expression: (.+)$", text, re.M)
        if expr:
            return expr.group(1).strip()
        classifiers = re.findall(r"^Classifier: License :: (?:OSI Approved :: )?(.+)$", text, re.M)
        if classifiers:
            return " or ".join(c.strip() for c in classifiers)
        field = re.search(r"^License: (.+)$", text, re.M)
        return field.group(1).strip()[:80] if field else "unknown"
    if registry == "crates":
        toml = next((d for p, d in files if p.count("/") == 1 and p.endswith("/Cargo.toml")), b"")
        found = re.search(rb'^license\s*=\s*"([^"]+)"', toml, re.M)
        return found.group(1).decode() if found else "unknown"
    text = by_name.get(f"usr/share/doc/{name}/copyright",
                       by_name.get("debian/copyright", b"")).decode("utf-8", "replace")
    # the licence of the ``Files: *`` stanza (machine-readable copyright), else the first one
    stanza = re.search(r"^Files:[ \t]*\*[ \t]*$.*?^License:[ \t]*([^\n]+)$", text, re.M | re.S)
    first = re.search(r"^License:[ \t]*([^\n]+)$", text, re.M)
    return (stanza or first).group(1).strip() if (stanza or first) else "unknown"


def excluded_hashes(trees: list[Path], git_dirs: list[Path]) -> set[str]:
    """Git blob hashes of every file of the evaluation checkouts and repositories."""
    hashes: set[str] = set()
    for tree in trees:
        for root, _dirs, names in os.walk(tree):
            for n in names:
                path = Path(root) / n
                if path.is_file() and not path.is_symlink():
                    hashes.add(git_blob_hash(path.read_bytes()))
    for git_dir in git_dirs:
        listing = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "HEAD"],
                                 capture_output=True, text=True).stdout
        hashes.update(line.split()[2] for line in listing.splitlines() if line.split()[1] == "blob")
    return hashes


def excluded_name(name: str, banned: list[str]) -> str | None:
    """The evaluation name a package carries, as a whole dash-separated part of its name."""
    parts = _norm(name).replace("golang-github-", "").split("-")
    joined = "-".join(parts)
    for ban in banned:
        b = _norm(ban)
        if joined == b or re.search(rf"(^|-){re.escape(b)}(-|$)", joined):
            return ban
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--pin", action="store_true", help="write manifest.json instead of checking")
    ap.add_argument("--exclude-tree", type=Path, action="append", default=[])
    ap.add_argument("--exclude-git", type=Path, action="append", default=[])
    ap.add_argument("--registry", action="append", choices=REGISTRIES,
                    help="collect only these registries' sources (a smaller set for a CPU run)")
    args = ap.parse_args()
    if args.pin and args.registry:
        ap.error("--pin writes the whole manifest: leave out --registry")
    sources = {registry: specs for registry, specs in
               json.loads((HERE / "sources.json").read_text()).items()
               if not args.registry or registry in args.registry}
    banned = json.loads((HERE / "exclusions.json").read_text())["names"]
    manifest_path = HERE / "manifest.json"
    pinned = {} if args.pin else {
        (e["registry"], e["name"]): e for e in json.loads(manifest_path.read_text())["packages"]}
    apt_dir = args.work / "apt"
    (apt_dir / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (apt_dir / "sources.list").write_text(APT_SOURCES)
    apt_opts = [f"-oDir::Etc::SourceList={apt_dir / 'sources.list'}", "-oDir::Etc::SourceParts=-",
                f"-oDir::State::Lists={apt_dir / 'lists'}"]
    if sources.get("debian_source"):
        _run(["apt-get", *apt_opts, "update"], args.work)
    blocked = excluded_hashes(args.exclude_tree, args.exclude_git)
    print(f"[collect] {len(blocked)} evaluation file hashes", file=sys.stderr)
    report: dict[str, object] = {"excluded_by_name": [], "excluded_by_licence": [],
                                 "failed": [], "files_excluded_by_hash": 0, "files_kept": 0}
    entries = []
    seen_hashes: set[str] = set()
    for registry, specs in sources.items():
        for spec in specs:
            name, _, version = spec.partition("==")
            if pinned:
                if (registry, name) not in pinned:
                    continue
                version = pinned[(registry, name)]["version"]
            ban = excluded_name(name, banned)
            if ban:
                report["excluded_by_name"].append(f"{registry}:{name} ({ban})")  # type: ignore
                continue
            try:
                archive = download(registry, name, version, args.work / "archives" / registry,
                                   apt_opts)
            except Exception as exc:  # noqa: BLE001 - a missing version is reported, not fatal
                report["failed"].append(f"{registry}:{spec}: {exc}")  # type: ignore
                print(f"[collect] {registry}:{name} {version}: not downloaded ({exc})",
                      file=sys.stderr)
                continue
            digest = sha256_file(archive)
            files = members(archive)
            packaging = files
            if registry == "debian_source":
                packaging = [(p, d) for debian in archive.parent.glob(
                    f"{archive.name.split('_')[0]}_*.debian.tar.*") for p, d in members(debian)]
            licence = licence_of(registry, name, packaging)
            if registry == "debian":  # the Debian version, epoch included (":" is quoted)
                version = unquote(archive.name.split("_")[1])
            elif registry == "debian_source":
                dsc = next(archive.parent.glob(f"{archive.name.split('_')[0]}_*.dsc"))
                version = unquote(dsc.name.split("_")[1].removesuffix(".dsc"))
            if pinned and pinned[(registry, name)]["sha256"] != digest:
                sys.exit(f"{archive.name}: sha256 {digest} is not the pinned "
                         f"{pinned[(registry, name)]['sha256']}")
            if not licence_ok(licence):
                report["excluded_by_licence"].append(  # type: ignore[attr-defined]
                    f"{registry}:{name} ({licence})")
                continue
            out_dir = args.work / "src" / f"{registry}-{_norm(name)}-{version.replace(':', '_')}"
            kept = 0
            for path, data in files:
                if Path(path).suffix.lower() not in CODE_SUFFIXES or len(data) > MAX_FILE_BYTES:
                    continue
                if registry == "debian" and not path.startswith(("usr/include", "usr/share/gocode",
                                                                 "usr/share/nodejs",
                                                                 "usr/lib/nodejs", "usr/src")):
                    continue
                blob = git_blob_hash(data)
                if blob in blocked:
                    report["files_excluded_by_hash"] += 1  # type: ignore[operator]
                    continue
                if blob in seen_hashes:  # one copy of a file shared by two packages
                    continue
                seen_hashes.add(blob)
                target = out_dir / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                kept += 1
            report["files_kept"] += kept  # type: ignore[operator]
            entries.append({"registry": registry, "name": name, "version": version,
                            "archive": archive.name, "sha256": digest, "licence": licence,
                            "files": kept})
            print(f"[collect] {registry}:{name} {version} {licence!r}: {kept} files",
                  file=sys.stderr)
    if args.pin:
        manifest_path.write_text(json.dumps({"packages": entries}, indent=1) + "\n")
    (args.work / "collect-report.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: (len(v) if isinstance(v, list) else v) for k, v in report.items()}))


if __name__ == "__main__":
    main()
