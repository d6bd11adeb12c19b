"""The model embeds a query without the project's own name: it is in every question about the
project and names no place in it."""

from __future__ import annotations

from pathlib import Path

from embed_server import EmbedServer
from index_helpers import git, make_repo
from kenning import config
from kenning.project import names, project_id
from kenning.retrieval import ProjectRef
from kenning.retrieval.query import analyze
from kenning.services.search import search

FILES = {
    "retry.py": '"""Retries for failed requests."""\n\n\ndef call_with_retries(send, attempts):\n'
                '    for _ in range(attempts):\n        response = send()\n'
                '        if response.ok:\n            return response\n    return response\n',
    "README.md": "# widgetkit\n\nwidgetkit makes widgets. widgetkit is fast.\n",
}


def test_the_name_is_left_out_of_the_embedded_text_only() -> None:
    query = analyze("how does WidgetKit retry failed requests", {"widgetkit"})
    assert query.embedded == "how does retry failed requests"
    assert query.text == "how does WidgetKit retry failed requests"
    assert {"widgetkit", "retry"} <= set(query.terms)  # BM25 weighs a common word little


def test_names_compare_without_case_separators_quotes_or_a_possessive() -> None:
    for typed in ("nvim-lspconfig", "NvimLspconfig", "`nvim_lspconfig`", "nvim-lspconfig's"):
        query = analyze(f"how does {typed} start a language server", {"nvim-lspconfig"})
        assert query.embedded == "how does start a language server", typed


def test_a_short_query_keeps_the_name() -> None:
    assert analyze("widgetkit retry policy", {"widgetkit"}).embedded == "widgetkit retry policy"
    assert analyze("widgetkit", {"widgetkit"}).identifiers == ("widgetkit",)


def test_a_project_is_named_by_its_folder_and_its_remote(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "wk", FILES)
    assert names(repo, project_id(repo)) == frozenset()  # two letters: too short to leave out
    repo = make_repo(tmp_path / "widgets", FILES)
    git(repo, "remote", "add", "origin", "git@github.com:Acme/Widget-Kit.git")
    assert names(repo, project_id(repo)) == {"widgets", "widget-kit"}
    assert names(repo, "shop") == {"shop"}  # a configured id is the name the user gave it


def test_a_generic_folder_name_is_no_project_name(tmp_path: Path) -> None:
    for folder in ("src", "api"):
        repo = make_repo(tmp_path / folder, FILES)
        assert names(repo, project_id(repo)) == frozenset()


def _ref(root: Path) -> ProjectRef:
    return ProjectRef(project_id(root), root)  # as for a project that is not configured


def _embedded_texts(server: EmbedServer) -> list[str]:
    return [text for body in server.bodies("/v1/embeddings") for text in body["input"]]


def test_the_embedder_is_asked_for_the_query_without_the_projects_name(
        embed_server: EmbedServer, tmp_path: Path) -> None:
    """Through a real OpenAI-compatible server: the text embedded for the query has no
    project name; the result says the query as typed."""
    settings = config.load(embed_server.settings("openai"))
    repo = make_repo(tmp_path / "widgetkit", FILES)
    typed = "how does widgetkit retry failed requests"
    search("anything at all here", [_ref(repo)], settings=settings)  # indexes it
    embed_server.reset()
    found = search(typed, [_ref(repo)], settings=settings)
    assert found["query"] == typed
    assert found["results"][0]["path"] == "retry.py"
    assert _embedded_texts(embed_server) == ["how does retry failed requests"]


def test_a_search_of_projects_with_different_names_keeps_them(
        embed_server: EmbedServer, tmp_path: Path) -> None:
    settings = config.load(embed_server.settings("openai"))
    one = make_repo(tmp_path / "widgetkit", FILES)
    two = make_repo(tmp_path / "gadgetry", FILES)
    refs = [_ref(one), _ref(two)]
    search("anything at all here", refs, settings=settings)
    embed_server.reset()
    search("how does widgetkit retry failed requests", refs, settings=settings)
    assert _embedded_texts(embed_server) == ["how does widgetkit retry failed requests"]
