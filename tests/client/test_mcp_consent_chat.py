"""The terminal chat asks the user at its prompt whether a project's MCP server may start (issue 37,
REQ-MCP-009): the server's ``window/showMessageRequest``, answered with a number or y / n. The real
``phoenix-lsp chat`` process through pipes; the witness is the file the project's server writes when started."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.client.conftest import ChatProcess
from tests.fake_anthropic import FakeAnthropic, Reply
from tests.tools.tracker import TOKEN, project_server, starts

StartChat = Callable[..., ChatProcess]

pytestmark = pytest.mark.slow


@pytest.mark.req("REQ-MCP-009")
def test_the_chat_asks_before_a_project_server_starts(start_chat: StartChat, fake_anthropic: FakeAnthropic,
                                                      tmp_path: Path) -> None:
    (tmp_path / "work" / ".mcp.json").write_text(json.dumps({"mcpServers": {"tracker": project_server(tmp_path)}}))
    fake_anthropic.enqueue(Reply.text_reply("Two issues."), Reply.text_reply("Still two."))
    chat = start_chat()
    at = chat.wait_for("> ")
    chat.send("what is open?")
    at = chat.wait_for("[1] Start it / [2] Do not start it: ", at)
    assert "MCP server 'tracker'" in chat.out and "--label one" in chat.out and TOKEN not in chat.out
    assert starts(tmp_path) == 0, "nothing ran before the answer"
    chat.send("maybe")
    at = chat.wait_for("Please answer a number from 1 to 2: ", at)
    chat.send("1")
    at = chat.wait_for("Two issues.", at)
    at = chat.wait_for("> ", at)
    assert starts(tmp_path) == 1
    names = fake_anthropic.requests[0].tool_names or []
    assert "mcp__tracker__list_issues" in names
    chat.send("and now?")
    at = chat.wait_for("Still two.", at)
    chat.wait_for("> ", at)
    assert chat.out.count("Start it / [2]") == 1, "asked once"
    chat.close_stdin()
    assert chat.wait() == 0
