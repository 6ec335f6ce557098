"""MCP tools in the ordinary conversation through ACP (issue 37), driven by the ACP SDK's client side: a read is
a ``tool_call`` of kind ``fetch`` that runs without asking in Restricted; a write is one of kind ``edit``, asked
about through ``session/request_permission`` in Unrestricted; a rejected write never reaches the server (the
tracker's own log is the witness)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.acp.harness import TIMEOUT, Asked, Editor, agent, received, tool_result
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.tools.tracker import TOKEN, tracker_env
from tests.tools.tracker import received as tracker_received

pytestmark = pytest.mark.slow  # the agent and an MCP server run as subprocesses


@pytest.mark.req("REQ-MCP-006", "REQ-MCP-003", "REQ-MCP-004")
async def test_reads_are_fetches_and_writes_are_edits_asked_about(fake_anthropic: FakeAnthropic,
                                                                    tmp_path: Path) -> None:
    answers = iter(["reject", "always"])

    def answer(asked: Asked) -> str | None:
        wanted = next(answers)
        kind = {"reject": "reject_once", "always": "allow_always"}[wanted]
        return str(next(o.option_id for o in asked.options if o.kind == kind))

    editor = Editor(answer=answer)
    read = ToolUseBlock("mcp__tracker__list_issues", {}, id="toolu_r1")
    refused = ToolUseBlock("mcp__tracker__create_issue", {"title": "one"}, id="toolu_w0")
    rejected = ToolUseBlock("mcp__tracker__create_issue", {"title": "two"}, id="toolu_w1")
    allowed = ToolUseBlock("mcp__tracker__create_issue", {"title": "three"}, id="toolu_w2")
    again = ToolUseBlock("mcp__tracker__create_issue", {"title": "four"}, id="toolu_w3")
    fake_anthropic.enqueue(Reply.tool_reply(read, refused), Reply.text_reply("read"),
                           Reply.tool_reply(rejected), Reply.tool_reply(allowed), Reply.tool_reply(again),
                           Reply.text_reply("filed"))
    async with agent(fake_anthropic, tmp_path, editor, env=tracker_env(tmp_path)) as a:
        session = await a.new()
        sid = session.session_id
        first = await asyncio.wait_for(a.prompt(sid, "what is open?"), TIMEOUT * 2)
        assert first.stop_reason == "end_turn"
        assert tracker_received(tmp_path) == ["list_issues"], "Restricted: the read ran, the write did not"
        assert not editor.asked
        await asyncio.wait_for(a.conn.set_session_mode(session_id=sid, mode_id="unrestricted"), TIMEOUT)
        second = await asyncio.wait_for(a.prompt(sid, "file them"), TIMEOUT * 2)
        assert second.stop_reason == "end_turn"
        sent = received(editor)
    started = {u.tool_call_id: u for u in editor.updates if u.session_update == "tool_call"}
    assert started["toolu_r1"].kind == "fetch" and started["toolu_r1"].title == "Call list_issues on tracker"
    assert "#1 the build is red" in editor.call_text("toolu_r1")
    assert started["toolu_w0"].kind == "edit" and editor.statuses("toolu_w0")[-1] == "failed"
    assert "request_mode_upgrade" in str(tool_result(fake_anthropic, "toolu_w0")["content"])
    # two questions: the rejected call and the one Always Allowed; the tool's rule covers its next call
    assert [asked.tool_call.tool_call_id for asked in editor.asked] == ["toolu_w1", "toolu_w2"]
    assert all(asked.tool_call.kind == "edit" for asked in editor.asked)
    assert tracker_received(tmp_path) == ["list_issues", "create_issue", "create_issue"]
    assert tool_result(fake_anthropic, "toolu_w1")["is_error"] is True
    assert str(tool_result(fake_anthropic, "toolu_w3")["content"]) == "created #3: four"
    assert TOKEN not in sent
