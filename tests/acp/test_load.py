"""session/load after a restart of the agent: the history replayed before the answer, an open approval asked
again (issue 28)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.acp.harness import TIMEOUT, Editor, agent
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the agent as a subprocess


@pytest.mark.req("REQ-ACP-012", "REQ-ACP-013")
async def test_load_after_a_restart_replays_then_asks_again(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("read_file", {"path": "a.txt"}, id="toolu_r1"), text="Let me look."),
        Reply.tool_reply(ToolUseBlock("bash", {"command": "touch made.txt"}, id="toolu_b1")),
    )
    async with agent(fake_anthropic, tmp_path) as first:
        (first.workdir / "a.txt").write_text("hello\n")
        session = await first.new()
        sid = session.session_id
        await asyncio.wait_for(first.conn.set_session_mode(session_id=sid, mode_id="unrestricted"), TIMEOUT)
        first.prompt(sid, "make a file")
        await first.editor.wait_until(lambda: first.editor.asked)
    # the agent process has ended with the approval open; a new one over the same data directory
    fake_anthropic.enqueue(Reply.text_reply("made it"))
    async with agent(fake_anthropic, tmp_path, Editor(save=True)) as second:
        loaded = await asyncio.wait_for(second.conn.load_session(cwd=str(second.workdir), session_id=sid,
                                                                 mcp_servers=[]), TIMEOUT)
        assert loaded.modes.current_mode_id == "unrestricted"
        wire = second.editor.wire
        answer = next(i for i, m in enumerate(wire) if m["direction"] == "incoming" and m.get("id") == 1)
        replayed = [m["params"]["update"] for m in wire[:answer] if m.get("method") == "session/update"]
        kinds = [u["sessionUpdate"] for u in replayed]
        assert kinds[0] == "user_message_chunk" and replayed[0]["content"]["text"].endswith("make a file")
        assert "agent_message_chunk" in kinds
        calls = {u["toolCallId"]: u for u in replayed if u["sessionUpdate"] == "tool_call"}
        assert calls["toolu_r1"]["kind"] == "read" and "toolu_b1" in calls
        assert any(u.get("toolCallId") == "toolu_r1" and u.get("status") == "completed" for u in replayed)
        # the open approval is asked again, after the answer
        asked = await second.editor.wait_until(lambda: second.editor.asked and second.editor.asked[0])
        assert asked.tool_call.tool_call_id == "toolu_b1"
        asked_at = next(i for i, m in enumerate(wire) if m.get("method") == "session/request_permission")
        assert asked_at > answer
        second.editor.answer = lambda review: second.editor.option(review, "allow_once")  # its change (issue 36)
        asked.answer.set_result(second.editor.option(asked, "allow_once"))
        await second.editor.wait_until(lambda: "made it" in second.editor.text())
    assert (tmp_path / "work" / "made.txt").exists()


@pytest.mark.req("REQ-ACP-012")
async def test_loading_an_unknown_session_is_refused(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    import acp

    async with agent(fake_anthropic, tmp_path) as a:
        with pytest.raises(acp.RequestError) as refused:
            await asyncio.wait_for(a.conn.load_session(cwd=str(a.workdir), session_id="no-such-session",
                                                       mcp_servers=[]), TIMEOUT)
        assert refused.value.code == -32002  # resource not found
        assert not [m for m in a.editor.wire if m.get("method") == "session/update"]


@pytest.mark.req("REQ-ACP-022")
async def test_a_session_that_cannot_be_loaded_is_not_said_to_be_missing(fake_anthropic: FakeAnthropic,
                                                                       tmp_path: Path) -> None:
    """A session the store holds but cannot read back (its stored state broken) is an internal error that says
    so, never "not found": the user would start over and lose the work that is still on the disk."""
    import sqlite3

    import acp

    fake_anthropic.enqueue(Reply.text_reply("hello"))
    async with agent(fake_anthropic, tmp_path) as a:
        sid = (await a.new()).session_id
        assert (await a.prompt(sid, "hi")).stop_reason == "end_turn"
    with sqlite3.connect(next((tmp_path / "data").glob("*.db"))) as db:
        assert db.execute("UPDATE conversation_states SET state_json = '{broken' WHERE conversation_id = ?",
                          (sid,)).rowcount == 1
    async with agent(fake_anthropic, tmp_path) as a:
        with pytest.raises(acp.RequestError) as refused:
            await asyncio.wait_for(a.conn.load_session(cwd=str(a.workdir), session_id=sid, mcp_servers=[]), TIMEOUT)
        assert refused.value.code == -32603, refused.value  # internal error, not -32002 (resource not found)
        said = str(refused.value.data)
        # what (which conversation), why (which row, what is wrong with it) and what next, in the message itself
        assert sid in said and "could not be read back" in said and "stored state" in said, said
        assert "Start a new conversation" in said and "restore the data directory" in said, said
