"""End-to-end fixtures: every test here starts the real server as a subprocess."""

from __future__ import annotations

import pytest

from tests.e2e.harness import EDITORS


@pytest.fixture(params=EDITORS)
def editor(request: pytest.FixtureRequest) -> str:
    """The capability set of a real editor (pytest-lsp ships VS Code's and Neovim's)."""
    return str(request.param)
