"""MCP servers through ACP (issue 37, REQ-MCP-008/009), driven by the ACP SDK's client side: the servers a
client passes in ``session/new`` reach the model's tool list with no capability manifest, their environment a
secret; a project's ``.mcp.json`` server is asked about with ``session/request_permission`` before it starts."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from acp.schema import EnvVariable, McpServerStdio

from tests.acp.harness import TIMEOUT, Asked, Editor, agent, received
from tests.fake_anthropic import FakeAnthropic, Reply
from tests.tools.tracker import SERVER, TOKEN, log_path, project_server, starts

pytestmark = pytest.mark.slow  # the agent and an MCP server run as subprocesses


@pytest.mark.req("REQ-MCP-008", "REQ-MCP-010")
async def test_a_sessions_servers_reach_the_models_tool_list(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    server = McpServerStdio(name="tracker", command=sys.executable, args=[str(SERVER), "--log",
                                                                          str(log_path(tmp_path))],
                            env=[EnvVariable(name="TRACKER_TOKEN", value=TOKEN)])
    fake_anthropic.enqueue(Reply.text_reply("ok"))
    editor = Editor()
    async with agent(fake_anthropic, tmp_path, editor) as a:
        session = await asyncio.wait_for(a.conn.new_session(cwd=str(a.workdir), mcp_servers=[server]), TIMEOUT)
        answer = await asyncio.wait_for(a.prompt(session.session_id, "what is open?"), TIMEOUT * 2)
        assert answer.stop_reason == "end_turn"
        sent = received(editor)
    names = fake_anthropic.requests[0].tool_names or []
    assert "mcp__tracker__list_issues" in names and "mcp__tracker__create_issue" in names
    assert not editor.asked, "a session's server is the client's own choice: nothing to consent to"
    assert TOKEN not in sent and all(TOKEN not in json.dumps(r.body) for r in fake_anthropic.requests)


@pytest.mark.req("REQ-MCP-009")
async def test_a_project_server_is_asked_about_with_request_permission(fake_anthropic: FakeAnthropic,
                                                                       tmp_path: Path) -> None:
    seen: list[tuple[Asked, int]] = []

    def answer(asked: Asked) -> str | None:
        seen.append((asked, starts(tmp_path)))
        return str(next(o.option_id for o in asked.options if o.kind == "allow_always"))

    editor = Editor(answer=answer)
    fake_anthropic.enqueue(Reply.text_reply("ok"), Reply.text_reply("ok"))
    async with agent(fake_anthropic, tmp_path, editor) as a:
        (a.workdir / ".mcp.json").write_text(json.dumps({"mcpServers": {"tracker": project_server(tmp_path)}}))
        session = await a.new()
        for text in ("what is open?", "and now?"):
            reply = await asyncio.wait_for(a.prompt(session.session_id, text), TIMEOUT * 2)
            assert reply.stop_reason == "end_turn"
        sent = received(editor)
    assert len(seen) == 1 and seen[0][1] == 0, "asked once, before the server ran"
    asked = seen[0][0]
    assert asked.tool_call.kind == "execute" and "tracker" in (asked.tool_call.title or "")
    assert [o.kind for o in asked.options] == ["allow_always", "reject_always"]
    assert "--label one" in sent and TOKEN not in sent
    assert starts(tmp_path) == 1 and "mcp__tracker__list_issues" in (fake_anthropic.requests[0].tool_names or [])
