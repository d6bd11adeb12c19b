"""A chunking worker process of ``chunk_pool``: ``python -m kenning.indexing.chunk_worker``.

It reads a ``Chunker`` from stdin, then tasks (lists of files), and answers each task on stdout
with ``(True, [Chunked, ...])``, or ``(False, exception)`` when chunking raised, all as the
pool's length-prefixed pickles. It ends at the end of its input: when the pool closes it, or
when the process that started it is gone.
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> None:
    # Ctrl-C reaches the whole process group: the pool's process answers it and ends this one
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from kenning.chunking import _parser
    from kenning.indexing.chunk_pool import chunk_one, receive, send

    # the answers' own descriptor; anything else printed to stdout goes to stderr instead
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    tasks = sys.stdin.buffer
    try:
        chunker = receive(tasks)
        _parser("python")  # tree-sitter's language pack, loaded once before the first task
        chunker.count_tokens("")  # and the tokenizer
        while True:
            files = receive(tasks)
            try:
                answer: tuple[bool, object] = (True, [chunk_one(chunker, f) for f in files])
            except Exception as exc:  # noqa: BLE001 - raised again in the pool's process
                answer = (False, exc)
            send(answers, answer)
    except (EOFError, BrokenPipeError):  # the pool is done with this worker
        return


if __name__ == "__main__":
    main()
