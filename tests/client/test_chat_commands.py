"""The terminal chat's commands for routes and conversations (issue 38): ``/route``, ``/new``,
``/conversations`` and ``/help``, on the real client process and the real server it starts; the witnesses are
the route file in the data directory and what the fake model receives."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.client.conftest import ChatProcess
from tests.fake_anthropic import FakeAnthropic, Reply

# slow: the test starts the terminal client and its server as subprocesses
pytestmark = [pytest.mark.slow, pytest.mark.req("REQ-TERM-002")]

StartChat = Callable[..., ChatProcess]


def _user_texts(fake: FakeAnthropic, index: int) -> list[str]:
    texts = []
    for message in fake.requests[index].body["messages"]:
        if message["role"] == "user" and isinstance(message["content"], list):
            texts += [b["text"] for b in message["content"] if b.get("type") == "text"]
    return texts


def test_route_new_and_conversations_commands(
    start_chat: StartChat, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("About apples."), Reply.text_reply("About pears."),
                           Reply.text_reply("Apples again."))
    chat = start_chat()
    at = chat.wait_for("> ")
    first = chat.out.split("conversation ", 1)[1][:8]
    chat.send("/help")
    for command in ("/route [ask|agent]", "/new", "/conversations [N]"):
        at = chat.wait_for(command, at)
    chat.send("/route")
    at = chat.wait_for("[route] ask", at)
    chat.send("/route sideways")
    at = chat.wait_for("Usage: /route ask|agent", at)
    chat.send("/route agent")
    at = chat.wait_for("[route] agent from the next message (was ask)", at)
    assert json.loads((tmp_path / "data" / "ui_settings.json").read_text())["route"] == "agent"
    chat.send("/route ask")
    at = chat.wait_for("[route] ask from the next message (was agent)", at)
    assert json.loads((tmp_path / "data" / "ui_settings.json").read_text())["route"] == "ask"

    chat.send("tell me about apples")
    at = chat.wait_for("About apples.", at)
    at = chat.wait_for("> ", at)
    chat.send("/new")
    at = chat.wait_for("phoenix-lsp chat · conversation ", at)
    second = chat.out[at:at + 8]
    assert second != first
    at = chat.wait_for("> ", at)
    chat.send("tell me about pears")
    at = chat.wait_for("About pears.", at)
    at = chat.wait_for("> ", at)
    assert _user_texts(fake_anthropic, 1) == ["tell me about pears"]  # a new conversation: no apples

    chat.send("/conversations")
    at = chat.wait_for("Switch with /conversations N", at)
    listing = chat.out[:at].rsplit("Conversations in", 1)[1]
    assert "* 1." in listing and "tell me about pears" in listing
    assert "\n  2." in listing and "tell me about apples" in listing
    chat.send("/conversations 9")
    at = chat.wait_for("is not in the list", at)
    chat.send("/conversations 2")
    at = chat.wait_for(f"resumed conversation {first}", at)
    at = chat.wait_for("About apples.", at)
    at = chat.wait_for("> ", at)
    chat.send("and apples again?")
    at = chat.wait_for("Apples again.", at)
    chat.wait_for("> ", at)
    chat.close_stdin()
    assert chat.wait() == 0
    assert _user_texts(fake_anthropic, 2) == ["tell me about apples", "and apples again?"]
