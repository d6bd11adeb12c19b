"""Chunking on every usable core: files are read, hashed, chunked and their chunks hashed in
worker processes, streamed in the order given, with a bounded number of files in flight. The
file's digest comes from the bytes chunked, so a new file is read once, not hashed first.

``chunk_one`` is the reference: the serial path runs it in this process and the workers run the
same function, so their chunks are the same (``tests/test_chunk_pool.py`` compares both on a
real mixed-language tree). Each worker is a fresh interpreter (``python -m
kenning.indexing.chunk_worker``), never a fork (this process may hold threads: the model's, a
server's) and never multiprocessing's spawn, which runs the caller's main module again in
every worker (``python -m kenning`` would start a second command). It loads tree-sitter and the
tokenizer once and talks over its stdin and stdout, so it ends when this process does, killed
or not. A small job (an edit or two) stays in this process: starting workers costs more than
it saves.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import pickle
import struct
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kenning import kernels, safe_read
from kenning.embedding import Embedder, document_text
from kenning.embedding.local import _usable_cores
from kenning.embedding.profiles import HEADER_RESERVE_TOKENS
from kenning.records import Chunk, SourceFile

TokenCounter = Callable[[str], int]

# Below this many bytes to chunk (about two seconds on one core) workers are not started.
POOL_MIN_BYTES = 1 << 20
# Files per task: enough to amortise a round trip, few enough that the order given is kept
# closely and a stop waits for little; a task also ends at TASK_BYTES.
TASK_FILES = 16
TASK_BYTES = 256 << 10
# Tasks in flight per worker: keeps every worker busy while bounding the chunks held in memory.
TASKS_AHEAD = 3
_LENGTH = struct.Struct("<Q")


@dataclass(frozen=True, slots=True)
class Chunked:
    """One file's chunks and their content hashes, and the digest of the bytes they were cut
    from (the file's, as ``kernels.hash_files`` gives it); ``refused`` names why it was not read
    (``safe_read.Refused``: it vanished or changed kind since the walk), else None."""

    file: SourceFile
    chunks: list[Chunk]
    hashes: list[bytes]
    size: int  # bytes read
    digest: bytes = b""
    refused: str | None = None


@dataclass(frozen=True)
class Chunker:
    """What chunking a file needs, in a form a worker process can rebuild: the project root,
    the size limit, the embedder's token budget per chunk and its token counter."""

    root: Path
    max_file_size: int
    max_tokens: int
    count_tokens: TokenCounter

    def chunk(self, file: SourceFile, data: bytes) -> list[Chunk]:
        from kenning.chunking import chunk_file

        budget = token_budget(self.max_tokens, self.count_tokens, file.path)
        return chunk_file(file.path, data, file.language, max_tokens=budget,
                          count_tokens=self.count_tokens)


def token_budget(max_tokens: int, count_tokens: TokenCounter, path: str) -> int:
    """Tokens a chunk of ``path`` may have. ``max_tokens`` already leaves out the document
    prefix and a fixed reserve for the ``Filepath:`` header; a longer header takes the rest."""
    header = count_tokens(document_text(path, ""))
    return max(16, max_tokens - max(0, header - HEADER_RESERVE_TOKENS))


def chunker_for(embedder: Embedder, root: Path, max_file_size: int) -> Chunker:
    return Chunker(root, max_file_size, int(embedder.max_tokens), embedder.count_tokens)


def chunk_one(chunker: Chunker, file: SourceFile) -> Chunked:
    """Read, chunk and hash one file: the reference both paths run."""
    try:
        data, _ = safe_read.read(chunker.root, file.path, chunker.max_file_size)
    except safe_read.Refused as refused:
        return Chunked(file, [], [], 0, refused=refused.reason)
    pieces = chunker.chunk(file, data)
    digest, *hashes = kernels.hash_many([data, *(c.text for c in pieces)])
    return Chunked(file, pieces, hashes, len(data), digest)


def travelling(chunker: Chunker) -> Chunker | None:
    """``chunker`` as a worker process can rebuild it, or None where it cannot: a remote
    backend's counter travels as its rule (its connection would not pickle), any other as it
    pickles (the local model's does)."""
    counter = getattr(chunker.count_tokens, "__self__", None)
    remote = sys.modules.get("kenning.embedding.remote")
    if remote is not None and isinstance(counter, remote.RemoteEmbedder):
        return dataclasses.replace(chunker, count_tokens=remote.cautious_token_count)
    try:
        pickle.dumps(chunker)
    except Exception:  # noqa: BLE001 - any object may refuse to pickle in its own way
        return None
    return chunker


def workers_for(files: Sequence[SourceFile], chunker: Chunker) -> int:
    """How many worker processes to chunk ``files`` with: none (this process) for a small job,
    on one core, or with a counter that cannot travel; else one per usable core."""
    cores = _usable_cores()
    if cores < 2 or sum(f.size for f in files) < POOL_MIN_BYTES or travelling(chunker) is None:
        return 0
    return min(cores, len(files))


def _tasks(files: Sequence[SourceFile]) -> Iterator[list[SourceFile]]:
    task: list[SourceFile] = []
    size = 0
    for file in files:
        task.append(file)
        size += file.size
        if len(task) >= TASK_FILES or size >= TASK_BYTES:
            yield task
            task, size = [], 0
    if task:
        yield task


def send(stream: IO[bytes], message: object) -> None:
    """One length-prefixed pickle: the frames between this module and ``chunk_worker``."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def receive(stream: IO[bytes]) -> Any:
    """The next frame's object; EOFError at the end of the stream, or in the middle of one."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError
    (size,) = _LENGTH.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


class _Worker:
    """One worker process and the tasks it was given, oldest first."""

    def __init__(self, chunker: Chunker) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kenning.indexing.chunk_worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.input, self.output = self.process.stdin, self.process.stdout
        self.tasks: deque[list[SourceFile]] = deque()
        with contextlib.suppress(OSError):  # it could not start: the first ``take`` says so
            send(self.input, chunker)

    def give(self, task: list[SourceFile]) -> None:
        self.tasks.append(task)
        with contextlib.suppress(OSError):  # it died: the next ``take`` says so
            send(self.input, task)

    def take(self) -> list[Chunked]:
        """The results of the oldest task; EOFError if the worker is gone; the worker's own
        exception if chunking raised there (as it would have here)."""
        ok, answer = receive(self.output)
        self.tasks.popleft()
        if not ok:
            raise answer
        return list(answer)

    def stop(self) -> None:
        """End the worker now: whatever it is chunking is no longer wanted."""
        with contextlib.suppress(OSError):
            self.input.close()
        self.process.kill()
        self.process.wait()
        self.output.close()


class ChunkStream:
    """The chunks of ``files``, one ``Chunked`` per file in the order given, from ``workers``
    processes (0: this one). Tasks go to the workers in turn, so reading their answers in
    turn keeps the order; each has at most ``TASKS_AHEAD`` tasks queued, which bounds what is
    held in memory. ``close`` (or leaving the ``with``) stops the workers at once. A worker
    that dies (killed, out of memory) costs only speed: its files and the rest are chunked
    here."""

    def __init__(self, chunker: Chunker, files: Sequence[SourceFile], workers: int) -> None:
        self.chunker, self.files = chunker, files
        sent = travelling(chunker) if workers else None
        self.workers = [_Worker(sent) for _ in range(workers)] if sent is not None else []

    def __iter__(self) -> Iterator[Chunked]:
        if not self.workers:
            for file in self.files:
                yield chunk_one(self.chunker, file)
            return
        tasks = _tasks(self.files)
        for _ in range(TASKS_AHEAD):  # task k goes to worker k mod n, so answers come in order
            for worker in self.workers:
                if (task := next(tasks, None)) is not None:
                    worker.give(task)
        turn = 0
        while self.workers[turn].tasks:
            worker = self.workers[turn]
            try:
                done = worker.take()
            except EOFError:
                left = self._queued(turn)
                self.close()
                for task in itertools.chain(left, tasks):
                    for file in task:
                        yield chunk_one(self.chunker, file)
                return
            yield from done
            if (task := next(tasks, None)) is not None:
                worker.give(task)
            turn = (turn + 1) % len(self.workers)

    def _queued(self, turn: int) -> list[list[SourceFile]]:
        """The tasks the workers hold, in the order given (the answer of ``turn`` is next)."""
        queues = [list(w.tasks) for w in (*self.workers[turn:], *self.workers[:turn])]
        return [t for row in itertools.zip_longest(*queues) for t in row if t is not None]

    def close(self) -> None:
        workers, self.workers = self.workers, []
        for worker in workers:
            worker.stop()

    def __enter__(self) -> ChunkStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["ChunkStream", "Chunked", "Chunker", "chunk_one", "chunker_for", "receive", "send",
           "token_budget", "travelling", "workers_for"]
