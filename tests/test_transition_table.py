"""specs/bedrock.md shows the core's transition table as the code declares it (REQ-CORE-003).

Outside tests/core: mutation testing runs tests/core in a copy of the package that holds neither specs/ nor
scripts/.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from phoenix_lsp.core.table import describe

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.req("REQ-CORE-003")
def test_the_spec_shows_the_table_the_code_declares() -> None:
    """specs/bedrock.md shows the table under REQ-CORE-003; scripts/transition-table.py writes it."""
    spec = importlib.util.spec_from_file_location("transition_table", ROOT / "scripts/transition-table.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    text = (ROOT / "specs/bedrock.md").read_text()
    assert f"{script.BEGIN}{describe()}{script.END}" in text, (
        "specs/bedrock.md does not show the transition table of phoenix_lsp/core/table.py: run "
        "scripts/transition-table.py")
