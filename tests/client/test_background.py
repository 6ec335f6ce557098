"""The terminal chat's ``/background`` (issue 36, REQ-BASH-045): the real client process, the real server it starts,
a real overlay capture; only the Anthropic API is the local fake. The model starts a background command that
writes a file and keeps running; ``/background`` shows what it changed so far (nothing lands), ``/background stop``
stops it and its review follows (auto policy: it lands). The witnesses are the disk and what the chat printed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import overlay
from tests.client.conftest import ChatProcess
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.waiting import eventually

SUPPORT = overlay.overlay_support()
pytestmark = [pytest.mark.slow, pytest.mark.req("REQ-BASH-045"),
              pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}")]


def test_background_shows_the_changes_so_far_and_stop_leads_to_their_review(
        start_chat: Callable[..., ChatProcess], fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    work = tmp_path / "work"
    outside = tmp_path / "wrote"
    command = f"echo so far > partial.txt && touch {outside} && sleep 300"
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": command, "run": "background"})),
                           Reply.text_reply("Started."))
    chat = start_chat()
    at = chat.wait_for("> ")
    chat.send("/policy auto")
    chat.send("/execute")
    at = chat.wait_for("[mode] unrestricted", at)
    at = chat.wait_for("> ", at)
    chat.send("start it")
    at = chat.wait_for("Started.", at)
    at = chat.wait_for("> ", at)
    asyncio.run(eventually(outside.exists, "the command wrote its file into its layer", 30))
    chat.send("/background")
    at = chat.wait_for("[background] What the background command(s) changed so far", at)
    at = chat.wait_for("+so far", at)
    assert "    partial.txt" in chat.out[at - 400:]
    assert not (work / "partial.txt").exists(), "a look lands nothing"
    chat.send("/background stop")
    at = chat.wait_for("[background] Stopped", at)
    asyncio.run(eventually((work / "partial.txt").exists, "its changes reviewed and applied", 30))
    assert (work / "partial.txt").read_text() == "so far\n"
    chat.send("/background")
    chat.wait_for("no running background command", at)
    chat.close_stdin()
    assert chat.wait() == 0, chat.err


@pytest.mark.req("REQ-BASH-044")
def test_a_background_command_that_ends_at_the_prompt_is_asked_about_there(
        start_chat: Callable[..., ChatProcess], fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    work = tmp_path / "work"
    command = "sleep 1; echo late > late.txt"
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": command, "run": "background"})),
                           Reply.text_reply("Started."))
    chat = start_chat()
    at = chat.wait_for("> ")
    chat.send("/policy auto")
    chat.send("/execute")
    at = chat.wait_for("[mode] unrestricted", at)
    chat.send("/policy interactive")
    at = chat.wait_for("> ", at)
    chat.send("start it")
    at = chat.wait_for("Allow? [y]es / [n]o", at)
    chat.send("y")
    at = chat.wait_for("Started.", at)
    # it ends while the chat waits at its prompt: the review's question comes there, with the diff
    at = chat.wait_for("+late", at)
    at = chat.wait_for("Allow? [y]es / [n]o", at)
    assert not (work / "late.txt").exists(), "nothing lands before the answer"
    chat.send("y")
    asyncio.run(eventually((work / "late.txt").exists, "its changes applied", 30))
    assert (work / "late.txt").read_text() == "late\n"
    chat.close_stdin()
    assert chat.wait() == 0, chat.err
