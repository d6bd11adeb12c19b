"""The layers of README.md's Development table import one way: no module imports a package or
top-level module of a higher layer, and no package cycle, lazy imports inside functions and
``TYPE_CHECKING`` imports counted (each is a dependency all the same)."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
PACKAGE = CHECKOUT / "python" / "kenning"
# Imports that still run against the table, each with what keeps it; one that is gone must
# leave this list too (``test_each_known_exception_still_holds``).
KNOWN = {
    ("store", "embedding"): "Index.open makes the descriptor from the configured embedder's "
                            "identity",
    ("store", "chunking"): "the descriptor names the chunker's version (CHUNKER_VERSION)",
}


def layers() -> list[set[str]]:
    """The table's rows, top first: each the units (``cli``, ``config``) it names."""
    text = (CHECKOUT / "README.md").read_text(encoding="utf-8")
    table = text.split("| layer | packages |", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines()[2:] if line.startswith("|")]
    named = [re.findall(r"`([\w.]+/|\w+\.py)", row.split("|")[2]) for row in rows]
    # the Rust core (`rust/`) stands outside the Python package
    return [{name.removesuffix("/").removesuffix(".py") for name in row
             if not (CHECKOUT / name).is_dir()} for row in named]


def unit(module: str) -> str:
    """``kenning.retrieval.api`` -> ``retrieval``; ``kenning`` itself stays ``kenning``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> Iterator[tuple[str, int]]:
    """The kenning modules ``path`` imports, anywhere in it, with their lines."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            # `from kenning import usage_log` imports the module kenning.usage_log
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            if target.split(".")[0] == "kenning" and _exists(target):
                yield target, node.lineno


def _exists(module: str) -> bool:
    path = PACKAGE.parent.joinpath(*module.split("."))
    return path.is_dir() or path.with_suffix(".py").is_file()


@functools.cache  # read once for the tests here
def edges() -> dict[tuple[str, str], list[str]]:
    """Unit -> unit imports, each with the places that make it; the package's face
    (``kenning/__init__.py``, whose names load the library on first use) is no unit."""
    found: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        source = unit(module_name(path))
        for target, line in imported(path):
            pair = (source, unit(target))
            if pair[0] != pair[1] and "kenning" not in pair:
                place = f"{path.relative_to(CHECKOUT)}:{line}"
                places = found.setdefault(pair, [])
                if place not in places:
                    places.append(place)
    return found


def level_of() -> dict[str, int]:
    return {name: level for level, row in enumerate(layers()) for name in row}


def upward(found: dict[tuple[str, str], list[str]]) -> list[str]:
    level = level_of()
    return [f"{a} -> {b}: {', '.join(places)}" for (a, b), places in sorted(found.items())
            if level[b] < level[a] and (a, b) not in KNOWN]


def cycle(found: dict[tuple[str, str], list[str]]) -> list[str]:
    graph: dict[str, set[str]] = {}
    for a, b in found:
        graph.setdefault(a, set()).add(b)
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        return list(exc.args[1])
    return []


def test_every_package_and_module_has_a_layer() -> None:
    named = set().union(*layers())
    units = {unit(module_name(path)) for path in PACKAGE.rglob("*.py")} - {"kenning"}
    assert sorted(units - named) == []
    assert sorted(named - units) == []


def test_no_module_imports_a_higher_layer() -> None:
    assert upward(edges()) == []


def test_no_cycle_among_packages_and_modules() -> None:
    assert cycle(edges()) == []


def test_each_known_exception_still_holds() -> None:
    assert sorted(set(KNOWN) - set(edges())) == []


def test_an_upward_import_and_a_cycle_are_caught() -> None:
    found = edges()
    planted = {**found, ("store", "retrieval"): ["store/x.py:1"]}
    assert upward(planted) == ["store -> retrieval: store/x.py:1"]
    assert cycle(planted)
