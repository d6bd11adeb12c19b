"""Chunks for text without a grammar: Markdown by heading, everything else in line windows."""

from __future__ import annotations

import re

from kenning.chunking.cutter import Cutter, Piece

_FENCE = re.compile(r"^ {0,3}(```+|~~~+)")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


def windows(cutter: Cutter, kind: str = "window") -> list[Piece]:
    """Paragraph-aligned line windows over the whole file."""
    return cutter.pack(cutter.line_segments(0, len(cutter.data)), Piece(0, 0, kind))


def _headings(cutter: Cutter) -> list[tuple[int, str, str]]:
    """(line index, title, heading line) of each ATX or setext heading outside code fences."""
    found: list[tuple[int, str, str]] = []
    fence: str | None = None
    lines = cutter.data.decode("utf-8", "replace").split("\n")
    for row, line in enumerate(lines):
        opened = _FENCE.match(line)
        if opened:
            marker = opened.group(1)
            if fence is None:
                fence = marker[0] * 3
            elif marker.startswith(fence):
                fence = None
            continue
        if fence is not None:
            continue
        atx = _ATX.match(line)
        if atx:
            found.append((row, (atx.group(2) or "").strip(), line.strip()))
        elif (
            row > 0
            and _SETEXT.match(line)
            and lines[row - 1].strip()
            and not (found and found[-1][0] == row - 1)
        ):
            found.append((row - 1, lines[row - 1].strip(), lines[row - 1].strip()))
    return found


def markdown(cutter: Cutter) -> list[Piece]:
    """One ``section`` per heading, up to the next heading; a heading with nothing under it
    before the next one travels with that next section."""
    starts = cutter.line_starts
    size = len(cutter.data)
    pieces: list[Piece] = []
    heads = _headings(cutter)
    bounds = [0, *(starts[row] for row, _, _ in heads), size]
    labels = [Piece(0, 0, "section"), *(Piece(0, 0, "section", t or None, h) for _, t, h in heads)]
    carry: int | None = None
    for i, label in enumerate(labels):
        start, end = bounds[i], bounds[i + 1]
        if start >= end:
            continue
        first = carry if carry is not None else start
        body = cutter.data[cutter.line_end(start) : end] if i else cutter.data[start:end]
        if i and not body.strip() and i + 1 < len(labels):
            carry = first
            continue
        carry = None
        if cutter.fits(first, end):
            pieces.append(Piece(first, end, label.kind, label.symbol, label.signature))
        else:
            pieces += cutter.pack(cutter.line_segments(first, end), label)
    return pieces
