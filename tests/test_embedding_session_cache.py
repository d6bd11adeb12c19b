"""The optimised ONNX graph of the embedded model, cached under KENNING_HOME between processes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from kenning.embedding import local

TEXTS = ["how are retries handled",
         "def parse_header(line):\n    name, _, value = line.partition(':')\n    return name",
         "class LruCache:\n    '''Evicts the least recently used entries.'''\n" * 3]


def _vectors(session: object) -> np.ndarray:
    return local.encode(local.token_ids(TEXTS), onnx_session=session)


def _agree_with_shared(session: object) -> None:
    """The shared runtime (OpenVINO where it loads, with int8 activations) is close to it."""
    assert (_vectors(session) * _vectors(local.session())).sum(axis=1).min() >= 0.999


def test_first_session_saves_the_optimised_graph_and_later_ones_load_it() -> None:
    cached = local._optimised_path()
    assert not cached.exists()
    built = local.build_session(threads=1)
    assert cached.is_file() and cached.stat().st_size > 0
    assert not list(cached.parent.glob("*.tmp"))  # written under another name, then renamed
    stamp = cached.stat().st_mtime_ns
    loaded = local.build_session(threads=1)
    assert cached.stat().st_mtime_ns == stamp  # loaded, not made again
    np.testing.assert_allclose(_vectors(loaded), _vectors(built), atol=1e-6)
    # and the cached graph gives the vectors of the shared session the tests index with
    _agree_with_shared(loaded)


def test_an_unreadable_cache_file_is_made_again() -> None:
    cached = local._optimised_path()
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(b"not an onnx graph")
    session = local.build_session(threads=1)
    assert cached.stat().st_size > 1000
    _agree_with_shared(session)


def test_an_unwritable_cache_folder_only_costs_time(isolated_state: Path) -> None:
    folder = local._optimised_path().parent
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("a file where the cache folder should be")
    session = local.build_session(threads=1)
    _agree_with_shared(session)
    assert folder.is_file()
