"""The terminal chat with an MCP server's tools (issue 37, REQ-MCP-003/004/006/023): the real ``phoenix-lsp chat``
process through pipes, the tests' own stdio MCP server (``tracker_server.py``) whose log of the calls it received
is the witness. Restricted: a read runs without a question and is shown (tool, arguments, result); a write is
refused with the way to Unrestricted shown. Unrestricted: a write asks, a denied call never reaches the server,
and Always Allow for the whole server covers its other write."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.client.conftest import ChatProcess
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.tools.tracker import TOKEN, received, tracker_env

StartChat = Callable[..., ChatProcess]

pytestmark = pytest.mark.slow  # the chat, its server and the MCP server run as subprocesses


@pytest.mark.req("REQ-MCP-003", "REQ-MCP-004", "REQ-MCP-006", "REQ-MCP-023")
def test_the_chat_runs_shows_refuses_and_asks_about_mcp_tools(
        start_chat: StartChat, chat_env: dict[str, str], fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("mcp__tracker__list_issues", {}, id="toolu_r1")),
        Reply.tool_reply(ToolUseBlock("mcp__tracker__create_issue", {"title": "flaky"}, id="toolu_w0")),
        Reply.text_reply("Listed; the write needs Unrestricted."),
        Reply.tool_reply(ToolUseBlock("mcp__tracker__create_issue", {"title": "denied one"}, id="toolu_w1")),
        Reply.tool_reply(ToolUseBlock("mcp__tracker__create_issue", {"title": "flaky"}, id="toolu_w2")),
        Reply.tool_reply(ToolUseBlock("mcp__tracker__close_issue", {"id": 2}, id="toolu_w3")),
        Reply.text_reply("Filed and closed."),
    )
    chat = start_chat(env={**chat_env, **tracker_env(tmp_path)})
    at = chat.wait_for("> ")
    chat.send("what is open?")
    at = chat.wait_for("Listed; the write needs Unrestricted.", at)
    shown = chat.out
    assert "[tool] list_issues on tracker" in shown, shown
    assert "#1 the build is red" in shown, "the read's result is shown"
    assert "[approval]" not in shown, "a read in Restricted runs without a question"
    assert "[tool] create_issue on tracker refused" in shown and "/execute" in shown, "the upgrade hint is shown"
    assert received(tmp_path) == ["list_issues"], "the refused write never reached the server"
    at = chat.wait_for("> ", at)
    chat.send("/execute")
    at = chat.wait_for("> ", at)
    chat.send("file it and close #2")
    at = chat.wait_for("[approval] create_issue on tracker", at)
    at = chat.wait_for("Allow?", at)
    asked = chat.out[chat.out.rfind("[approval]"):]
    assert 'title: "denied one"' in asked, asked
    assert "[s] every tool of tracker" in asked and "[a] create_issue" in asked, asked
    chat.send("n")
    at = chat.wait_for("[approval] create_issue on tracker", at)
    at = chat.wait_for("Allow?", at)
    chat.send("s")
    at = chat.wait_for("Filed and closed.", at)
    assert chat.out.count("[approval] create_issue on tracker") == 2, chat.out
    assert "[approval] close_issue" not in chat.out, "the server's Always Allow covered its other write"
    assert "[approvals] every tool of tracker always allowed" in chat.out
    assert "closed #2" in chat.out
    # the denied call never reached the server; the allowed one and the one the server's rule covered did
    assert received(tmp_path) == ["list_issues", "create_issue", "close_issue"]
    assert TOKEN not in chat.out
    chat.close_stdin()
    assert chat.wait() == 0
