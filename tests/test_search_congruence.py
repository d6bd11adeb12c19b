"""One rank pipeline over two sources: a corpus indexed here and the same corpus published to the
shared index (milvus-lite, or KENNING_TEST_MILVUS_URI) give the same results, in the same order,
with the same weak flags, for queries of every kind: names, prose, architecture, quoted
phrases, filters, and questions the corpus cannot answer."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from index_helpers import use_home
from kenning import config
from kenning.retrieval import ProjectRef
from kenning.services.search import search
from kenning.shared import publish
from kenning.store import Index
from search_fixtures import REPO, write_repo
from shared_helpers import require_engine

require_engine()
pytest_plugins = ["index_helpers", "shared_helpers"]

TOP = 5
# (query, filters): every kind of query the pipeline treats apart
QUERIES: list[tuple[str, dict[str, str]]] = [
    ("RetryPolicy", {}),  # symbol
    ("parse_header", {}),
    ("LruCache.evict", {}),
    ("exponential backoff with random jitter", {}),  # semantic
    ("hash a password with a random salt", {}),
    ("keep the most recently used entries in memory", {}),
    ("how does the client build and send an http request", {}),  # architecture
    ("where are routes matched to their handlers", {}),
    ('"move_to_end"', {}),  # quoted phrases
    ('constant time "compare_digest" of the password', {}),
    ("retry a failed request", {"path_filter": "src/http"}),  # filtered
    ("check a password", {"language": "python"}),
    ("cache entries", {"kind": "class"}),
    *((query, {}) for query in ("kubernetes autoscaling", "DeletedHandlerName",
                                '"no such words said" anywhere')),
]
# queries the corpus cannot answer: under the floor, a name no chunk says, a phrase none says
ABSENT = {"kubernetes autoscaling", "DeletedHandlerName", '"no such words said" anywhere'}


@dataclass
class Corpus:
    ref: ProjectRef
    home: Path
    uri: str


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, module_shared_uri: str,
           model: Any) -> Corpus:
    """The search fixtures' repository indexed here and published, once for the module."""
    base = tmp_path_factory.mktemp("congruence")
    root = write_repo(base / "corpus", REPO)
    with pytest.MonkeyPatch.context() as patch:
        use_home(patch, base / "home")
        publish(root, _settings("local", module_shared_uri), embedder=model)
        index = Index.open(root, _settings("local", module_shared_uri), embedder=model)
    return Corpus(ProjectRef(index.project_id, root), base / "home", module_shared_uri)


def _settings(backend: str, uri: str) -> config.Settings:
    return config.load({"search.backend": backend, "shared.uri": uri})


def _ranked(corpus: Corpus, backend: str, query: str, filters: dict[str, Any],
            model: Any) -> tuple[list[tuple[str, int, int, bool]], bool]:
    found = search(query, [corpus.ref], settings=_settings(backend, corpus.uri), embedder=model,
                   limit=TOP, shared_projects=[corpus.ref.id], **filters)
    assert not found["warnings"], found["warnings"]
    return ([(r["path"], r["start_line"], r["end_line"], bool(r.get("weak")))
             for r in found["results"]], found["no_strong_match"])


@pytest.mark.parametrize(("query", "filters"), QUERIES, ids=[q for q, _ in QUERIES])
def test_the_local_index_and_the_shared_index_rank_alike(corpus: Corpus, query: str,
                                                         filters: dict[str, str], model: Any,
                                                         monkeypatch: pytest.MonkeyPatch):
    use_home(monkeypatch, corpus.home)
    local = _ranked(corpus, "local", query, filters, model)
    assert local[0] or query in ABSENT, "every answerable query finds something"
    if query in ABSENT:
        assert local[1] and all(weak for *_, weak in local[0])
    assert _ranked(corpus, "shared", query, filters, model) == local
