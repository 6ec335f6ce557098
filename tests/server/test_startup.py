"""Start-up loads only what answering ``initialize`` needs (REQ-PROTO-050): the editor waits for it."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest

from phoenix_lsp.protocol.names import COMMAND_NAMES, METHOD_NAMES
from phoenix_lsp.server import capabilities, commands, served
from phoenix_lsp.server.app import create
from phoenix_lsp.server.features import lifecycle

#: rooms that load on first use, after initialize has been answered
LATER = ("phoenix_lsp.core", "phoenix_lsp.store", "phoenix_lsp.llm", "phoenix_lsp.tools", "anthropic", "sqlite3")


@pytest.mark.req("REQ-PROTO-050")
def test_the_server_module_does_not_load_the_core_the_store_or_the_sdk() -> None:
    code = ("import sys, phoenix_lsp.server.app; "
            f"print(sorted(m for m in sys.modules if m.startswith({LATER!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", f"loaded at start-up: {out.stdout.strip()}"


#: run in a fresh interpreter: a server answers initialize, then a phoenix request that comes before initialized;
#: the modules loaded at the moment each answer is written are recorded
ANSWERS = """
import json, sys
from phoenix_lsp.server.app import create

server = create()
seen = []

def send(data):
    message = json.loads(json.dumps(data, default=server.protocol._serialize_message))
    seen.append({"message": message, "modules": sorted(sys.modules)})

server.protocol._send_data = send
server.protocol.handle_body(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                        "params": {"capabilities": {}}}).encode())
server.protocol.handle_body(b'{"jsonrpc": "2.0", "id": 2, "method": "phoenix/listConversations"}')
print(json.dumps(seen))
"""

#: what is below the boot line: none of it may be loaded when the InitializeResult is written
BELOW = ("phoenix_lsp.server.served", "phoenix_lsp.server.boot", "phoenix_lsp.server.requests",
         "phoenix_lsp.server.plain", "phoenix_lsp.server.commands", "phoenix_lsp.server.features.conversations",
         "phoenix_lsp.server.runtime", "phoenix_lsp.core", "phoenix_lsp.store", "pydantic")


@pytest.mark.req("REQ-PROTO-050", "REQ-PROTO-053", "REQ-PROTO-038")
def test_initialize_is_answered_before_the_features_load_and_announces_what_they_serve() -> None:
    """The InitializeResult announces the commands, the code actions and the save with text of plain clients,
    from the dispatchers alone; the features load after it, here for a request that came before initialized,
    which gets the answer it always had."""
    out = subprocess.run([sys.executable, "-c", ANSWERS], capture_output=True, text=True, timeout=60, check=True)
    initialize, early = json.loads(out.stdout)
    loaded = [m for m in initialize["modules"] if m.startswith(BELOW)]
    assert loaded == [], f"loaded before initialize was answered: {loaded}"
    capabilities = initialize["message"]["result"]["capabilities"]
    assert capabilities["executeCommandProvider"]["commands"] == list(COMMAND_NAMES)
    assert capabilities["codeActionProvider"] == {"codeActionKinds": [""]}
    assert capabilities["textDocumentSync"]["save"] == {"includeText": True}
    assert capabilities["experimental"]["phoenix"]["methods"] == list(METHOD_NAMES)
    assert early["message"]["error"]["data"]["kind"] == "notInitialized"
    assert "phoenix_lsp.server.served" in early["modules"]


@pytest.mark.req("REQ-PROTO-053", "REQ-PROTO-025")
def test_loading_puts_each_handler_in_its_dispatchers_place() -> None:
    """Every dispatcher has its handler (none announced that nothing serves, none served unannounced), and
    once loaded pygls runs the handlers themselves: an async one stays a coroutine, which $/cancelRequest
    stops (REQ-PROTO-025)."""
    server = create()
    registered = server.protocol.fm
    dispatchers = {**registered.features}, {**registered.commands}
    options = {**registered.feature_options}
    lifecycle.load(server)
    assert set(served.FEATURES) == set(capabilities.FEATURES)
    assert set(commands.HANDLERS) == set(capabilities.COMMANDS)
    for name in capabilities.FEATURES:
        assert registered.features[name] is not dispatchers[0][name]
    for name in capabilities.COMMANDS:
        assert registered.commands[name] is not dispatchers[1][name]
    assert registered.feature_options == options
    assert inspect.iscoroutinefunction(registered.features["phoenix/getConversation"])
    assert not inspect.isgeneratorfunction(registered.features["phoenix/sendMessage"])
