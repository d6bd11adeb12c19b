"""The embedder backend registry: every entry has each of its parts, config validates
``embedder.backend`` against it, and each backend's module serves what the entry says."""

from __future__ import annotations

import importlib

import pytest
from kenning import config
from kenning.embedders import BACKENDS, SHARED_KEYS, reading
from kenning.embedding import identity, make_embedder, serving
from kenning.errors import ConfigError

# Settings under which each backend is made without a server asked: dims the model can give.
SETTINGS = {
    "local": {},
    "ollama": {"embedder.url": "http://127.0.0.1:9", "embedder.dims": 256},
    "openai": {"embedder.url": "http://127.0.0.1:9/v1", "embedder.dims": 256},
}


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_backend_has_every_part(name: str) -> None:
    backend = BACKENDS[name]
    assert backend.summary
    module = importlib.import_module(backend.module)
    for part in ("make", "identity", "target"):
        assert callable(getattr(module, part, None)), f"{backend.module} has no {part}"
    unknown = [k for k in (*SHARED_KEYS, *backend.keys) if k not in config.KEYS]
    assert not unknown, f"{name} reads keys config does not know: {unknown}"
    assert config.load({"embedder.backend": name})["embedder.backend"] == name


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_backend_makes_the_embedder_its_identity_names(name: str) -> None:
    settings = config.load({"embedder.backend": name, **SETTINGS[name]})
    assert serving(settings) is importlib.import_module(BACKENDS[name].module)
    embedder = make_embedder(settings)
    try:
        described = embedder.descriptor()  # a server's model has no weights file
        assert identity(settings).descriptor() == {"weights": "", **described}
        model, url = serving(settings).target(settings)
        assert embedder.model == model
        assert (url != "") != BACKENDS[name].in_process
    finally:
        embedder.close()


def test_every_embedder_key_is_read_by_a_backend() -> None:
    keys = [k for k in config.KEYS if k.startswith("embedder.") and k != "embedder.backend"]
    assert [k for k in keys if not reading(k)] == []
    assert config.KEYS["embedder.url"].help == "server URL for ollama or openai"


@pytest.mark.parametrize("given", ["cohere", "locall"])
def test_config_refuses_an_unknown_backend_with_the_known_ones(given: str) -> None:
    with pytest.raises(ConfigError, match="expected local, ollama or openai") as caught:
        config.load({"embedder.backend": given})
    assert given in str(caught.value)
    assert ("did you mean local" in str(caught.value)) == (given == "locall")
