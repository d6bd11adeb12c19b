"""Write the Claude Code marketplace and its plugins (``.claude-plugin/``, ``plugins/``) from
kenning's agent templates, the one source they share with ``kenning setup-agent``.

    python .ci/write_plugins.py          # write them; prints what changed
    python .ci/write_plugins.py --check  # exit 1 when the committed files differ

``tests/test_plugin.py`` fails while the committed files differ from what this writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kenning.agents import plugin

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        stale = [path for path, text in plugin.files().items()
                 if not (ROOT / path).is_file() or (ROOT / path).read_text() != text]
        for path in stale:
            print(f"{path} differs from what .ci/write_plugins.py writes", file=sys.stderr)
        return 1 if stale else 0
    for path in plugin.write(ROOT):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
