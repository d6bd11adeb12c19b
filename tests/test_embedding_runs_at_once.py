"""The local model keeps a run of one thread going on each core: the runs of a list overlap,
give the vectors of runs one at a time, and a failing run stops the others."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest
from kenning.embedding import local

TEXTS = [f"def handler_{i}(event):\n    return event.get('key_{i}')\n" * (1 + i % 7)
         for i in range(24)]


class Watched:
    """A real onnxruntime session whose runs are counted while they overlap; with ``meet``, its
    first runs wait for one another, so that as many as may overlap do."""

    def __init__(self, session: Any, at_once: int, fail_at: int | None = None,
                 meet: bool = False) -> None:
        self.session, self.runs_at_once, self.fail_at = session, at_once, fail_at
        self.meeting = threading.Barrier(at_once, timeout=20) if meet else None
        self.inside = self.most = self.started = 0
        self.count = threading.Lock()

    def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        with self.count:
            self.started += 1
            started = self.started
            self.inside += 1
            self.most = max(self.most, self.inside)
        try:
            if started == self.fail_at:
                raise RuntimeError("the runtime failed this run")
            if self.meeting is not None and started <= self.runs_at_once:
                self.meeting.wait()
            else:
                time.sleep(0.005)  # long enough for a failed run to be seen meanwhile
            return self.session.run(names, feeds)
        finally:
            with self.count:
                self.inside -= 1


def test_the_runs_of_a_list_overlap_and_give_the_vectors_of_runs_one_at_a_time(
        isolated_state: object) -> None:
    session = local.build_session()
    ids = local.token_ids(TEXTS)
    groups = len(ids)  # one run a text
    alone, together = Watched(session, 1), Watched(session, 3, meet=True)
    one_at_a_time = local.encode(ids, onnx_session=alone)
    at_once = local.encode(ids, onnx_session=together)
    assert alone.most == 1 and together.most == 3
    assert alone.started == together.started == groups
    np.testing.assert_array_equal(at_once, one_at_a_time)
    # and a text's vector is the same whichever run, and whichever texts beside it
    np.testing.assert_array_equal(local.encode([ids[5]], onnx_session=session)[0], at_once[5])


def test_a_failing_run_stops_the_others_and_its_error_reaches_the_caller(
        isolated_state: object) -> None:
    ids = local.token_ids(TEXTS)
    failing = Watched(local.build_session(), 3, fail_at=2)
    with pytest.raises(RuntimeError, match="the runtime failed this run"):
        local.encode(ids, onnx_session=failing)
    assert failing.inside == 0  # every helper has ended before encode returns
    assert failing.started < len(ids)


def test_runs_at_once_fill_the_cores_with_runs_of_the_session_s_threads(
        isolated_state: object, monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = local.build_session(), local.build_session(threads=2)
    assert one.get_session_options().intra_op_num_threads == 1  # the shared session's setting
    for cores, expected in [(1, (1, 1)), (2, (2, 1)), (6, (6, 3)), (32, (8, 4))]:
        monkeypatch.setattr(local, "_usable_cores", lambda cores=cores: cores)
        assert (local.runs_at_once(one), local.runs_at_once(two)) == expected
    assert local.OpenVINOSession.runs_at_once == 1  # its runs take turns
