#!/usr/bin/env python3
"""Write the core's transition table (phoenix_lsp/core/table.py: ``describe``) into specs/bedrock.md, between
its markers under REQ-CORE-003. tests/test_transition_table.py fails when the two differ.

    .venv/bin/python scripts/transition-table.py          # rewrite the table in the spec
    .venv/bin/python scripts/transition-table.py --check  # exit 1 when the spec's table is not the code's
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from phoenix_lsp.core.table import describe  # noqa: E402

SPEC = ROOT / "specs/bedrock.md"
BEGIN = "<!-- transition table: written by scripts/transition-table.py from phoenix_lsp/core/table.py -->\n"
END = "<!-- end of the transition table -->\n"


def spliced(text: str) -> str:
    """``text`` with the table between the markers replaced by the code's."""
    head, found, rest = text.partition(BEGIN)
    _, found_end, tail = rest.partition(END)
    if not found or not found_end:
        raise SystemExit(f"{SPEC.name} has no transition table markers: add the lines\n{BEGIN}{END}under REQ-CORE-003.")
    return f"{head}{BEGIN}{describe()}{END}{tail}"


def main() -> int:
    text = SPEC.read_text()
    new = spliced(text)
    if "--check" in sys.argv[1:]:
        if new != text:
            print(f"{SPEC.relative_to(ROOT)}: the transition table is not the code's; run scripts/transition-table.py")
            return 1
        return 0
    SPEC.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
