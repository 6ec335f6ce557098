"""The tracker MCP server as a project's ``.mcp.json`` starts it in the tests (issue 37): the moment it starts,
before anything else, it appends a line to its witness file (``--witness FILE``), then serves as the tracker
(``tracker_server.py``, the rest of its arguments). ``--label TEXT`` is ignored: changing it changes the
server's definition, nothing else. The witness, outside phoenix-lsp, says whether the command ever ran."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

TRACKER = Path(__file__).with_name("tracker_server.py")


def main() -> None:
    argv = sys.argv[1:]
    rest: list[str] = []
    witness: Path | None = None
    while argv:
        flag = argv.pop(0)
        if flag == "--witness":
            witness = Path(argv.pop(0))
        elif flag == "--label":
            argv.pop(0)
        else:
            rest.append(flag)
    if witness is not None:
        with witness.open("a", encoding="utf-8") as out:
            out.write("started\n")
    sys.argv = [str(TRACKER), *rest]
    runpy.run_path(str(TRACKER), run_name="__main__")


if __name__ == "__main__":
    main()
