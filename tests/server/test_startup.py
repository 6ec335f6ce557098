"""Start-up loads only what answering ``initialize`` needs (REQ-PROTO-050): the editor waits for it."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from phoenix_lsp.protocol.names import COMMAND_NAMES, METHOD_NAMES
from phoenix_lsp.server import capabilities, commands, served
from phoenix_lsp.server.app import create
from phoenix_lsp.server.features import lifecycle
from tests.server.stdio_lsp import answer, send

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


#: what the sandbox probe that the InitializeResult reports does not need: the seccomp filter's syscall tables and
#: its assembler, and the cgroups (doctor's and the launcher's)
NOT_FOR_THE_PROBE = ("phoenix_lsp.sandbox.seccomp", "phoenix_lsp.sandbox.bpf", "phoenix_lsp.sandbox.cgroups")


@pytest.mark.req("REQ-PROTO-050", "REQ-BASH-009")
def test_the_sandbox_facts_of_the_initialize_result_come_without_the_filter_or_the_cgroups() -> None:
    out = subprocess.run([sys.executable, "-c", ANSWERS], capture_output=True, text=True, timeout=60, check=True)
    initialize = json.loads(out.stdout)[0]
    sandbox = initialize["message"]["result"]["capabilities"]["experimental"]["phoenix"]["sandbox"]
    assert set(sandbox) >= {"available", "missing"}
    loaded = [m for m in initialize["modules"] if m in NOT_FOR_THE_PROBE]
    assert loaded == [], f"loaded before initialize was answered: {loaded}"


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


#: the real server on stdio, with a probe on the garbage collector installed before anything is imported: each full
#: collection (generation 2) is written to stderr with whether the features were loaded when it started
FULL_COLLECTIONS = """
import gc, os, sys

def seen(phase, info):
    if phase == "start" and info["generation"] == 2:
        os.write(2, b"full collection, features loaded: %d\\n" % ("phoenix_lsp.server.served" in sys.modules))

gc.callbacks.append(seen)
from phoenix_lsp.cli import main

sys.exit(main(sys.argv[1:]))
"""




@pytest.mark.slow
@pytest.mark.req("REQ-PROTO-050")
def test_no_full_garbage_collection_runs_before_initialize_is_answered(tmp_path: Path) -> None:
    """A full collection walks every object the process holds (pygls's and lsprotocol's ~50,000 among them):
    none runs while the editor waits for the InitializeResult; they resume when the features load, after it."""
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-startup-test-0000000000"}
    proc = subprocess.Popen([sys.executable, "-c", FULL_COLLECTIONS, "serve", "--data-dir", str(tmp_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        send(proc.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                           "params": {"processId": None, "capabilities": {}}})
        assert "capabilities" in answer(proc.stdout, 1)["result"]
        send(proc.stdin, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
        send(proc.stdin, {"jsonrpc": "2.0", "id": 2, "method": "phoenix/listConversations", "params": {}})
        assert answer(proc.stdout, 2)["result"] == {"conversations": []}  # the features are loaded and serve
        send(proc.stdin, {"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
        answer(proc.stdout, 3)
        send(proc.stdin, {"jsonrpc": "2.0", "method": "exit"})
        assert proc.wait(timeout=60) == 0
        stderr = proc.stderr.read().decode()
    finally:
        proc.kill()
    collections = [line for line in stderr.splitlines() if line.startswith("full collection")]
    before = [line for line in collections if line.endswith(": 0")]
    assert before == [], f"{len(before)} full collection(s) before the features loaded (before initialize was answered)"
    assert collections, "no full collection seen at all: the probe saw nothing (they resume when the features load)"
