"""session/cancel while a permission request is open: a refusal, nothing runs, the prompt ends at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import acp
import pytest

from tests.acp.harness import TIMEOUT, agent
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the agent as a subprocess


@pytest.mark.req("REQ-ACP-011", "REQ-ACP-004")
async def test_cancel_during_an_open_permission_request(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": "touch made.txt"}, id="toolu_b1")))
    async with agent(fake_anthropic, tmp_path) as a:
        session = await a.new()
        sid = session.session_id
        await asyncio.wait_for(a.conn.set_session_mode(session_id=sid, mode_id="unrestricted"), TIMEOUT)
        running = a.prompt(sid, "make a file")
        asked = await a.editor.wait_until(lambda: a.editor.asked and a.editor.asked[0])
        with pytest.raises(acp.RequestError) as busy:  # REQ-ACP-004: a second prompt meanwhile is refused
            await a.prompt(sid, "and another thing")
        assert "busy" in str(busy.value.data)
        await a.conn.cancel(session_id=sid)
        asked.answer.set_result(None)  # the client answers its open request: cancelled
        assert (await running).stop_reason == "cancelled"
        assert a.editor.statuses("toolu_b1")[-1] == "failed"
        # the conversation takes the next prompt: the cancel left nothing running
        fake_anthropic.enqueue(Reply.text_reply("ready"))
        assert (await a.prompt(sid, "again")).stop_reason == "end_turn"
    assert not (tmp_path / "work" / "made.txt").exists()  # the witness: nothing ran
    assert len(fake_anthropic.requests) == 2  # no request to the model between the cancel and the next prompt
