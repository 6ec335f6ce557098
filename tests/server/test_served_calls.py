"""A phoenix request served in-process (the plain editor's commands call them so): a synchronous caller of a
request served asynchronously is refused by name, never handed a coroutine nobody awaits (the request unserved)."""

from __future__ import annotations

import pytest

from phoenix_lsp.server import requests, served  # noqa: F401  (served installs every handler in SERVED)


def test_a_synchronous_call_of_an_async_request_is_refused_by_name() -> None:
    assert "phoenix/sendMessage" in requests.SERVED
    with pytest.raises(TypeError, match="phoenix/sendMessage is served asynchronously"):
        requests.call(None, "phoenix/sendMessage", {"conversationId": "c", "text": "hi"})  # type: ignore[arg-type]
