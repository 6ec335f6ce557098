"""No approval without a user (REQ-PERM-016): when the client cannot show the question, it stays open."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.e2e.harness import Buffers, await_status, session
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess


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
        await s.wait_until(lambda: s.shown, what="the dialog was attempted")
        assert s.shown
        # the server logs that the approval stays pending once the dialog failed: that line is the marker
        await s.wait_until(lambda: "stays pending" in " ".join(m.message for m in s.client.log_messages),
                           what="the failed dialog logged")
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert conv["status"] == "awaiting_approval" and conv["pendingApproval"]["toolName"] == "bash"
        assert not (s.workdir / "out.txt").exists()
        logs = " ".join(m.message for m in s.client.log_messages)
        assert "stays pending" in logs
        # the user can still answer through the protocol
        s.on_apply_edit = Buffers(s).apply
        await s.request("phoenix/respondToApproval", {"conversationId": cid,
                                                      "toolUseId": conv["pendingApproval"]["toolUseId"],
                                                      "decision": "allow"})
        # then the command's change is reviewed (issue 36): its question stays open too, and is answered the same way
        async def reviewing() -> dict[str, Any] | None:
            conv = await s.request("phoenix/getConversation", {"conversationId": cid})
            pending = conv.get("pendingApproval") or {}
            return dict(conv) if pending.get("toolName") == "patch" else None

        review = await s.wait_until(reviewing, what="the review of the command's change is pending")
        assert not (s.workdir / "out.txt").exists()
        await s.request("phoenix/respondToApproval", {"conversationId": cid,
                                                      "toolUseId": review["pendingApproval"]["toolUseId"],
                                                      "decision": "allow"})
        await await_status(s, cid, "idle")
    assert (s.workdir / "out.txt").read_text() == "hi\n"
