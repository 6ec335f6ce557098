"""How long a turn waits for the MCP tools (REQ-MCP-002): the gathering's own bound, or a server's own
``connectTimeoutS`` when that is longer. A turn on a loaded machine left out a server given 60 s to start that
took 24 s, at the gathering's 20 s (tests/security/test_mcp_search_attacks.py, whole suite, load 20)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from acp.schema import McpServerStdio

from phoenix_lsp.agent import mcp_sources
from phoenix_lsp.agent.agent_config import McpRegistry
from phoenix_lsp.agent.mcp_listings import ToolInfo
from phoenix_lsp.server.acp import mcp as acp_mcp
from phoenix_lsp.tools import mcp_direct

#: the gathering's bound in this test (20 s in the product), and how long the server takes to start: longer
#: than that bound, well within its own connectTimeoutS
BOUND_S = 0.2
START_S = 4 * BOUND_S


class SlowRoute:
    """An agent route whose one MCP server takes ``START_S`` to start and then lists one tool."""

    def __init__(self, connect_timeout_s: float | None) -> None:
        entry: dict[str, Any] = {"command": ["tracker"]}
        if connect_timeout_s is not None:
            entry["connectTimeoutS"] = connect_timeout_s
        self.settings = SimpleNamespace(registry=McpRegistry.model_validate({"servers": {"tracker": entry}}))
        tool = ToolInfo(uri="mcp://tracker/list_issues", server="tracker", name="list_issues", description="Lists.",
                        kind="read", kind_source="manifest")
        self.hub = SimpleNamespace(catalogue=lambda: [tool], schema=lambda uri: {"type": "object"}, health=lambda: [])
        self.gate = SimpleNamespace(check_tool=lambda uri: None)
        self.artifacts = None
        self.started = threading.Event()

    def redact(self, text: str) -> str:
        return text

    def start(self) -> None:
        time.sleep(START_S)  # the server's process starting (blocking: the gathering runs off the event loop)
        self.started.set()


@pytest.mark.req("REQ-MCP-002")
async def test_a_server_given_longer_to_connect_than_the_gathering_waits_is_waited_for(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_direct, "GATHER_TIMEOUT_S", BOUND_S)
    direct = mcp_direct.McpDirect(SlowRoute(connect_timeout_s=60))
    found = await direct.definitions()
    assert [d["name"] for d in found] == ["mcp__tracker__list_issues"]


@pytest.mark.req("REQ-MCP-002")
async def test_without_a_longer_connect_timeout_a_slow_server_is_left_out_of_the_turn(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_direct, "GATHER_TIMEOUT_S", BOUND_S)
    route = SlowRoute(connect_timeout_s=None)
    assert await mcp_direct.McpDirect(route).definitions() == []  # the turn goes on without it
    assert route.started.wait(30)  # (its start ends before the test does)


@pytest.mark.req("REQ-MCP-002")
def test_servers_from_a_project_file_and_an_acp_session_are_waited_for_as_long_as_they_are_given(
        tmp_path: Path) -> None:
    """The servers of ``.mcp.json`` and of an ACP session join the same registry the gathering reads, each with
    its own 60 s to connect: a turn waits that long for them, not the gathering's 20 s."""
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"tracker": {"command": "tracker"}}}))
    loaded = mcp_sources.read_project(tmp_path)
    assert not loaded.problems
    acp, _, problems = acp_mcp.servers_of([McpServerStdio(name="notes", command="notes", args=[], env=[])])
    assert not problems
    registry = McpRegistry()
    registry.servers.update({s.name: s.config for s in loaded.servers} | acp)
    route = SimpleNamespace(settings=SimpleNamespace(registry=registry))
    bound = mcp_direct.McpDirect(route).gather_bound_s()
    assert bound == mcp_sources.CONNECT_TIMEOUT_S == acp_mcp.CONNECT_TIMEOUT_S > mcp_direct.GATHER_TIMEOUT_S
