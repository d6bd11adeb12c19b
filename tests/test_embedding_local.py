"""The embedded default model: all-MiniLM-L6-v2 int8 ONNX, run in-process."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from kenning import config
from kenning.embedding import document_text, local, make_embedder
from kenning.embedding.local import LocalEmbedder
from kenning.errors import ConfigError, EmbedderUnavailable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / ".ci"))
import smoke  # noqa: E402 - the reference check every wheel's smoke run makes

PARSE = "def parse_config(path):\n    with open(path) as fh:\n        return json.load(fh)\n"
RETRY = "for attempt in range(5):\n    try:\n        return send(request)\n    except IOError:\n" \
        "        time.sleep(2 ** attempt)\n"
PAINT = "canvas.fill_rect(x, y, width, height, color=RED)\n"
REFERENCE = Path(__file__).parent / "data" / "minilm_reference.json"


@pytest.fixture
def embedder(local_model: None) -> LocalEmbedder:
    made = make_embedder(config.load())
    assert isinstance(made, LocalEmbedder)
    return made


def test_default_backend_is_the_local_model(embedder: LocalEmbedder) -> None:
    assert embedder.descriptor() == {"backend": "local", "model": "all-MiniLM-L6-v2",
                                     "dims": 384, "document_prefix": "",
                                     "weights": local.MODEL_SHA256[:16]}
    assert embedder.needs_centering is False
    embedder.check()


def test_vectors_are_normalised_float32_and_deterministic(embedder: LocalEmbedder) -> None:
    texts = [PARSE, RETRY, PAINT, "x"]
    first = embedder.embed_documents(texts)
    again = embedder.embed_documents(list(reversed(texts)))[::-1]
    assert first.dtype == np.float32 and first.shape == (4, 384)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(first, again, atol=1e-5)
    assert embedder.embed_documents([]).shape == (0, 384)


def test_padding_in_a_batch_does_not_change_a_vector(embedder: LocalEmbedder) -> None:
    alone = embedder.embed_documents(["short text"])[0]
    batched = embedder.embed_documents(["short text", RETRY * 4, PARSE])[0]
    np.testing.assert_array_equal(alone, batched)  # bit for bit


def test_related_code_is_nearer_than_unrelated_code(embedder: LocalEmbedder) -> None:
    docs = embedder.embed_documents([document_text("cfg.py", PARSE),
                                     document_text("net.py", RETRY),
                                     document_text("ui.py", PAINT)])
    scores = docs @ embedder.embed_query("retry with exponential backoff")
    assert scores.argmax() == 1
    scores = docs @ embedder.embed_query("load settings from a json file")
    assert scores.argmax() == 0


def test_vectors_hold_to_the_fp32_reference_on_this_cpu(local_model: None) -> None:
    """The shipped int8 file against the fp32 export of the same weights
    (``training/reference_vectors.py``): the quantisation's bar, on this CPU's int8 kernels."""
    rows, cosines = smoke.reference_cosines(REFERENCE)
    assert sum(r["kind"] == "document" for r in rows) >= 30 and cosines.min() >= 0.99


def test_query_and_document_prefixes(local_model: None) -> None:
    plain = make_embedder(config.load())
    np.testing.assert_allclose(plain.embed_query(PARSE), plain.embed_documents([PARSE])[0],
                               atol=1e-5)  # MiniLM uses no prefixes
    custom = make_embedder(config.load({"embedder.query_prefix": "query: ",
                                        "embedder.document_prefix": "passage: "}))
    np.testing.assert_allclose(custom.embed_query("x"), plain.embed_documents(["query: x"])[0],
                               atol=1e-5)
    np.testing.assert_allclose(custom.embed_documents(["y"])[0],
                               plain.embed_documents(["passage: y"])[0], atol=1e-5)
    assert custom.max_tokens == plain.max_tokens - custom.count_tokens("passage: ")


def test_token_budget_is_exact_and_leaves_room_for_the_path_header(
        embedder: LocalEmbedder) -> None:
    assert embedder.count_tokens("") == 0
    assert embedder.count_tokens("hello world") == 2
    assert embedder.count_tokens("tokenization") == 2  # word pieces: token ##ization
    header = document_text("src/kenning/embedding/some_long_module_name.py", "")
    assert embedder.max_tokens + embedder.count_tokens(header) + 2 <= local.MAX_SEQUENCE


def test_text_beyond_256_word_pieces_is_cut_like_sentence_transformers(
        embedder: LocalEmbedder) -> None:
    words = [f"word{i}" for i in range(400)]
    long_text = " ".join(words)
    assert embedder.count_tokens(long_text) > local.MAX_SEQUENCE
    ids = local.token_ids([long_text])[0]
    assert len(ids) == local.MAX_SEQUENCE and ids[0] == 101 and ids[-1] == 102
    # Appending text after the cut changes nothing.
    np.testing.assert_allclose(embedder.embed_documents([long_text])[0],
                               embedder.embed_documents([long_text + " tail " * 50])[0],
                               atol=1e-5)


def test_local_backend_rejects_other_models_and_truncation() -> None:
    with pytest.raises(ConfigError, match="runs only all-MiniLM-L6-v2"):
        make_embedder(config.load({"embedder.model": "nomic-embed-text"}))
    with pytest.raises(ConfigError, match="not a Matryoshka model"):
        make_embedder(config.load({"embedder.dims": "128"}))
    assert make_embedder(config.load({"embedder.model": "all-minilm"})).dims == 384


def test_model_checksum_is_verified_and_remembered(isolated_state: Path) -> None:
    path = local.model_path()
    local.verify_model(path)
    stamp = json.loads((isolated_state / "data" / "cache" / "model-verified.json").read_text())
    assert stamp == {"path": str(path), "size": path.stat().st_size,
                     "mtime_ns": path.stat().st_mtime_ns, "sha256": local.MODEL_SHA256}


def test_a_changed_model_file_is_hashed_again_and_refused(isolated_state: Path) -> None:
    copy = isolated_state / "model.onnx"
    shutil.copyfile(local.model_path(), copy)
    local.verify_model(copy)  # intact: stamped
    mtime = copy.stat().st_mtime_ns
    with copy.open("r+b") as fh:
        fh.seek(1000)
        fh.write(b"\x00" * 16)
    os.utime(copy, ns=(mtime + 10**9, mtime + 10**9))  # same size, newer mtime
    with pytest.raises(EmbedderUnavailable, match="corrupt") as caught:
        local.verify_model(copy)
    assert "force-reinstall" in (caught.value.hint or "")


def test_each_text_runs_alone_at_its_own_length(isolated_state: Path) -> None:
    # no padding and no other text in a run: nothing but its own word pieces reaches a vector
    lengths = [300, 5, 40, 6, 120, 5]
    ids = [[101, *[1000 + n] * (n - 2), 102] for n in lengths]
    runtime = local.build_session()
    shapes: list[tuple[int, ...]] = []

    class Seen:
        runs_at_once = 1

        def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
            shapes.append(feeds["input_ids"].shape)
            assert feeds["attention_mask"].all()
            return runtime.run(names, feeds)

    local.encode(ids, onnx_session=Seen())
    assert shapes == [(1, n) for n in sorted(lengths, reverse=True)]  # the longest first


def test_model_files_a_reinstall_removed_are_one_sentence(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`pip install` replaces the package under a running kenning: the tokenizer or the model
    read then is gone, which a dry run (it counts tokens) and the runtime say in one sentence."""
    from index_helpers import kenning_cli

    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    monkeypatch.setattr(local, "TOKENIZER_PATH", tmp_path / "gone" / "tokenizer.json")
    local._tokenizer_cached.cache_clear()
    try:
        code, _, err = kenning_cli(capsys, "index", str(tmp_path), "--dry-run")
    finally:
        monkeypatch.undo()
        local._tokenizer_cached.cache_clear()
    assert code == 3, err
    assert f"Cannot read the embedded model's file {tmp_path}/gone/tokenizer.json" in err
    assert "run the command again" in err
    copy = tmp_path / "model.onnx"
    shutil.copyfile(local.model_path(), copy)
    monkeypatch.setattr(local, "MODEL_PATH", copy)
    monkeypatch.setattr(local, "_optimised_path", lambda: tmp_path / "no" / "cache.onnx")
    monkeypatch.setattr(local, "verify_model", lambda path: copy.unlink())  # gone just after
    with pytest.raises(EmbedderUnavailable, match="Cannot read the embedded model's file"):
        local.build_session()
