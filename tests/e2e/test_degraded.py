"""Without Landlock (REQ-BASH-009, REQ-BED-014, REQ-BED-018, REQ-PERM-017).

The server runs under ``no_landlock.py``: the kernel answers ENOSYS to the Landlock syscalls, as a kernel older
than 5.13 does. Nothing is mocked: the server's own probe finds no Landlock.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.harness import session
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess

NO_LANDLOCK = [sys.executable, str(Path(__file__).with_name("no_landlock.py"))]


@pytest.mark.req("REQ-BASH-009", "REQ-BED-014")
async def test_only_unrestricted_exists_and_restricted_is_refused_with_the_kernel_requirement(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    async with session(fake_anthropic, tmp_path, launcher=NO_LANDLOCK) as s:
        result = await s.request("phoenix/newConversation", {"workingDirectory": str(s.workdir)})
        assert result["mode"] == "unrestricted"
        assert result["sandbox"]["available"] is False and "Landlock" in result["sandbox"]["reason"]
        with pytest.raises(JsonRpcException) as info:
            await s.request("phoenix/setMode", {"conversationId": result["conversationId"], "mode": "restricted"})
        assert info.value.code == -32004 and "Landlock" in info.value.message and "5.13" in info.value.message
        warnings = [m.message for m in s.client.messages]
        assert any("sandbox unavailable" in w.lower() for w in warnings), warnings


@pytest.mark.req("REQ-BASH-009", "REQ-BASH-007", "REQ-BASH-011")
async def test_safety_checks_still_apply_without_the_sandbox(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": "git push --force origin main"}, id="toolu_push")),
        Reply.text_reply("ok"),
    )
    async with session(fake_anthropic, tmp_path, launcher=NO_LANDLOCK) as s:
        cid = await s.new(policy="auto")
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "push it"})
        await s.wait_status(cid, "idle")
    [result] = [b for b in fake_anthropic.requests[1].messages[-1]["content"] if b["type"] == "tool_result"]
    assert result["is_error"] and "force" in result["content"].lower()


@pytest.mark.req("REQ-BED-018", "REQ-PERM-017")
async def test_subagents_start_unrestricted_and_their_approvals_reach_the_user(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    def route(body: dict) -> Reply | None:  # type: ignore[type-arg]
        first = body["messages"][0]["content"]
        text = first if isinstance(first, str) else first[0].get("text", "")
        if text == "look around":  # the sub-agent's task
            if len(body["messages"]) == 1:
                return Reply.tool_reply(ToolUseBlock("bash", {"command": "echo from-agent"}, id="toolu_agent_bash"))
            return Reply.tool_reply(ToolUseBlock("submit_result", {"result": "agent done"}, id="toolu_submit"))
        if len(body["messages"]) == 1:
            return Reply.tool_reply(ToolUseBlock("spawn_agents", {"tasks": ["look around"]}, id="toolu_spawn"))
        return Reply.text_reply("all done")

    fake_anthropic.handler = route
    async with session(fake_anthropic, tmp_path, launcher=NO_LANDLOCK) as s:
        cid = await s.new()  # interactive policy by default
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "delegate"})
        ask = await s.wait_event(lambda e: e["kind"] == "approvalRequested")
        assert ask["parentConversationId"] == cid and ask["toolName"] == "bash"
        child = await s.request("phoenix/getConversation", {"conversationId": ask["conversationId"]})
        assert child["mode"] == "unrestricted" and child["isSubAgent"] is True
        await s.request(
            "phoenix/respondToApproval",
            {"conversationId": ask["conversationId"], "toolUseId": ask["toolUseId"], "decision": "allow"},
        )
        await s.wait_status(cid, "idle", timeout=20)
        parent = await s.request("phoenix/getConversation", {"conversationId": cid})
    results = [b for m in parent["messages"] for b in m["content"] if b["type"] == "toolResult"]
    assert "agent done" in results[0]["content"]
