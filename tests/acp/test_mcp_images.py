"""An MCP tool's image through ACP (issue 37, REQ-MCP-021), driven by the ACP SDK's client side: the tool call's
content says that an image came back, "image (PNG, n KB)", and the model received the image itself."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.acp.harness import TIMEOUT, Editor, agent, tool_result
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.tools.tracker import tracker_env

pytestmark = pytest.mark.slow  # the agent and an MCP server run as subprocesses


@pytest.mark.req("REQ-MCP-021")
async def test_the_client_is_told_an_image_came_back(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    editor = Editor()
    call = ToolUseBlock("mcp__tracker__picture", {"kind": "png"}, id="toolu_p1")
    fake_anthropic.enqueue(Reply.tool_reply(call), Reply.text_reply("a gradient"))
    async with agent(fake_anthropic, tmp_path, editor, env=tracker_env(tmp_path)) as a:
        session = await a.new()
        done = await asyncio.wait_for(a.prompt(session.session_id, "show it"), TIMEOUT * 2)
        assert done.stop_reason == "end_turn"
    shown = editor.call_text("toolu_p1")
    assert shown.startswith("image (PNG, ") and " KB)\nhere is png" in shown, shown
    content = tool_result(fake_anthropic, "toolu_p1")["content"]
    assert [block["type"] for block in content] == ["text", "image"]
