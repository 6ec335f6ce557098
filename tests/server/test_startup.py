"""Start-up loads only what answering ``initialize`` needs (REQ-PROTO-050): the editor waits for it."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: rooms that load on first use, after initialize has been answered
LATER = ("phoenix_lsp.core", "phoenix_lsp.store", "phoenix_lsp.llm", "phoenix_lsp.tools", "anthropic", "sqlite3")


@pytest.mark.req("REQ-PROTO-050")
def test_the_server_module_does_not_load_the_core_the_store_or_the_sdk() -> None:
    code = ("import sys, phoenix_lsp.server.app; "
            f"print(sorted(m for m in sys.modules if m.startswith({LATER!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", f"loaded at start-up: {out.stdout.strip()}"
