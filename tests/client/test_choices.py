"""The user's choices of style and approval policy, one use case each (``usecases/choices.py``), reached through a
real LSP client and through the terminal client's ``/style`` and ``/policy`` (ACP has neither: a session is
interactive and has no style). Both say the same: the style changes, the mode does not and is only suggested
(REQ-LAYER-006), and the policy is the conversation's from the next tool call (REQ-PERM-007)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.client.conftest import API_KEY, ChatProcess
from tests.e2e.harness import session
from tests.fake_anthropic import FakeAnthropic


@pytest.mark.req("REQ-LAYER-006", "REQ-PERM-007")
async def test_style_and_policy_through_the_lsp_server(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        styled = await s.request("phoenix/setStyle", {"conversationId": cid, "style": "development"})
        assert (styled["style"], styled["mode"], styled["suggestion"]["command"]) == (
            "development", "restricted", "/execute")
        assert await s.request("phoenix/setApprovalPolicy", {"conversationId": cid, "policy": "auto"}) == {
            "policy": "auto"}
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert (conv["style"], conv["mode"], conv["policy"]) == ("development", "restricted", "auto")


@pytest.mark.req("REQ-LAYER-006", "REQ-PERM-007")
def test_style_and_policy_through_the_terminal_client(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "PHOENIX_"))}
    env |= {**fake_anthropic.env(API_KEY), "NO_COLOR": "1"}
    chat = ChatProcess(["--cwd", str(work), "--data-dir", str(tmp_path / "data")], env)
    try:
        at = chat.wait_for("> ")
        chat.send("/style development")
        at = chat.wait_for("[style] development (was chat)", at)
        at = chat.wait_for("> ", chat.wait_for("[style] tip: type /execute to switch modes.", at))
        chat.send("/policy auto")
        at = chat.wait_for("> ", chat.wait_for("[approvals] auto (was interactive)", at))
    finally:
        chat.kill()
    assert "[mode]" not in chat.out  # the style suggested a mode and changed none
    assert fake_anthropic.requests == []  # a choice is not a message
