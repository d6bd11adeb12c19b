"""What a shell command line does, by the programs it runs: a kenning search, a grep, a glob
(listing or finding files), a read, an edit, or anything else (a run)."""

from __future__ import annotations

import os
import re
import shlex

SEARCHES = {"grep", "egrep", "fgrep", "rg", "ag", "ack"}
GLOBS = {"find", "fd", "fdfind", "locate", "ls", "tree"}
READS = {"cat", "head", "tail", "less", "more", "nl", "bat", "wc"}
EDITS = {"apply_patch", "patch"}
KENNING_LOOKUPS = {"search", "related", "impact"}
_PREFIX_WORDS = {"sudo", "command", "exec", "time", "nice", "nohup", "xargs", "env"}
_SPLIT = re.compile(r"\|\|?|&&|;|\n|\$\(|`|\(|\)")


def segments(line: str) -> list[list[str]]:
    """The simple commands of a shell line, each as its words (a best effort: shells nest)."""
    found = []
    for part in _SPLIT.split(line):
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        while words and ("=" in words[0] and not words[0].startswith("=")
                         or words[0] in _PREFIX_WORDS or words[0].startswith("-")):
            words = words[1:]
        if words:
            found.append(words)
    return found


def _kenning_verb(words: list[str]) -> str | None:
    name = os.path.basename(words[0])
    if name == "kenning":
        rest = words[1:]
    elif name.startswith("python") and words[1:3] == ["-m", "kenning"]:
        rest = words[3:]
    else:
        return None
    return rest[0] if rest else ""


def is_kenning_lookup(words: list[str]) -> bool:
    """``kenning search ...`` (any install's path, or ``python -m kenning``)."""
    return _kenning_verb(words) in KENNING_LOOKUPS


def kind_of(words: list[str]) -> str:
    """One simple command's kind: kenning, grep, glob, read, edit or run."""
    if is_kenning_lookup(words):
        return "kenning"
    name = os.path.basename(words[0])
    if name in SEARCHES or name == "git" and words[1:2] == ["grep"]:
        return "grep"
    if name in GLOBS:
        return "glob"
    if name in READS or name == "sed" and "-n" in words[1:]:
        return "read"
    if name in EDITS:
        return "edit"
    return "run"


_RANK = ("kenning", "edit", "grep", "glob", "read")


def line_kind(line: str) -> str:
    """A whole line's kind: its most telling command (``cd x && rg y`` is a grep)."""
    kinds = {kind_of(words) for words in segments(line)}
    return next((kind for kind in _RANK if kind in kinds), "run")


def read_paths(line: str) -> list[str]:
    """The files a line's reads name (``cat a.py``, ``sed -n 1,20p b.py``)."""
    paths = []
    for words in segments(line):
        if kind_of(words) == "read":
            paths += [w for w in words[1:] if not w.startswith("-") and "." in w]
    return paths
