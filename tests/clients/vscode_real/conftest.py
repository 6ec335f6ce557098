"""Fixtures of the real-VS-Code tests: the cached tools (fail, never skip, when they are missing)."""

from __future__ import annotations

import os

import pytest

from tests.clients.vscode_real.rig import Deps, MissingDeps, load_deps


@pytest.fixture(scope="session")
def vscode_deps() -> Deps:
    """code-server, Node 24, playwright-core and Chromium from the install script's cache.

    Missing tools FAIL the test with the command that installs them, unless PHOENIX_SKIP_CLIENT_TESTS=1.
    """
    if os.environ.get("PHOENIX_SKIP_CLIENT_TESTS") == "1":
        pytest.skip("PHOENIX_SKIP_CLIENT_TESTS=1: the real-VS-Code tests are switched off")
    try:
        return load_deps()
    except MissingDeps as exc:
        pytest.fail(str(exc), pytrace=False)
