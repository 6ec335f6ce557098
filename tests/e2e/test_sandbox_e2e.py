"""Restricted mode is true at the kernel level, end to end through the LSP server (issue 4)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.e2e.harness import Buffers, session
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess


def _tool_results(request_messages: list[dict]) -> list[dict]:  # type: ignore[type-arg]
    last = request_messages[-1]
    return [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


@pytest.mark.req("REQ-BASH-008", "REQ-BED-014", "REQ-BED-015")
async def test_restricted_write_and_connect_fail_in_kernel_then_upgrade_lets_write(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)  # accept() answers at once: a connection is queued or it is not
    port = listener.getsockname()[1]
    write = "echo secret-plan > notes.txt"
    connect = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)\""
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": write}, id="toolu_w1")),
        Reply.tool_reply(ToolUseBlock("bash", {"command": connect}, id="toolu_c1")),
        Reply.tool_reply(ToolUseBlock("request_mode_upgrade", {"reason": "write notes.txt"}, id="toolu_up")),
        Reply.tool_reply(ToolUseBlock("bash", {"command": write}, id="toolu_w2")),
        Reply.text_reply("done"),
    )
    async with session(fake_anthropic, tmp_path) as s:
        s.on_apply_edit = Buffers(s).apply  # after the upgrade the write is reviewed, and the editor applies it
        cid = await s.new(policy="auto")
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "take notes"})
        upgrade = await s.wait_event(lambda e: e["kind"] == "upgradeRequested")
        target = s.workdir / "notes.txt"
        assert not target.exists(), "the Restricted write must not reach the disk"
        # The witness: nothing connected. The connect command has ended (its result reached the model before
        # the upgrade request), so a connection it made would already wait in the accept queue.
        with pytest.raises(BlockingIOError):
            listener.accept()
        await s.request("phoenix/respondToModeUpgrade", {"conversationId": cid, "approve": True,
                                                         "toolUseId": upgrade["toolUseId"]})
        await s.wait_status(cid, "idle")
    requests = fake_anthropic.requests
    write_result = _tool_results(requests[1].messages)[0]
    assert write_result["is_error"] and ("Permission denied" in write_result["content"]
                                         or "Read-only" in write_result["content"])
    connect_result = _tool_results(requests[2].messages)[0]
    assert connect_result["is_error"]
    assert "Operation not permitted" in connect_result["content"] or "Permission" in connect_result["content"]
    assert target.read_text() == "secret-plan\n"  # the same write after the approved upgrade
    listener.close()
