"""No approval without a user (REQ-PERM-016): when the client cannot show the question, it stays open."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types

from tests.e2e.harness import session
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock


@pytest.mark.req("REQ-PERM-016", "REQ-PERM-006")
async def test_a_failed_dialog_leaves_the_approval_open(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo hi > out.txt"}, id="toolu_b")),
        Reply.text_reply("done"),
    )

    def broken(params: types.ShowMessageRequestParams) -> str | None:
        raise RuntimeError("this client cannot show dialogs right now")

    async with session(fake_anthropic, tmp_path, rich=False) as s:
        s.on_show = broken
        cid = await s.new()
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "/execute"})
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "write it"})
        for _ in range(100):  # the dialog was attempted
            if s.shown:
                break
            await asyncio.sleep(0.05)
        assert s.shown
        await asyncio.sleep(0.3)
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert conv["status"] == "awaiting_approval" and conv["pendingApproval"]["toolName"] == "bash"
        assert not (s.workdir / "out.txt").exists()
        logs = " ".join(m.message for m in s.client.log_messages)
        assert "stays pending" in logs
        # the user can still answer through the protocol
        await s.request("phoenix/respondToApproval", {"conversationId": cid,
                                                      "approvalId": conv["pendingApproval"]["approvalId"],
                                                      "decision": "allow"})
        for _ in range(200):
            conv = await s.request("phoenix/getConversation", {"conversationId": cid})
            if conv["status"] == "idle":
                break
            await asyncio.sleep(0.05)
    assert (s.workdir / "out.txt").read_text() == "hi\n"
