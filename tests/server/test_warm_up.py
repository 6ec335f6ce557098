"""The warm-up thread a conversation starts: it imports what a first turn imports, off the event loop."""

from __future__ import annotations

import importlib.util

import pytest

from phoenix_lsp.server.usecases import warm

#: imported when they are installed (the SDK loads them for its tracing); the server runs without them
OPTIONAL = ("opentelemetry.",)


@pytest.mark.req("REQ-PROTO-062")
@pytest.mark.parametrize("name", warm.FIRST_TURN_MODULES)
def test_every_module_the_warm_up_imports_exists(name: str) -> None:
    """A module renamed or moved would be skipped without a word (an import error is not fatal there) and the
    first turn would import it on the event loop again."""
    if name.startswith(OPTIONAL):
        pytest.skip(f"{name} is optional")
    assert importlib.util.find_spec(name) is not None, f"{name} is gone: update warm.FIRST_TURN_MODULES"
