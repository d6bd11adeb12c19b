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
from dataclasses import dataclass
from typing import Any

import numpy as np

from kenning.chunking.calls import Declared, calls_between, members_between
from kenning.records import Chunk

# A declaration longer than this is split even when its tokens fit (large-context models).
SPLIT_LINES = 80
# Merged neighbours (imports, constants, statements, window lines) stop growing here.
PACK_LINES = 50

_BLANK_RUN = re.compile(rb"\n[ \t\r\f\v]*\n")
# Word runs: maximal runs of letters and digits (a non-ASCII byte counts as a letter). Every
# word-piece or BPE tokenizer spends at least one token per run, as it never merges across the
# punctuation or space between them.
_IN_WORD = np.zeros(256, dtype=np.bool_)
_IN_WORD[list(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")] = True
_IN_WORD[0x80:] = True
# Tokens per word run before this file has been measured (WordPiece on code: about 2.5).
_FIRST_RATIO = 2.5
_SAMPLE_BYTES = 1024
_MIN_SAMPLE_RUNS = 20
# Estimates aim this much high, so few packed pieces fail their exact check.
_SAFETY = 1.1


@dataclass(frozen=True, slots=True)
class Piece:
    """A chunk before trimming; ``filler`` marks code between declarations, which may merge."""

    start: int
    end: int
    kind: str
    symbol: str | None = None
    signature: str | None = None
    filler: bool = False

    def at(self, start: int, end: int) -> Piece:
        """This label on another range (``dataclasses.replace`` is slow in hot loops)."""
        return Piece(start, end, self.kind, self.symbol, self.signature, self.filler)


# (start, end, tree-sitter node or None): ranges that tile a region in order.
Segment = tuple[int, int, Any]


class Cutter:
    """Measures and cuts one file. Exact token counts are the costly part (a tokenizer pass),
    so decisions use an estimate and every emitted piece is checked exactly once: the estimate
    is the number of word runs (a lower bound for real tokenizers, which never merge across
    them) times the tokens-per-run ratio seen so far in this file."""

    def __init__(self, data: bytes, max_tokens: int, count_tokens: Callable[[str], int]) -> None:
        self.data = data
        # Whether a small head (``defmodule X do``) packs with the first part of a too-big range
        # after it (a long ``@moduledoc``) instead of standing alone (see LanguageSpec).
        self.head_opens_long = False
        self.max_tokens = max_tokens
        self.count_tokens = count_tokens
        raw = np.frombuffer(data, dtype=np.uint8)
        self.line_starts: list[int] = [0, *(np.flatnonzero(raw == 10) + 1).tolist()]
        word = _IN_WORD[raw]
        before = np.zeros_like(word)
        before[1:] = word[:-1]
        self.run_starts: list[int] = np.flatnonzero(word & ~before).tolist()
        self._counts: dict[tuple[int, int], int] = {}
        self._counted_tokens = 0
        self._counted_runs = 0
        # Calibrate the tokens-per-run ratio on the file's opening lines.
        sample = self.line_end(min(len(data), _SAMPLE_BYTES) - 1) if data else 0
        if self.runs(0, sample) >= _MIN_SAMPLE_RUNS:
            self.tokens(0, sample)

    # -- measures ---------------------------------------------------------------------------
    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "replace")

    def tokens(self, start: int, end: int) -> int:
        """Exact token count of [start, end) by the embedder's counter (memoised)."""
        key = (start, end)
        found = self._counts.get(key)
        if found is None:
            found = self._counts[key] = self.count_tokens(self.text(start, end))
            self._counted_tokens += found
            self._counted_runs += self.runs(start, end)
        return found

    def runs(self, start: int, end: int) -> int:
        """Word runs starting in [start, end), less one for a run cut at ``start``: a lower
        bound on the tokens of [start, end) (used to skip counting what cannot fit)."""
        starts = self.run_starts
        return max(0, bisect.bisect_left(starts, end) - bisect.bisect_left(starts, start) - 1)

    def estimate(self, start: int, end: int) -> int:
        runs = self.runs(start, end)
        ratio = self._counted_tokens / self._counted_runs if self._counted_runs else _FIRST_RATIO
        return int(runs * ratio * _SAFETY) + 1

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
        starts = self.line_starts
        return (
            bisect.bisect_right(starts, max(start, end - 1))
            - bisect.bisect_right(starts, start)
            + 1
        )

    def fits(self, start: int, end: int, max_lines: int = SPLIT_LINES) -> bool:
        """Exact, but a range whose lower bound is over the budget is never counted."""
        return (
            self.lines(start, end) <= max_lines
            and self.runs(start, end) <= self.max_tokens
            and self.tokens(start, end) <= self.max_tokens
        )

    def probably_fits(self, start: int, end: int) -> bool:
        lines = self.lines(start, end)
        return lines <= SPLIT_LINES and self.estimate(start, end) <= self.max_tokens

    def fits_cheaply(self, start: int, end: int) -> bool:
        """Whether [start, end) might fit: far over by the estimate, it is split uncounted."""
        return self.estimate(start, end) <= self.max_tokens * 5 // 4 and self.fits(start, end)

    # -- packing ----------------------------------------------------------------------------
    def pack(self, segments: Sequence[Segment], label: Piece, exact: bool = False) -> list[Piece]:
        """Greedy: consecutive segments share a piece while it fits the budget and PACK_LINES.

        Sizes are estimated and each piece is checked exactly when it closes; a group that
        turns out too big is packed again with exact counts (``exact``)."""
        out: list[Piece] = []
        group: list[Segment] = []
        total = 0

        def flush() -> None:
            nonlocal total
            solid = [seg for seg in group if self.data[seg[0] : seg[1]].strip()]
            start, end = group[0][0], group[-1][1]
            if not solid:
                pass
            elif self.fits(start, end, max_lines=len(self.line_starts)):
                out.append(label.at(start, end))
            elif len(solid) == 1:
                seg = solid[0]
                out.extend(self.split(seg[0], seg[1], seg[2], label))
            elif exact:  # counts of neighbours nearly always add up; if not, one piece each
                out.extend(label.at(s, e) for s, e, _ in solid)
            else:
                out.extend(self.pack(group, label, exact=True))
            group.clear()
            total = 0

        if not segments:
            return out
        # Aim for even parts (no one-line tail) when the whole needs several.
        whole_start, whole_end = segments[0][0], segments[-1][1]
        whole_tokens = int(self.estimate(whole_start, whole_end) / _SAFETY)
        whole_lines = self.lines(whole_start, whole_end)
        parts = max(-(-whole_tokens // self.max_tokens), -(-whole_lines // PACK_LINES))
        soft_tokens = min(self.max_tokens, whole_tokens * 5 // 4 // parts)
        soft_lines = min(PACK_LINES, whole_lines * 5 // 4 // parts + 1)
        queue = list(reversed(segments))
        while queue:
            seg = queue.pop()
            start, end, node = seg
            if not self.data[start:end].strip():
                if group:
                    group.append(seg)  # blank lines between neighbours travel with them
                continue
            count = self.tokens(start, end) if exact else self.estimate(start, end)
            if count > self.max_tokens or self.lines(start, end) > SPLIT_LINES:
                if not self.fits(start, end):
                    if self.head_opens_long and group and total < self.max_tokens // 4:
                        inner = self.opening(start, end, node)
                        if len(inner) > 1:  # a small head takes the first part of what follows
                            queue.extend(reversed(inner))
                            continue
                    if group:
                        flush()
                    out.extend(self.split(start, end, node, label))
                    continue
                count = self.tokens(start, end)
            overflow = total + count > self.max_tokens
            if group and overflow and node is not None and total < self.max_tokens // 4:
                inner = self.node_segments(node, start, end)
                if len(inner) > 1:  # a small header: pull the body's first statements up to it
                    queue.extend(reversed(inner))
                    continue
            too_long = self.lines(group[0][0], end) > soft_lines if group else False
            if group and (overflow or too_long or total + count > soft_tokens):
                flush()
            group.append(seg)
            total += count
        if group:
            flush()
        if len(out) > 1 and out[-1].start >= out[-2].end:
            # A short tail left by a nested split joins the part before it when both fit.
            prev, last = out[-2], out[-1]
            if self.lines(last.start, last.end) <= 2 and self.fits(prev.start, last.end):
                out[-2:] = [prev.at(prev.start, last.end)]
        return out

    def split(self, start: int, end: int, node: Any, label: Piece) -> list[Piece]:
        """Pieces of a range too big for one: syntax children, else lines, else characters."""
        segments = self.opening(start, end, node)
        if len(segments) > 1:
            return self.pack(segments, label)
        return [label.at(s, e) for s, e in self.split_line(start, end)]

    def opening(self, start: int, end: int, node: Any) -> list[Segment]:
        """The segments a range too big for one is packed from: its syntax children, else its
        paragraphs or lines; one segment when it is a single line."""
        if node is not None:
            segments = self.node_segments(node, start, end)
            if len(segments) > 1:
                return segments
        if self.line_of(start) != self.line_of(max(start, end - 1)):
            segments = self.line_segments(start, end)
            if len(segments) == 1:  # one paragraph that only looked small: cut at every line
                segments = self.line_segments(start, end, by_line=True)
            return segments
        return [(start, end, node)]

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
            # Cut only where a line starts: a node in mid-line (a trailing comment, a call's
            # arguments) stays with what precedes it unless it has to be opened up.
            at_line_start = cut == self.line_start(cut)
            too_big = not self.probably_fits(child.start_byte, child.end_byte)
            if too_big and child.named_child_count:
                if at_line_start:
                    cuts.append((cut, None))
                self._collect_cuts(child, cut, child.end_byte, cuts)
            elif at_line_start:
                cuts.append((cut, child))

    def snap(self, offset: int, floor: int) -> int:
        """Move a cut back to its line start when only indentation precedes it there."""
        line = self.line_start(offset)
        if line >= floor and not self.data[line:offset].strip():
            return line
        return offset

    def line_segments(self, start: int, end: int, by_line: bool = False) -> list[Segment]:
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
            small = self.lines(s, e) <= PACK_LINES and self.estimate(s, e) <= self.max_tokens
            if small and not by_line:
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
    def chunks(self, pieces: Sequence[Piece], path: str, language: str | None,
               generated: bool = False, calls: Sequence[tuple[int, str]] = (),
               declared: Sequence[Declared] = (), methods: bool = True) -> list[Chunk]:
        """The records of ``pieces``; ``calls`` and ``declared`` (``chunking.calls``) give
        each the calls made within it and the declarations inside it."""
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
                    generated=generated,
                    calls=calls_between(calls, start, end, self),
                    members=members_between(declared, start, end, piece.symbol, self,
                                            methods),
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
