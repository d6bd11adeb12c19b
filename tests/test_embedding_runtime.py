"""The local model's runtimes: OpenVINO where it loads on a CPU with VNNI or AMX, onnxruntime
elsewhere and as the fallback, the same vectors from both, and a process that ends while a
thread is inside the model ends cleanly."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kenning.embedding import local
from kenning.errors import ConfigError

TEXTS = ["how are retries handled",
         "def parse_header(line):\n    name, _, value = line.partition(':')\n    return name",
         "class LruCache:\n    '''Evicts the least recently used entries.'''\n" * 30,
         "x"]

if "openvino" not in local.installed_runtimes():
    pytest.skip("openvino is not installed", allow_module_level=True)
openvino = local.import_openvino()  # with its telemetry off, as kenning imports it


def _vectors(runtime: object) -> np.ndarray:
    return local.encode(local.token_ids(TEXTS), onnx_session=runtime)


def _python(code: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    given = {name: value for name, value in os.environ.items() if name != "KENNING_RUNTIME"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=240, env={**given, "KENNING_HOME": str(home),
                                                       **env})


def test_openvino_is_chosen_where_the_cpu_multiplies_int8_and_agrees_with_onnxruntime(
        isolated_state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KENNING_RUNTIME", raising=False)  # "auto", whatever pins a test run
    monkeypatch.setattr(local, "cpu_multiplies_int8", lambda: True)
    chosen = local.build_runtime(threads=2)
    assert local.runtime_name(chosen) == "openvino"
    fallback = local.build_session(threads=2)
    assert local.runtime_name(fallback) == "onnxruntime"
    cosines = (_vectors(chosen) * _vectors(fallback)).sum(axis=1)
    assert cosines.min() >= 0.995  # the same int8 products, rounded by two implementations
    # batched with others or alone, a text gets the same vector
    ids = local.token_ids(TEXTS)
    alone = np.stack([local.encode([row], onnx_session=chosen)[0] for row in ids])
    np.testing.assert_array_equal(alone, _vectors(chosen))


def test_with_avx2_alone_onnxruntime_is_chosen_though_openvino_is_installed(
        isolated_state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KENNING_RUNTIME", raising=False)
    monkeypatch.setattr(local, "cpu_multiplies_int8", lambda: False)
    assert local.runtime_name(local.build_runtime(threads=1)) == "onnxruntime"


def test_the_environment_forces_a_runtime(isolated_state: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KENNING_RUNTIME", "onnxruntime")
    assert local.runtime_name(local.build_runtime(threads=1)) == "onnxruntime"
    monkeypatch.setenv("KENNING_RUNTIME", "OpenVINO")
    assert local.runtime_name(local.build_runtime(threads=1)) == "openvino"
    monkeypatch.setenv("KENNING_RUNTIME", "tensorrt")
    with pytest.raises(ConfigError, match="Bad value 'tensorrt' for embedder.runtime from "
                                          "KENNING_RUNTIME"):
        local.build_runtime()


def test_without_openvino_the_model_runs_on_onnxruntime(isolated_state: Path) -> None:
    # a process where openvino cannot be imported, as on a machine without its wheel
    code = """
        import sys
        sys.modules["openvino"] = None
        from kenning.embedding import local
        print(local.runtime_name(local.session()))
        vectors = local.encode(local.token_ids(["def parse(path): return open(path).read()"]))
        print(round(float(vectors[0] @ vectors[0]), 4))
        """
    done = _python(code, isolated_state / "plain")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["onnxruntime", "1.0"]
    forced = _python(code, isolated_state / "forced", KENNING_RUNTIME="openvino")
    assert forced.returncode != 0  # asked for by name: an error, not a silent fallback
    assert "OpenVINO cannot run the embedded model here" in forced.stderr


def test_a_process_ends_cleanly_while_a_thread_is_inside_the_model(
        isolated_state: Path) -> None:
    # the main thread returns while a daemon thread (a search's model loader, an MCP server's
    # index job) compiles or runs the model: without the exit hook the process could crash
    code = """
        import threading, time
        from kenning.embedding import local
        ids = local.token_ids(["def handler(event):\\n    return event.get('key')\\n" * 40] * 8)
        done = []
        def loop():
            while True:
                local.encode(ids)
                done.append(1)
        threading.Thread(target=loop, daemon=True).start()
        while len(done) < 2:
            time.sleep(0.01)
        print("leaving")
        """
    for attempt in range(3):
        ended = _python(code, isolated_state / f"home-{attempt}")
        assert (ended.returncode, ended.stdout.strip()) == (0, "leaving"), ended.stderr
        assert "terminate called" not in ended.stderr


def test_threads_take_turns_on_the_compiled_model(isolated_state: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # an MCP server embeds queries while its index job embeds chunks, and a first search its
    # query beside the first chunks: one compiled model, whose runs never overlap (two threads
    # filling infer requests at once can deadlock inside OpenVINO)
    runtime = local.OpenVINOSession(threads=1)
    ids = [local.token_ids([text]) for text in TEXTS]
    one_by_one = [local.encode(row, onnx_session=runtime) for row in ids]
    inside, most, count = 0, 0, threading.Lock()
    infer = openvino.InferRequest.infer

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal inside, most
        with count:
            inside += 1
            most = max(most, inside)
        try:
            time.sleep(0.01)  # long enough for another thread to arrive meanwhile
            return infer(*args, **kwargs)
        finally:
            with count:
                inside -= 1

    monkeypatch.setattr(openvino.InferRequest, "infer", counted)
    rows = ids * 3
    start = threading.Barrier(len(rows))

    def encode(row: list[list[int]]) -> np.ndarray:
        start.wait()  # every thread sets off at once
        return local.encode(row, onnx_session=runtime)

    with ThreadPoolExecutor(len(rows)) as pool:
        together = list(pool.map(encode, rows))
    assert most == 1
    for i, vectors in enumerate(together):
        np.testing.assert_allclose(vectors, one_by_one[i % len(ids)], atol=1e-6)
