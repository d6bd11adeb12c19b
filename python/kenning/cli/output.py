"""Consoles for people: rich on a terminal, whole lines in a pipe or a log."""

from __future__ import annotations

import sys
from typing import Any

UNBOUNDED_WIDTH = 1 << 16  # columns given to rich for a pipe: more than any line it prints


def console(*, stderr: bool = False) -> Any:
    """A rich console that keeps whole lines when its stream is not a terminal: rich would
    otherwise wrap or crop at 80 columns, and a pipe or a log has no width to fit."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            """A reader that stopped early: the command ends quietly (rich would exit 1)."""
            self.quiet = True
            raise BrokenPipeError

    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return _Console(stderr=stderr, highlight=False)
    return _Console(stderr=stderr, highlight=False, soft_wrap=True, width=UNBOUNDED_WIDTH)
