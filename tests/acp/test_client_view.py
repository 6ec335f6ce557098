"""What an ACP client draws (issue 38, found with CodeCompanion.nvim): each tool call's final update arrives once
(a second, nameless one drew an extra line and overwrote the upgrade's title), a mode command is answered with a
line of text and the next message goes through, and every error says what happened, why and what to do under
``data.message`` and ``data.error`` alike. Counted on what the ACP SDK's own client side received."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import acp
import pytest

from tests.acp.harness import TIMEOUT, agent
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the agent as a subprocess

FINAL = ("completed", "failed")


def call_messages(wire: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    """The session/update notifications about one tool call, as the client received them."""
    return [m["params"]["update"] for m in wire if m["direction"] == "incoming"
            and m.get("method") == "session/update" and m["params"]["update"].get("toolCallId") == call_id]


@pytest.mark.req("REQ-ACP-005", "REQ-ACP-028")
async def test_each_tool_calls_final_update_arrives_once(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("read_file", {"path": "notes.md"}, id="toolu_r1"),
                         ToolUseBlock("bash", {"command": "echo plan > out.txt"}, id="toolu_b1")),
        Reply.tool_reply(ToolUseBlock("request_mode_upgrade", {"reason": "write out.txt"}, id="toolu_up")),
        Reply.text_reply("done"),
    )
    async with agent(fake_anthropic, tmp_path) as a:
        (a.workdir / "notes.md").write_text("the notes\n" * 50)
        sid = (await a.new()).session_id
        a.editor.answer = lambda asked: a.editor.option(asked, "allow_once")
        assert (await a.prompt(sid, "plan it")).stop_reason == "end_turn"
        for call_id in ("toolu_r1", "toolu_b1", "toolu_up"):
            updates = call_messages(a.editor.wire, call_id)
            finals = [i for i, u in enumerate(updates) if u.get("status") in FINAL]
            assert len(finals) == 1, (call_id, [u.get("status") for u in updates])
            assert finals[0] == len(updates) - 1, (call_id, updates[finals[0] + 1:])  # nothing after it
        assert "the notes" in a.editor.call_text("toolu_r1")  # the output, as the model got it
        assert a.editor.statuses("toolu_b1")[-1] == "failed"  # the kernel refused the write
        upgrade = call_messages(a.editor.wire, "toolu_up")
        assert upgrade[0]["title"] == "Switch to Unrestricted mode" and upgrade[-1]["status"] == "completed"
    assert not (tmp_path / "work" / "out.txt").exists()


@pytest.mark.req("REQ-ACP-029")
async def test_a_mode_command_answers_with_a_line_and_the_next_message_goes_through(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.text_reply("hello after the switch"))
    async with agent(fake_anthropic, tmp_path) as a:
        sid = (await a.new()).session_id
        assert (await a.prompt(sid, "/execute")).stop_reason == "end_turn"
        said = a.editor.text()
        assert "Unrestricted" in said, said
        assert (await a.prompt(sid, "/execute")).stop_reason == "end_turn"
        assert "already" in a.editor.text()[len(said):].lower()
        before = len(a.editor.text())
        assert (await a.prompt(sid, "hello")).stop_reason == "end_turn"
        assert a.editor.text()[before:] == "hello after the switch"
        assert len(fake_anthropic.requests) == 1  # the commands never reached the model
        last = fake_anthropic.requests[0].messages[-1]["content"]
        assert last[-1]["text"].endswith("hello")  # the message arrived whole, not empty
        with pytest.raises(acp.RequestError) as empty:
            await a.prompt(sid, "   ")
        said = empty.value.data["message"]
        assert "empty" in said and "nothing to send" in said and "text" in said, said
        assert str(empty.value) == said  # the error's own message says it too, not a bare "Invalid params"


@pytest.mark.req("REQ-ACP-030")
async def test_error_data_carries_what_why_and_next_under_message_and_error(fake_anthropic: FakeAnthropic,
                                                                           tmp_path: Path) -> None:
    async with agent(fake_anthropic, tmp_path) as a:
        sid = (await a.new()).session_id

        async def refused(call: Any) -> acp.RequestError:
            with pytest.raises(acp.RequestError) as info:
                await asyncio.wait_for(call, TIMEOUT)
            return info.value

        errors = [
            await refused(a.conn.set_session_mode(session_id=sid, mode_id="yolo")),
            await refused(a.conn.set_config_option(config_id="mode", session_id=sid, value="yolo")),
            await refused(a.conn.set_config_option(config_id="model", session_id=sid, value="not a model!")),
            await refused(a.conn.set_config_option(config_id="colour", session_id=sid, value="blue")),
            await refused(a.conn.prompt(session_id="no-such-session", prompt=[acp.text_block("hi")])),
            await refused(a.conn.load_session(cwd=str(a.workdir), session_id="no-such-session", mcp_servers=[])),
            await refused(a.conn._conn.send_request("session/teleport", {"sessionId": sid})),  # the SDK's own
            await refused(a.conn._conn.send_request("session/prompt", {"sessionId": sid})),  # the SDK's validation
        ]
        for error in errors:
            data = error.data
            assert isinstance(data, dict), (error, data)
            assert data["message"] == data["error"] == str(error), data
            assert len(data["message"]) > 40 and ":" in data["message"], data  # more than a bare phrase
        assert "restricted or unrestricted" in errors[0].data["message"]
        assert "colour" in errors[3].data["message"] and "mode, model" in errors[3].data["message"]
        assert errors[5].code == -32002 and "session/list" in errors[5].data["message"]
        assert errors[6].code == -32601 and "session/teleport" in errors[6].data["message"]
        assert errors[7].code == -32602 and "prompt" in errors[7].data["message"]
        assert json.dumps(errors[2].data).count("not a model!") >= 1
