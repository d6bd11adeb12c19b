"""An index is located from settings alone: opening an existing index of a remote model, reading
its status and searching it by words never needs the embedder's server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from embed_server import EmbedServer
from index_helpers import kenning_cli
from kenning import config
from kenning.embedding import identity, make_embedder
from kenning.indexing.indexer import refresh
from kenning.project import kenning_home
from kenning.retrieval import resolve_projects
from kenning.services import index_admin
from kenning.services.search import search
from kenning.store import Index, make_descriptor

pytest_plugins = ["search_fixtures", "index_helpers"]

MODEL = "house-embedder"  # no profile: its dims are learned from the server's first answer


@pytest.fixture
def built(embed_server: EmbedServer, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Index]:
    """A project indexed through the loopback server with a model of unknown dims."""
    from search_fixtures import REPO, write_repo

    root = write_repo(tmp_path / "repo", {k: REPO[k] for k in ("src/http/headers.py",
                                                                 "src/storage/cache.py")})
    embed_server.models = (MODEL,)
    for key, value in embed_server.settings("ollama", MODEL).items():
        monkeypatch.setenv(config.env_name(key), value)
    settings = config.load()
    embedder = make_embedder(settings)
    try:
        refresh(root, settings, embedder=embedder)
        index = Index.open(root, settings, embedder=embedder)
    finally:
        embedder.close()
    return root, index


@pytest.mark.parametrize("dims_remembered", [True, False])
def test_an_index_of_a_remote_model_opens_with_no_request(
        built: tuple[Path, Index], embed_server: EmbedServer, capsys: pytest.CaptureFixture[str],
        dims_remembered: bool) -> None:
    root, made = built
    if not dims_remembered:  # `remove-index --cache` forgets them: the folder still tells
        (kenning_home() / "cache" / "embedder-dims.json").unlink()
    settings = config.load()
    assert identity(settings).dims == (384 if dims_remembered else None)
    embed_server.requests.clear()
    assert Index.open(root, settings).dir == made.dir
    status = index_admin.project_status(root, settings)
    assert (status["state"], status["dims"], status["index_dir"]) == ("ready", 384,
                                                                       str(made.dir))
    assert embed_server.count() == 0  # nothing was asked of the server that is up
    embed_server.stop()
    code, out, err = kenning_cli(capsys, "status", str(root), "--json-output")
    assert code == 0, err
    assert json.loads(out)["chunks_embedded"] == status["chunks"] > 0
    refs = resolve_projects(settings, [root])
    words = search("parse_header", refs, settings=settings, branches=("lexical", "symbol"),
                   refresh=False)
    assert words["results"][0]["symbol"] == "parse_header" and not words["warnings"]
    # a refresh with the server down keeps to this index, not one of words only beside it
    (root / "src/late.py").write_text("def zebra_quokka_marker():\n    return 42\n")
    fresh = search("zebra_quokka_marker", refs, settings=settings)
    assert fresh["results"][0]["symbol"] == "zebra_quokka_marker"
    assert any("Semantic search is off" in w for w in fresh["warnings"])
    assert [p.parent.name for p in (kenning_home() / "indices").glob(f"*/{made.dir.name}")] \
        == [made.dir.parent.name]


def test_the_descriptor_from_settings_is_the_embedders(model: object) -> None:
    """The folder of every existing index stays where it is: the descriptor built from settings
    equals the one built from a live embedder."""
    settings = config.load()
    assert make_descriptor(identity(settings)) == make_descriptor(model)  # type: ignore[arg-type]
    nomic = config.load({"embedder.backend": "ollama", "embedder.model": "nomic-embed-text",
                         "embedder.dims": "256"})
    remote = make_embedder(nomic)
    try:
        assert make_descriptor(identity(nomic)) == make_descriptor(remote)
    finally:
        remote.close()
