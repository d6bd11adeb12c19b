"""A chunk's vector is a function of its text on every runtime kenning may run: the same bits
whatever the texts embedded with it, their order and the threads of a run."""

from __future__ import annotations

import random

import numpy as np
import pytest
from kenning.embedding import document_text, local

CODE = '''def retry(call, attempts=3):
    """Call again after a failure, waiting longer each time."""
    for attempt in range(attempts):
        try:
            return call()
        except OSError:
            time.sleep(2 ** attempt)
'''
# lengths from a few word pieces to past the model's 256, as a real index has them
TEXTS = [document_text(f"src/m{i}.py", CODE[: 40 * (i + 1)] * (1 + i // 2)) for i in range(10)]
OTHERS = ["x", "class A: pass", document_text("README.md", "# Title\n\nSome words. " * 60)]


@pytest.mark.parametrize("runtime", list(local.installed_runtimes()))
def test_a_text_gets_the_same_bits_in_any_batch_order_and_thread_count(
        runtime: str, isolated_state: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KENNING_RUNTIME", runtime)
    one, two = local.build_runtime(threads=1), local.build_runtime(threads=2)
    assert {local.runtime_name(one), local.runtime_name(two)} == {runtime}
    ids = local.token_ids(TEXTS)
    assert min(map(len, ids)) < 40 and max(map(len, ids)) == local.MAX_SEQUENCE
    together = local.encode(ids, onnx_session=one)
    alone = np.stack([local.encode([row], onnx_session=one)[0] for row in ids])
    order = list(range(len(ids)))
    random.Random(7).shuffle(order)
    mixed = local.encode([ids[i] for i in order] + local.token_ids(OTHERS), onnx_session=one)
    shuffled = np.empty_like(together)
    shuffled[order] = mixed[: len(ids)]
    threads = local.encode(ids, onnx_session=two)
    for other in (alone, shuffled, threads):
        assert together.tobytes() == other.tobytes()
