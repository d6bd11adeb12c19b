"""The README's example query still returns what the README shows: ``python .ci/readme_query.py``.

Reads the query from the search in the README's install block and the first result from its
``<!-- first-result -->`` block (a line ``path`` ``symbol``), searches this repository (already
indexed by the install block) and fails, saying what to write there, when they differ.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def block(text: str, name: str) -> str:
    found = re.search(rf"<!-- {name} -->\n(.*?)<!-- /{name} -->", text, re.S)
    if found is None:
        sys.exit(f"README.md has no <!-- {name} --> block")
    return found.group(1)


def main() -> None:
    text = README.read_text(encoding="utf-8")
    query = re.search(r'kenning search "([^"]+)" \.', block(text, "install"))
    shown = re.search(r"`([^`]+)` `([^`]+)`", block(text, "first-result"))
    if query is None or shown is None:
        sys.exit("README.md: no `kenning search \"...\" .` in the install block, or no "
                 "`path` `symbol` line in the first-result block")
    done = subprocess.run(
        [sys.executable, "-m", "kenning", "search", query.group(1), ".", "--json-output"],
        cwd=README.parent, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"the README's example search failed:\n{done.stderr}")
    results = json.loads(done.stdout)["results"]
    first = (results[0]["path"], results[0]["symbol"]) if results else None
    if first != shown.groups():
        sys.exit(f"README.md shows `{shown.group(1)}` `{shown.group(2)}` as the first result of "
                 f'"{query.group(1)}", the search gives {first}: update its first-result block')
    print(f'"{query.group(1)}": first result {first[0]} {first[1]}, as the README shows')


if __name__ == "__main__":
    main()
