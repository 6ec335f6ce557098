"""Attacks (REQ-SEC-045): an MCP server's secrets found by one function, on every path out.

The registry gives each server its credential as a plain ``env`` value, named like no credential
(``HOSTILE_TOKEN`` is what the hostile server reads; ``LEAKY_SEAL`` a server that prints it on stderr and exits):
no ``secretsRef``, no credential-like name, nothing the log formatter's patterns catch. Only
``agent/server_secrets.server_secrets`` finds such a value, and every path must use it: the hostile server
answers ``whoami`` with its credential (the ask route's direct call and the agent route's plan), the leaky
server's failed start is logged with its stderr, and ``phoenix-lsp doctor`` prints why it does not work. The
witnesses are outside phoenix-lsp: the requests the fake model server received, the data directory's files (the
store, the log file), doctor's output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import last_seq, session, tool_results, wait_idle
from tests.fake_anthropic import FakeAnthropic, RecordedRequest, Reply, ToolUseBlock
from tests.security.agent_helpers import SERVER, WHOAMI, agent_turn, calls, calls_log, leaks, one_node

pytestmark = [pytest.mark.slow]

SEAL = "tenant-seal-4f9a1c7e2b"  # the hostile server's credential, as a plain env value
LEAKY = "leaky-seal-81d0c3b5a6"  # the leaky server's, printed on its stderr at start
LEAKY_SERVER = "import os, sys; sys.stderr.write('leaky starts for ' + os.environ['LEAKY_SEAL'] + '\\n'); sys.exit(3)"


def env(tmp_path: Path) -> dict[str, str]:
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps({"servers": {
        "hostile": {"command": [sys.executable, str(SERVER)], "args": ["--log", str(calls_log(tmp_path))],
                    "env": {"HOSTILE_TOKEN": SEAL}, "connectTimeoutS": 60},
        "leaky": {"command": [sys.executable, "-c", LEAKY_SERVER], "env": {"LEAKY_SEAL": LEAKY},
                  "connectTimeoutS": 30}}}))
    capabilities = tmp_path / "capabilities.json"
    capabilities.write_text(json.dumps({"allow": ["mcp://hostile/*", "mcp://leaky/*"],
                                        "tools": {WHOAMI: {"kind": "read"}}}))
    return {"PHOENIX_MCP_REGISTRY": str(registry), "PHOENIX_CAPABILITIES": str(capabilities)}


def shown(tmp_path: Path, requests: list[RecordedRequest]) -> list[str]:
    """Where either credential shows: the data directory's files (the store, the log), the model's requests."""
    return leaks(SEAL, tmp_path, requests) + leaks(LEAKY, tmp_path, requests)


@pytest.mark.req("REQ-SEC-045", "REQ-MCP-005")
async def test_the_ask_routes_result_and_the_log_carry_no_plain_env_secret(fake_anthropic: FakeAnthropic,
                                                                           tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=env(tmp_path)) as s:
        cid = await s.new()
        call = ToolUseBlock("mcp__hostile__whoami", {"copies": 1})
        fake_anthropic.enqueue(Reply.tool_reply(call), Reply.text_reply("seen"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "who are you?"})
        await wait_idle(s, cid, mark, timeout=120)
        result = str(tool_results(fake_anthropic.requests[-1])[call.id]["content"])
        assert "[secret]" in result, result[:400]  # the server answered with its credential, scrubbed
    assert [c["tool"] for c in calls(tmp_path)] == ["whoami"]
    log = (tmp_path / "data" / "phoenix-lsp.log").read_text()
    assert "leaky" in log and "stderr" in log, "the leaky server's failed start was not logged"
    assert shown(tmp_path, fake_anthropic.requests) == []


@pytest.mark.req("REQ-SEC-045", "REQ-AGENT-016")
async def test_the_agent_routes_result_carries_no_plain_env_secret(fake_anthropic: FakeAnthropic,
                                                                   tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=env(tmp_path)) as s:
        cid = await s.new()
        run = one_node("w = hostile_whoami(copies=1)\n{'w': w}", [WHOAMI], ["w"])
        requests = await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("ok"))
        text = str(tool_results(requests[-1])[run.id]["content"])
        assert "credential" in text, text[:400]  # the plan ran and its result reached the model
    assert any(c["tool"] == "whoami" for c in calls(tmp_path))
    assert shown(tmp_path, fake_anthropic.requests) == []


@pytest.mark.req("REQ-SEC-045")
def test_doctors_output_carries_no_plain_env_secret(tmp_path: Path) -> None:
    run_env = {**os.environ, **env(tmp_path), "PHOENIX_LSP_DATA_DIR": str(tmp_path / "data"),
               "PHOENIX_CONFIG_DIR": str(tmp_path / "c"), "OLLAMA_HOST": "127.0.0.1:1"}
    out = subprocess.run([sys.executable, "-m", "phoenix_lsp", "doctor"], env=run_env, capture_output=True,
                         text=True, timeout=180, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    text = out.stdout + out.stderr
    assert "MCP server leaky" in text and "NOT WORKING" in text and "stderr" in text, text[-2000:]
    assert "MCP server hostile" in text, text[-2000:]
    assert SEAL not in text and LEAKY not in text, "doctor printed an MCP server's credential"
