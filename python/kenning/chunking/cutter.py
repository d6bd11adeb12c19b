"""Byte ranges to chunks under a token budget: packing, splitting, and the final records.

Every cutter works on half-open byte ranges of the original file. Ranges that tile a region
are packed greedily into pieces that stay under the token budget and a line target; a range
too big on its own is split at its syntax children, then at lines, then (one giant line) at
UTF-8 character boundaries. Nothing is ever truncated.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kenning.records import Chunk

# A declaration longer than this is split even when its tokens fit (large-context models).
SPLIT_LINES = 80
# Merged neighbours (imports, constants, statements, window lines) stop growing here.
PACK_LINES = 50

_NEWLINE = re.compile(b"\n")
_BLANK_RUN = re.compile(rb"\n[ \t\r\f\v]*\n")


@dataclass(frozen=True, slots=True)
class Piece:
    """A chunk before trimming; ``filler`` marks code between declarations, which may merge."""

    start: int
    end: int
    kind: str
    symbol: str | None = None
    signature: str | None = None
    filler: bool = False


# (start, end, tree-sitter node or None): ranges that tile a region in order.
Segment = tuple[int, int, Any]


class Cutter:
    def __init__(self, data: bytes, max_tokens: int, count_tokens: Callable[[str], int]) -> None:
        self.data = data
        self.max_tokens = max_tokens
        self.count_tokens = count_tokens
        self.line_starts = [0, *(m.end() for m in _NEWLINE.finditer(data))]
        self._counts: dict[tuple[int, int], int] = {}

    # -- measures ---------------------------------------------------------------------------
    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "replace")

    def tokens(self, start: int, end: int) -> int:
        key = (start, end)
        found = self._counts.get(key)
        if found is None:
            found = self._counts[key] = self.count_tokens(self.text(start, end))
        return found

    def line_of(self, offset: int) -> int:
        """0-based line holding byte ``offset``."""
        return bisect.bisect_right(self.line_starts, offset) - 1

    def line_start(self, offset: int) -> int:
        return self.line_starts[self.line_of(offset)]

    def line_end(self, offset: int) -> int:
        """Offset just past the newline ending the line of ``offset`` (or the file's end)."""
        row = self.line_of(offset)
        return self.line_starts[row + 1] if row + 1 < len(self.line_starts) else len(self.data)

    def lines(self, start: int, end: int) -> int:
        return self.line_of(max(start, end - 1)) - self.line_of(start) + 1

    def fits(self, start: int, end: int, max_lines: int = SPLIT_LINES) -> bool:
        return self.lines(start, end) <= max_lines and self.tokens(start, end) <= self.max_tokens

    # -- packing ----------------------------------------------------------------------------
    def pack(self, segments: Sequence[Segment], label: Piece) -> list[Piece]:
        """Greedy: consecutive segments share a piece while it fits the budget and PACK_LINES."""
        out: list[Piece] = []
        group: list[Segment] = []
        total = 0

        def flush() -> None:
            nonlocal total
            if not group:
                return
            start, end = group[0][0], group[-1][1]
            # Token counts of line-aligned neighbours add up; check the sum once anyway.
            if len(group) == 1 or self.tokens(start, end) <= self.max_tokens:
                out.append(replace(label, start=start, end=end))
            else:
                out.extend(replace(label, start=s, end=e) for s, e, _ in group)
            group.clear()
            total = 0

        queue = list(reversed(segments))
        while queue:
            seg = queue.pop()
            start, end, node = seg
            if not self.data[start:end].strip():
                if group:
                    group.append(seg)  # blank lines between neighbours travel with them
                continue
            count = self.tokens(start, end)
            if count > self.max_tokens or self.lines(start, end) > SPLIT_LINES:
                flush()
                out.extend(self.split(start, end, node, label))
                continue
            overflow = total + count > self.max_tokens
            if group and overflow and node is not None and total < self.max_tokens // 4:
                inner = self.node_segments(node, start, end)
                if len(inner) > 1:  # a small header: pull the body's first statements up to it
                    queue.extend(reversed(inner))
                    continue
            if group and (overflow or self.lines(group[0][0], end) > PACK_LINES):
                flush()
            group.append(seg)
            total += count
        flush()
        return out

    def split(self, start: int, end: int, node: Any, label: Piece) -> list[Piece]:
        """Pieces of a range too big for one: syntax children, else lines, else characters."""
        if node is not None:
            segments = self.node_segments(node, start, end)
            if len(segments) > 1:
                return self.pack(segments, label)
        if self.line_of(start) != self.line_of(max(start, end - 1)):
            return self.pack(self.line_segments(start, end), label)
        return [replace(label, start=s, end=e) for s, e in self.split_line(start, end)]

    def node_segments(self, node: Any, start: int, end: int) -> list[Segment]:
        """Tile [start, end) at the starts of ``node``'s named children, expanding the big ones
        in place, so a function's header packs together with its first statements."""
        cuts: list[tuple[int, Any]] = []
        self._collect_cuts(node, start, end, cuts)
        cuts = [(s, n) for s, n in cuts if start < s < end]
        bounds = [start, *(s for s, _ in cuts), end]
        owners = [None, *(n for _, n in cuts)]
        segments: list[Segment] = []
        for i, owner in enumerate(owners):
            if bounds[i] < bounds[i + 1]:
                segments.append((bounds[i], bounds[i + 1], owner))
        return segments

    def _collect_cuts(self, node: Any, start: int, end: int, cuts: list[tuple[int, Any]]) -> None:
        for child in node.named_children:
            if child.end_byte <= start or child.start_byte >= end:
                continue
            cut = self.snap(child.start_byte, cuts[-1][0] if cuts else start)
            too_big = not self.fits(child.start_byte, child.end_byte)
            if too_big and child.named_child_count:
                cuts.append((cut, None))
                self._collect_cuts(child, cut, child.end_byte, cuts)
            else:
                cuts.append((cut, child))

    def snap(self, offset: int, floor: int) -> int:
        """Move a cut back to its line start when only indentation precedes it there."""
        line = self.line_start(offset)
        if line >= floor and not self.data[line:offset].strip():
            return line
        return offset

    def line_segments(self, start: int, end: int) -> list[Segment]:
        """One segment per paragraph (blank-line separated) when it fits, else per line."""
        segments: list[Segment] = []
        cursor = start
        for match in _BLANK_RUN.finditer(self.data, start, end):
            segments.append((cursor, match.end(), None))
            cursor = match.end()
        if cursor < end:
            segments.append((cursor, end, None))
        out: list[Segment] = []
        for s, e, _ in segments:
            if self.fits(s, e, PACK_LINES) or self.lines(s, e) == 1:
                out.append((s, e, None))
            else:
                row, last = self.line_of(s), self.line_of(e - 1)
                bounds = [s, *self.line_starts[row + 1 : last + 1], e]
                out.extend((a, b, None) for a, b in zip(bounds, bounds[1:], strict=False))
        return out

    def split_line(self, start: int, end: int) -> list[tuple[int, int]]:
        """Cut one over-budget line at UTF-8 boundaries, preferring whitespace."""
        parts = []
        # Estimate the window once: recounting the remainder each step would be quadratic.
        bytes_per_token = (end - start) / max(1, self.tokens(start, end))
        while start < end:
            size = max(1, int(self.max_tokens * bytes_per_token * 0.9))
            if end - start <= size and self.tokens(start, end) <= self.max_tokens:
                parts.append((start, end))
                break
            cut = start + min(size, max(1, (end - start) * 3 // 4))
            while True:
                cut = self._boundary(start, cut)
                if cut - start <= 1 or self.tokens(start, cut) <= self.max_tokens:
                    break
                cut = start + max(1, (cut - start) * 3 // 4)
                bytes_per_token *= 0.75
            parts.append((start, cut))
            start = cut
        return parts

    def _boundary(self, start: int, cut: int) -> int:
        space = self.data.rfind(b" ", start + (cut - start) * 3 // 4, cut)
        if space > start:
            return space + 1
        # Never cut inside a UTF-8 sequence: back off continuation bytes (10xxxxxx).
        low = cut
        while low > start + 1 and (self.data[low] & 0xC0) == 0x80 and cut - low < 3:
            low -= 1
        return low if (self.data[low] & 0xC0) != 0x80 else cut

    # -- output -----------------------------------------------------------------------------
    def chunks(self, pieces: Sequence[Piece], path: str, language: str | None) -> list[Chunk]:
        out = []
        for piece in pieces:
            start, end = self._trim(piece.start, piece.end)
            if start >= end:
                continue
            out.append(
                Chunk(
                    path=path,
                    start_byte=start,
                    end_byte=end,
                    start_line=self.line_of(start) + 1,
                    end_line=self.line_of(end - 1) + 1,
                    language=language,
                    kind=piece.kind,
                    symbol=piece.symbol,
                    signature=piece.signature,
                    text=self.text(start, end),
                )
            )
        return out

    def _trim(self, start: int, end: int) -> tuple[int, int]:
        """Drop leading blank lines and trailing whitespace; keep the first line's indent."""
        chunk = self.data[start:end]
        stripped = chunk.lstrip()
        if not stripped:
            return start, start
        first = start + len(chunk) - len(stripped)
        start = max(start, self.line_start(first))
        return start, start + len(self.data[start:end].rstrip())
