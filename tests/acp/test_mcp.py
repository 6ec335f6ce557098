"""MCP servers an ACP client passes in session/new are on the agent route, under the same manifest (issue 28)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from acp.schema import EnvVariable, McpServerStdio

from tests.acp.harness import TIMEOUT, agent, received, tool_result
from tests.agent.mcp_helpers import SERVER, TOKEN
from tests.agent.triage_flow import LIST, SEARCH
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the agent (and here an MCP server) as a subprocess


@pytest.mark.req("REQ-ACP-015")
async def test_a_sessions_mcp_server_is_on_the_agent_route_under_the_manifest(fake_anthropic: FakeAnthropic,
                                                                              tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ui_settings.json").write_text(json.dumps({"route": "agent"}))
    capabilities = tmp_path / "capabilities.json"
    capabilities.write_text(json.dumps({"allow": ["mcp://records/*"], "deny": [SEARCH]}))
    records = tmp_path / "records.json"
    expected = tmp_path / "records.expected"
    expected.write_text(TOKEN)
    server = McpServerStdio(name="records", command=sys.executable,
                            args=[str(SERVER), "--data", str(records), "--expect-token-file", str(expected)],
                            env=[EnvVariable(name="RECORDS_TOKEN", value=TOKEN)])
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("describe_tools", {"tools": [LIST]}, id="toolu_d1")),
        Reply.tool_reply(ToolUseBlock("describe_tools", {"tools": [SEARCH]}, id="toolu_d2")),
        Reply.text_reply("described"),
    )
    async with agent(fake_anthropic, tmp_path, env={"PHOENIX_CAPABILITIES": str(capabilities)}) as a:
        session = await asyncio.wait_for(a.conn.new_session(cwd=str(a.workdir), mcp_servers=[server]), TIMEOUT)
        answer = await asyncio.wait_for(a.conn.prompt(session_id=session.session_id, prompt=[
            {"type": "text", "text": "what can the records server do?"}]), TIMEOUT * 2)
        assert answer.stop_reason == "end_turn"
        sent = received(a.editor)
    described = tool_result(fake_anthropic, "toolu_d1")
    assert not described["is_error"] and "list_records" in str(described["content"])
    denied = str(tool_result(fake_anthropic, "toolu_d2")["content"])
    assert "search_records" in denied and "den" in denied.lower()  # the manifest's deny holds for it too
    assert TOKEN not in sent  # the server's environment is a secret
