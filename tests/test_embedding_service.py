"""The embedding service: real processes on a real Unix socket, the real model.

A CLI search starts it and the next one uses it, neither loading the model; its vectors are the
in-process model's, bit for bit; killed or hung at any point, a client falls back to the model
in its own process within its deadline and the next call starts a new service; a socket or
folder that is not private to the user is refused; of two started at once one serves, and it
exits when idle.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from kenning import config
from kenning.embedding import deadline, make_embedder, service_wire
from kenning.embedding.local import LocalEmbedder
from kenning.embedding.service_client import ServiceEmbedder, stop_services
from kenning.errors import EmbedderUnavailable
from search_fixtures import REPO, write_repo

TEXTS = ["def parse_header(line):\n    return line.partition(':')",
         "", "naïve café ✓ 日本語 🙂", "retry " * 400]  # the last runs past the model's window


@pytest.fixture
def service_home(monkeypatch: pytest.MonkeyPatch, local_model: None) -> Iterator[Path]:
    """A KENNING_HOME short enough for a socket's path on every system (macOS's temporary
    folders are not), with the service switched on; every service started in it is ended
    after the test, and no process of it is left."""
    home = Path(tempfile.mkdtemp(prefix="kn-", dir="/tmp"))
    monkeypatch.setenv("KENNING_HOME", str(home))
    monkeypatch.setenv("KENNING_EMBEDDER_SERVICE", "true")
    try:
        yield home
    finally:
        stop_services()
        shutil.rmtree(home, ignore_errors=True)


def service(**overrides: str) -> ServiceEmbedder:
    embedder = make_embedder(config.load(overrides), service=True)
    assert isinstance(embedder, ServiceEmbedder)
    return embedder


def local() -> LocalEmbedder:
    embedder = make_embedder(config.load())
    assert isinstance(embedder, LocalEmbedder)
    return embedder


def service_pid() -> int:
    """The pid in the lock file of the live service."""
    lock = service_wire.place(service_wire.identity()).lock
    return int(lock.read_text().strip())


def ended(pid: int) -> None:
    """Wait until ``pid``, a service this test process started and killed, has ended."""
    os.waitpid(pid, 0)


SEARCH = """
import runpy, sys
sys.argv = ["kenning", *sys.argv[1:]]
try:
    runpy.run_module("kenning", run_name="__main__")
finally:
    print(json.dumps({"model_loaded": "onnxruntime" in sys.modules or "tokenizers" in sys.modules}),
          file=sys.stderr)
"""


def cli_search(root: Path, query: str) -> tuple[dict[str, object], bool]:
    """A CLI search in a process of its own: its result, and whether it loaded the model or
    its tokenizer."""
    done = subprocess.run([sys.executable, "-c", "import json\n" + SEARCH, "search", query,
                           str(root), "--json-output"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return json.loads(done.stdout), bool(report["model_loaded"])


def test_a_search_starts_the_service_and_the_next_search_uses_it(service_home: Path,
                                                                   tmp_path: Path) -> None:
    from kenning.indexing.indexer import refresh

    root = write_repo(tmp_path / "repo", {k: v for k, v in REPO.items() if "http" in k})
    refresh(root, config.load())  # the vectors, made in this process
    first, loaded_first = cli_search(root, "exponential backoff between retries")
    second, loaded_second = cli_search(root, "parse a header line")
    assert not loaded_first and not loaded_second  # the service's model answered both
    assert first["results"][0]["path"] == "src/http/retry.py"  # type: ignore[index]
    assert second["results"][0]["symbol"] == "parse_header"  # type: ignore[index]
    assert not first["warnings"] and not second["warnings"]
    status = service().status()
    assert status["pid"] == service_pid()
    assert status["served"]["query"] == 2

    # the vectors of the index: the service's are the in-process model's, bit for bit
    through, here = service(), local()
    assert np.array_equal(through.embed_documents(TEXTS), here.embed_documents(TEXTS))
    for text in TEXTS:
        assert np.array_equal(through.embed_query(text), here.embed_query(text))
    assert service().status()["served"]["documents"] == 1


def test_a_service_killed_or_hung_mid_request_falls_back_and_is_started_again(
        service_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    embedder, here = service(), local()
    query = "how are retries handled"
    want = here.embed_query(query)
    assert np.array_equal(embedder.embed_query(query), want)  # starts the service
    first = service_pid()

    # clients that die halfway through sending or before the answer (the kernel closes a
    # killed process's socket so) leave the service serving
    request = {"kenning": service_wire.PROTOCOL, "identity": embedder.identity, "op": "embed",
               "kind": "documents", "texts": TEXTS}
    for cut in ("sending", "waiting"):
        with socket.socket(socket.AF_UNIX) as dying:
            dying.connect(str(embedder.place.socket))
            if cut == "sending":
                dying.sendall(b"\0\0\1\0{")
            else:
                service_wire.send(dying, request)
    assert np.array_equal(embedder.embed_query(query), want)
    assert embedder.status()["pid"] == first

    # SIGKILL while the client waits for the answer: the client embeds in its own process
    waiting = threading.Event()
    real_receive = service_wire.receive

    def receive(*args: object, **kwargs: object) -> object:
        waiting.set()
        return real_receive(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(service_wire, "receive", receive)
    os.kill(first, signal.SIGSTOP)  # the request stays unanswered until the kill
    got: list[np.ndarray] = []
    asking = threading.Thread(target=lambda: got.append(embedder.embed_query(query)))
    asking.start()
    assert waiting.wait(30)
    os.kill(first, signal.SIGKILL)
    asking.join(60)
    ended(first)
    assert np.array_equal(got[0], want)
    monkeypatch.setattr(service_wire, "receive", real_receive)

    # the next call replaces the dead service's socket with a new service's
    assert np.array_equal(embedder.embed_query(query), want)
    second = service_pid()
    assert second != first
    assert embedder.status()["served"]["query"] == 1  # a new service's count

    # hung: past the caller's deadline the call fails as a hung embedder does, promptly
    os.kill(second, signal.SIGSTOP)
    with pytest.raises(EmbedderUnavailable, match="did not answer in time"), \
            deadline.within(0.5):
        embedder.embed_query(query)
    # past embedder.timeout the hung service is ended and the model runs here
    impatient = service(**{"embedder.timeout": "0.5"})
    assert np.array_equal(impatient.embed_query(query), want)
    ended(second)


def test_the_bound_on_word_pieces_holds_for_any_text(local_model: None) -> None:
    import random

    rng = random.Random(7)
    awkward = [0x130, 0xFB01, 0x1F82, 0x390, 0x2126, 0xDF, 0x3000, 0xAC00]  # İ ﬁ ᾂ ΐ Ω ß
    texts = [*TEXTS, *("".join(chr(rng.choice(
        [rng.randint(32, 126), rng.randint(0xA0, 0x2FFF), rng.randint(0x3000, 0x9FFF),
         rng.randint(0xAC00, 0xD7A3), rng.randint(0x1F300, 0x1FAFF), rng.choice(awkward)]))
        for _ in range(rng.randint(1, 80))) for _ in range(500))]
    embedder = service(**{"embedder.service": "true"})  # none is started: nothing embeds
    for text in texts:
        assert embedder.at_most_tokens(text) >= embedder.count_tokens(text), text


@pytest.mark.parametrize("unsafe", ["folder mode", "socket symlink", "socket owner"])
def test_a_socket_not_private_to_the_user_is_refused(
        unsafe: str, service_home: Path, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    if unsafe == "socket owner" and os.geteuid() != 0:
        pytest.skip("giving a file to another user takes root")
    embedder = service()
    place = embedder.place
    place.folder.mkdir(mode=0o700)
    if unsafe == "folder mode":
        place.folder.chmod(0o755)
    else:
        elsewhere = socket.socket(socket.AF_UNIX)
        elsewhere.bind(str(tmp_path / "s"))
        if unsafe == "socket symlink":
            place.socket.symlink_to(tmp_path / "s")
        else:
            os.rename(tmp_path / "s", place.socket)
            os.chmod(place.socket, 0o600)
            os.chown(place.socket, 65534, 65534)
        elsewhere.close()
    query = "how are retries handled"
    assert np.array_equal(embedder.embed_query(query), local().embed_query(query))
    refusals = [r.getMessage() for r in caplog.records if r.name == "kenning.embedding"]
    assert len(refusals) == 1 and "loads the model in this process" in refusals[0]
    assert "\n" not in refusals[0]
    assert not place.lock.exists()  # no service was started beside it


@pytest.mark.skipif(os.geteuid() != 0, reason="connecting as another user takes root")
def test_the_service_never_answers_another_user(service_home: Path) -> None:
    embedder = service()
    embedder.check()  # started
    # open to all, as only a careless owner could make it: the kernel's uid still refuses
    os.chmod(service_home, 0o755)
    os.chmod(embedder.place.folder, 0o777)
    os.chmod(embedder.place.socket, 0o777)
    other = subprocess.run(
        [sys.executable, "-c", "import os, socket, sys\nos.setgid(65534); os.setuid(65534)\n"
         "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(repr(s.recv(10)))",
         str(embedder.place.socket)],
        capture_output=True, text=True, timeout=60)
    assert other.stdout.strip() == "b''", other.stderr  # closed unanswered
    os.chmod(embedder.place.folder, 0o700)
    os.chmod(embedder.place.socket, 0o600)
    assert embedder.status()["served"]["refused"] == 1


def test_of_two_services_started_at_once_one_serves_and_it_exits_when_idle(
        service_home: Path) -> None:
    place = service_wire.place(service_wire.identity())
    place.folder.mkdir(mode=0o700)
    argv = [sys.executable, "-m", "kenning.embedding.service", "--idle", "1"]
    both = [subprocess.Popen(argv, stdout=subprocess.PIPE) for _ in range(2)]
    said = []
    for process in both:
        assert process.stdout is not None
        with process.stdout:
            said.append(process.stdout.read())
    serving = [p for p, s in zip(both, said, strict=True) if s == b"ready\n"]
    assert len(serving) == 1 and sorted(said) == [b"", b"ready\n"]
    loser = next(p for p in both if p is not serving[0])
    assert loser.wait(60) == 0
    assert service_pid() == serving[0].pid
    query = "how are retries handled"
    assert np.array_equal(service().embed_query(query), local().embed_query(query))
    assert serving[0].wait(60) == 0  # a second without a request
    assert not place.socket.exists()
    fd = os.open(place.lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no one holds it any more
    finally:
        os.close(fd)
