"""`kenning search QUERY [PATH]`: ranked chunks for people (rich) or machines (JSON)."""

from __future__ import annotations

import io
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click


def result_options(command: Callable[..., None]) -> Callable[..., None]:
    """The filters, limit and output options that `kenning search` and `kenning related`
    share."""
    options = [
        click.option("-p", "--path-filter", help="Only files under this path or matching this "
                     "glob (relative to the project root)."),
        click.option("--lang", "language", help="Only this language (python, rust, markdown, "
                     "...; extensions such as py, rs, ts work too)."),
        click.option("--kind", help="code (the implementation), docs, test, example, generated, "
                     "completion, vendored, fixture, data, or a declaration kind (function, "
                     "class, method, ...)."),
        click.option("-n", "--limit", type=click.IntRange(min=1), default=None,
                     help="How many results (default: search.limit, 10; at most 200)."),
        click.option("--project", "projects", multiple=True,
                     help="A project root or configured id; repeat to search several at once."),
        click.option("--no-refresh", is_flag=True,
                     help="Search the last snapshot without refreshing."),
        click.option("--max-snippet-lines", type=click.IntRange(min=0), default=12,
                     show_default=True, help="Lines of each snippet to show (0: none)."),
        click.option("--json-output", is_flag=True,
                     help="Print the result JSON for machines."),
        click.option("--calls", is_flag=True, help="Show the callers and callees of each "
                     "result (by name, within the project)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.command()
@click.argument("query")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@result_options
@click.option("--budget-tokens", type=int, default=None,
              help="Pack the results as the line ranges that best cover the query within about "
              "N tokens (3 characters each; at most 100,000): the heads of the top "
              "declarations, then their best windows, no line twice.")
@click.option("--backend", type=click.Choice(["local", "shared", "both"]),
              help="Where to search (default: search.backend): the indexes here, the shared "
              "index, or this checkout here and every other project from the shared index.")
@click.option("--force-root", is_flag=True,
              help="Index even a home folder, / or a large folder without a project marker.")
def search(query: str, path: Path | None, path_filter: str | None, language: str | None,
           kind: str | None, limit: int | None, projects: tuple[str, ...], no_refresh: bool,
           max_snippet_lines: int, json_output: bool, calls: bool, budget_tokens: int | None,
           backend: str | None, force_root: bool) -> None:
    """Find code by meaning, words or symbol.

    `kenning search "how are retries handled"`, `kenning search parse_header`. The index is
    refreshed first. In a project never indexed, the search answers as soon as its files are
    chunked (words and symbols) and a background `kenning index` computes the vectors; later
    searches use them as they arrive.
    """
    from kenning import config
    from kenning.embedding import borrowed
    from kenning.retrieval import resolve_projects
    from kenning.services.search import execute, request

    settings = config.load({"search.backend": backend,
                            "index.force_root": "true" if force_root else None})
    asked = request(query, limit or settings["search.limit"], path_filter, language, kind,
                    budget_tokens)
    # with the shared backend, --project names published projects, which need no checkout here
    shared_ids = list(projects) if settings["search.backend"] == "shared" and projects else None
    targets: list[str | Path] = [*([] if shared_ids else projects), *([path] if path else [])]
    refs = resolve_projects(settings, targets or None)
    # run from a subfolder of the project, as ripgrep is: its results first, paths from here
    here = Path.cwd().resolve()
    inside = next((ref.root for ref in refs if here.is_relative_to(ref.root)), None)
    progress = _Progress() if sys.stderr.isatty() else None
    several = len(refs) > 1 or settings["search.backend"] != "local"
    relative_to = (inside, here) if inside is not None and not several else None
    frame = JsonFrame() if json_output else HumanFrame(several, relative_to)
    with borrowed(settings, service=True) as embedder:
        loading = _warm_up(embedder, settings)
        try:
            result = execute(asked, refs, settings=settings, refresh=not no_refresh,
                             progress=progress, shared_projects=shared_ids,
                             prefer=here if inside is not None and not targets else None,
                             calls=calls, budget_frame=frame, embedder=embedder)
        finally:
            if progress is not None:
                progress.clear()
            if loading is not None:  # never leave onnxruntime initialising at the exit
                loading.join()
    for root in result["vectors_deferred"]:
        index_in_background(Path(root))
    if json_output:
        click.echo(json.dumps(result, ensure_ascii=False))
    else:
        # a budget's ranges are shown whole: the budget chose them
        print_results(result, max_snippet_lines if budget_tokens is None else sys.maxsize,
                      several=several, query=query, relative_to=relative_to)


class JsonFrame:
    """What ``--json-output`` prints, for a token budget (``retrieval.budget.Frame``)."""

    def envelope(self, result: dict[str, Any]) -> str:
        return json.dumps({**result, "results": []}, ensure_ascii=False) + "\n"

    def item(self, hit: dict[str, Any]) -> str:
        shown = {key: value for key, value in hit.items() if not key.startswith("_")}
        return json.dumps(shown, ensure_ascii=False) + ", "


class HumanFrame:
    """What the results for people print (stdout and stderr alike), for a token budget."""

    def __init__(self, several: bool, relative_to: tuple[Path, Path] | None) -> None:
        self.several, self.relative_to = several, relative_to

    def envelope(self, result: dict[str, Any]) -> str:
        # as many results, weak if any may be: the longest head it may print
        hits = [{"weak": any(hit.get("weak") for hit in result["results"])}]
        hits *= max(1, len(result["results"]))
        return _captured(lambda err: _print_head(err, {**result, "results": hits}))

    def item(self, hit: dict[str, Any]) -> str:
        return _captured(lambda out: _print_hit(out, hit, sys.maxsize, None, self.several,
                                                self.relative_to))


def _captured(draw: Callable[[Any], None]) -> str:
    """The text ``draw`` prints on a console like the one of a pipe."""
    from rich.console import Console

    from kenning.cli.output import UNBOUNDED_WIDTH

    buffer = io.StringIO()
    draw(Console(file=buffer, highlight=False, soft_wrap=True, width=UNBOUNDED_WIDTH,
                 color_system=None))
    return buffer.getvalue()


class _Progress:
    """One self-erasing line on stderr while a search waits for its refresh; silent when the
    refresh is quick (an unchanged project)."""

    DELAY = 0.3  # seconds before the line appears

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.shown = False

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "scan":
            text = f"{event['files']} files to check"
        elif kind == "chunking":
            text = f"{event['done']}/{event['total']} files read, {event['chunks']} chunks"
        elif kind == "committed":
            text = f"{event['chunks']} chunks searchable"
        elif kind == "embedding":
            text = f"{event['done']}/{event['total']} vectors"
        else:
            return
        if self.shown or time.monotonic() - self.started >= self.DELAY:
            sys.stderr.write(f"\r\x1b[KIndexing: {text}")
            sys.stderr.flush()
            self.shown = True

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self.shown = False


def index_in_background(root: Path, *, words_only: bool = False, silent: bool = False) -> None:
    """Leave the vectors of a first index to a detached `kenning index` (``words_only``: its
    words and symbols alone): the search has answered from the words and symbols already, and
    the next searches use the vectors as they arrive. The child gets its own session and no
    terminal, so it outlives this process. ``silent``: the caller says what it started."""
    from kenning.detached import spawn_detached

    spawn_detached([sys.executable, "-m", "kenning", "index", str(root), "--quiet",
                    *(["--words-only"] if words_only else [])])
    if silent:
        return
    click.echo(f"The vectors of {root} are being computed in the background; "
               "`kenning status` shows how far it got.", err=True)


def _warm_up(embedder: Any, settings: Any) -> threading.Thread | None:
    """Start loading the embedded model while this process refreshes, in its service (started
    now when there is none) or here: the model's session is the slowest part of a search in a
    fresh process (the search waits for it, not again)."""
    from kenning.embedding.local import LocalEmbedder
    from kenning.embedding.service_client import ServiceEmbedder

    if isinstance(embedder, ServiceEmbedder):
        def load() -> None:
            from kenning.embedding import deadline

            with deadline.within(settings["search.timeout"]):
                embedder.start()
    elif isinstance(embedder, LocalEmbedder):
        def load() -> None:
            from kenning.embedding import local

            try:
                local.session(embedder.runtime)
                local.tokenizer()
            except Exception:  # noqa: BLE001, S110 - the search reports it when it needs it
                pass
    else:
        return None
    thread = threading.Thread(target=load, name="kenning-model", daemon=True)
    thread.start()
    return thread


# How the query's words stand out in symbols and snippets on a colour terminal
QUERY_WORD_STYLE = "bold red"


def query_words(query: str) -> re.Pattern[str] | None:
    """The query's meaningful words (identifiers whole, other words of three letters or more,
    no stop words) as one case-insensitive pattern, longest first; None when it has none."""
    from kenning.retrieval.query import STOPWORDS

    words = {w for w in re.findall(r"[\w$]+(?:(?:\.|::|->)[\w$]+)*", query)
             if len(w) > 2 and w.lower() not in STOPWORDS}
    if not words:
        return None
    return re.compile("|".join(map(re.escape, sorted(words, key=lambda w: (-len(w), w)))),
                      re.IGNORECASE)


def print_results(result: dict[str, Any], max_lines: int, *, several: bool, query: str = "",
           relative_to: tuple[Path, Path] | None = None) -> None:
    """Results for people. Repository text (paths, symbols, snippets, warnings quoting them)
    is shown as plain text, never read as rich markup, with control characters spelled out.
    ``relative_to`` (the project's root, the working directory inside it) shows paths from the
    working directory, as ripgrep does. With colour on, the query's words stand out, as
    ripgrep's matches do."""

    from kenning.cli.output import console

    out, err = console(), console(stderr=True)
    words = query_words(query) if out.color_system is not None and not out.no_color else None
    _print_head(err, result)
    for hit in result["results"]:
        _print_hit(out, hit, max_lines, words, several, relative_to)


def _print_head(err: Any, result: dict[str, Any]) -> None:
    """The lines on stderr before the results: a weak answer said first, warnings, the
    budget, an empty answer."""
    from rich.text import Text

    from kenning.display import visible
    from kenning.retrieval.confidence import WEAK_LINE, no_strong_match_line

    if result["results"] and all(hit.get("weak") for hit in result["results"]):
        err.print(Text(visible(no_strong_match_line(json.dumps(result["query"])))
                       if "query" in result else WEAK_LINE, "yellow"))
    for warning in result["warnings"]:
        err.print(Text.assemble(("Warning:", "yellow"), " ", visible(warning, multiline=True)))
    if result.get("budget"):
        from kenning.retrieval.budget import described

        err.print(Text(described(result["budget"], len(result["results"])), "dim"))
    if not result["results"]:
        err.print("No relevant results.")


def _print_hit(out: Any, hit: dict[str, Any], max_lines: int, words: re.Pattern[str] | None,
               several: bool, relative_to: tuple[Path, Path] | None) -> None:
    from rich.text import Text

    from kenning.display import visible

    where = f"{hit['project']}/" if several else ""
    path = hit["path"]
    if relative_to is not None:
        path = os.path.relpath(relative_to[0] / path, relative_to[1])
    line = Text.assemble((visible(where + path), "bold cyan"), ":",
                         (f"{hit['start_line']}-{hit['end_line']}", "green"))
    if hit["symbol"]:
        symbol = Text(visible(hit["symbol"]), "magenta")
        if words is not None:
            symbol.highlight_regex(words, QUERY_WORD_STYLE)
        line.append_text(Text.assemble("  ", symbol))
    shown = [hit["kind"], *([hit["chunk_class"]] if hit["chunk_class"] != "code" else [])]
    line.append(f"  {' · '.join(shown)} · {hit['score']:.4f}", "dim")
    if hit.get("confidence") is not None:
        line.append(f" · confidence {hit['confidence']:.2f}", "dim")
    if hit["stale"]:
        line.append("  (changed since indexed)", "red")
    if hit.get("weak"):
        line.append("  (weak match)", "yellow")
    out.print(line)
    _print_links(out, hit, where, relative_to)
    if max_lines:
        _print_snippet(out, hit, max_lines, words)
    out.print()


LINK_LABELS = {"callers": "called by", "callees": "calls"}


def _print_links(out: Any, hit: dict[str, Any], where: str,
                 relative_to: tuple[Path, Path] | None) -> None:
    """A line each for the callers and callees a result carries (``--calls``)."""
    from rich.text import Text

    from kenning.display import visible

    for key, label in LINK_LABELS.items():
        if key not in hit:
            continue
        line = Text(f"  {label}: ", "dim")
        if not hit[key]:
            line.append("none found", "dim")
        for i, link in enumerate(hit[key]):
            path = link["path"]
            if relative_to is not None:
                path = os.path.relpath(relative_to[0] / path, relative_to[1])
            line.append_text(Text.assemble(
                *([(", ", "dim")] if i else []), (visible(link["symbol"] or "?"), "magenta"),
                " ", (f"{visible(where + path)}:{link['start_line']}-{link['end_line']}",
                      "cyan")))
        out.print(line)


def _lexer(path: str, code: str) -> str:
    """Pygments' lexer for a file of this name (its text chooses between several). Rich's
    ``Syntax.guess_lexer`` loads every lexer pygments has to choose: most of the CPU time of
    a search in a fresh process, once the model ran elsewhere."""
    from pygments.lexers import find_lexer_class_for_filename

    found = find_lexer_class_for_filename(path, code)
    return found.aliases[0] if found is not None and found.aliases else "text"


def _print_snippet(out: Any, hit: dict[str, Any], max_lines: int,
                   words: re.Pattern[str] | None = None) -> None:
    """The snippet with line numbers: its runs of code (a declaration's signature, its window)
    numbered from their own first lines, between the markers of the lines left out; past
    ``max_lines`` lines of code, one marker for the rest. ``words`` stand out in the code."""
    from rich.syntax import Syntax
    from rich.text import Text

    from kenning.display import visible
    from kenning.retrieval.snippets import MARKER, left_out

    parts: list[tuple[int, list[str]] | str] = []  # (first line, code lines) or a marker
    number = hit["start_line"]
    for line in hit["content"].splitlines():
        marker = MARKER.fullmatch(line)
        if marker is not None:
            parts.append(line)
            number = int(marker.group(3)) + 1
        else:
            if not parts or isinstance(parts[-1], str):
                parts.append((number, []))
            parts[-1][1].append(line)  # type: ignore[union-attr]
            number += 1
    left = max_lines
    for part in parts:
        first = (int(MARKER.fullmatch(part).group(2))  # type: ignore[union-attr]
                 if isinstance(part, str) else part[0])
        if left <= 0:  # one marker for all that is left
            out.print(Text(f"  {left_out(first, hit['end_line'])}", "dim"))
            return
        if isinstance(part, str):
            out.print(Text(f"  {part}", "dim"))
            continue
        code = part[1]
        shown = visible("\n".join(code[:left]), multiline=True)
        # off a terminal no style is shown: lexing would only cost time (a pipe, an agent)
        lexer = "text" if out.color_system is None else _lexer(hit["path"], shown)
        syntax = Syntax(shown, lexer, line_numbers=True,
                        start_line=first, word_wrap=False, theme="ansi_dark",
                        background_color="default")
        if words is not None:
            for number, text in enumerate(shown.splitlines(), start=1):
                for found in words.finditer(text):
                    syntax.stylize_range(QUERY_WORD_STYLE, (number, found.start()),
                                         (number, found.end()))
        out.print(syntax)
        if len(code) > left:  # one marker for the lines cut here and all that follow
            out.print(Text(f"  {left_out(first + left, hit['end_line'])}", "dim"))
            return
        left -= len(code)
