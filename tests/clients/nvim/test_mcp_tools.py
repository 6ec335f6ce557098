"""Neovim with the plugin and an MCP server's tools (issue 37, REQ-MCP-003/004/006/023): headless Neovim, the real
server, the tests' own stdio MCP server (``tracker_server.py``) whose log of the calls it received is the
witness. Restricted: a read runs without a dialog and the chat shows the call (tool, arguments) and its result;
a write is refused with the way to Unrestricted in the chat. Unrestricted: the dialog asks, names the call
"create_issue on tracker" and offers Always Allow for the tool and for every tool of the server; a denied call
never reaches the server, and the server's Always Allow covers its other write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.tools.tracker import TOKEN, received, tracker_env

pytestmark = pytest.mark.slow


@pytest.mark.req("REQ-MCP-003", "REQ-MCP-004", "REQ-MCP-006", "REQ-MCP-023")
def test_neovim_runs_shows_refuses_and_asks_about_mcp_tools(fake_anthropic: FakeAnthropic, run_nvim: Any,
                                                             tmp_path: Path) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("mcp__tracker__list_issues", {}, id="toolu_r1")),
        Reply.tool_reply(ToolUseBlock("mcp__tracker__create_issue", {"title": "flaky"}, id="toolu_w0")),
        Reply.text_reply("Listed; the write needs Unrestricted."),
        Reply.tool_reply(ToolUseBlock("mcp__tracker__create_issue", {"title": "denied one"}, id="toolu_w1")),
        Reply.tool_reply(ToolUseBlock("mcp__tracker__create_issue", {"title": "flaky"}, id="toolu_w2")),
        Reply.tool_reply(ToolUseBlock("mcp__tracker__close_issue", {"id": 2}, id="toolu_w3")),
        Reply.text_reply("Filed and closed."),
    )
    run = run_nvim(
        """
        local phoenix = T.setup()
        local dialog = require("phoenix.dialog")
        local approval = require("phoenix.approval")
        local ask = approval.ask
        T.data.asked = 0
        approval.ask = function(ev)
          T.data.asked = T.data.asked + 1
          return ask(ev)
        end
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        phoenix.send("what is open?")
        T.wait("the first answer", function()
          return phoenix.state.status == "idle"
            and T.chat_text():find("Listed; the write needs Unrestricted.", 1, true) ~= nil
        end)
        T.data.restricted = T.chat_text()
        T.data.asked_restricted = T.data.asked
        vim.cmd("PhoenixMode unrestricted")
        T.wait("unrestricted", function() return phoenix.state.mode == "unrestricted" end)
        phoenix.send("file it and close #2")
        T.wait("the approval dialog", dialog.is_open)
        T.data.first = dialog.snapshot()
        T.keys("n")
        T.wait("the second dialog", function() return dialog.is_open() and T.data.asked == 2 end)
        T.data.second = dialog.snapshot()
        T.keys("s")
        T.wait("the second answer", function()
          return not dialog.is_open() and phoenix.state.status == "idle"
            and T.chat_text():find("Filed and closed.", 1, true) ~= nil
        end)
        T.data.chat = T.chat_text()
        """,
        env=tracker_env(tmp_path),
    )
    restricted = run.data["restricted"]
    assert "list_issues on tracker {}" in restricted, restricted
    assert "#1 the build is red" in restricted, "the read's result is shown"
    assert run.data["asked_restricted"] == 0, "a read in Restricted runs without a dialog"
    assert "create_issue on tracker refused in restricted mode" in restricted, restricted
    assert ":PhoenixMode unrestricted" in restricted, "the way to Unrestricted is shown"
    first = "\n".join(run.data["first"]["lines"])
    assert "create_issue on tracker" in first and "denied one" in first, first
    assert "Always Allow create_issue" in first and "Always Allow every tool of tracker" in first, first
    assert "mcp__tracker__*" not in first
    assert run.data["asked"] == 2, "the server's Always Allow covered its other write"
    chat = run.data["chat"]
    assert "close_issue on tracker" in chat and "closed #2" in chat, chat
    # the denied call never reached the server; the allowed one and the one the server's rule covered did
    assert received(tmp_path) == ["list_issues", "create_issue", "close_issue"]
    assert TOKEN not in chat + first


@pytest.mark.req("REQ-MCP-024")
def test_neovim_shows_a_tools_image_live_and_when_the_conversation_is_opened_again(
        fake_anthropic: FakeAnthropic, run_nvim: Any, tmp_path: Path) -> None:
    """Issue 37: the chat names the image an MCP tool returned ("image (PNG, n KB)") under its call, and a new
    Neovim (a new server) that opens the conversation again shows the same lines."""
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("mcp__tracker__picture", {"kind": "png"}, id="toolu_i1")),
                           Reply.text_reply("A gradient."))
    first = run_nvim(
        """
        local phoenix = T.setup()
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        phoenix.send("show me the chart")
        T.wait("the answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("A gradient.", 1, true) ~= nil
        end)
        T.data.cid = phoenix.state.conversation
        T.data.chat = T.chat_text()
        """,
        env=tracker_env(tmp_path),
    )
    live = first.data["chat"]
    lines = [line for line in live.splitlines() if "image (PNG, " in line]
    assert len(lines) == 1 and "here is png" in live.split(lines[0], 1)[1], live
    again = run_nvim(
        f"""
        local phoenix = T.setup()
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        phoenix.open_conversation("{first.data['cid']}")
        T.wait("the history", function() return T.chat_text():find("A gradient.", 1, true) ~= nil end)
        T.data.chat = T.chat_text()
        """,
        env=tracker_env(tmp_path),
    )
    assert lines[0] in again.data["chat"].splitlines(), again.data["chat"]
