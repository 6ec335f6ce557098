"""``session/list`` (this folder's conversations, paged) and ``session/close`` (what runs for the session ends, the
store keeps it), driven by the ACP SDK's own client side (issue 38)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import acp
import pytest

from phoenix_lsp.server.acp.listing import PAGE_SIZE
from tests.acp.harness import TIMEOUT, agent
from tests.fake_anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.slow  # each test starts the agent as a subprocess


@pytest.mark.req("REQ-ACP-026")
async def test_session_list_pages_through_this_folders_sessions_and_load_resumes_one(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    fake_anthropic.enqueue(Reply.text_reply("hello back"))
    async with agent(fake_anthropic, tmp_path) as a:
        init = a.editor.initialized  # type: ignore[attr-defined]
        assert init.agent_capabilities.session_capabilities.list is not None
        assert init.agent_capabilities.session_capabilities.close is not None
        made = [(await a.new()).session_id for _ in range(PAGE_SIZE + 2)]
        elsewhere = (await asyncio.wait_for(a.conn.new_session(cwd=str(other), mcp_servers=[]), TIMEOUT)).session_id
        first = made[0]
        assert (await a.prompt(first, "hello from the first session")).stop_reason == "end_turn"
    async with agent(fake_anthropic, tmp_path) as b:  # a restart: the store has them all
        page = await asyncio.wait_for(b.conn.list_sessions(cwd=str(b.workdir)), TIMEOUT)
        assert len(page.sessions) == PAGE_SIZE and page.next_cursor
        rest = await asyncio.wait_for(b.conn.list_sessions(cwd=str(b.workdir), cursor=page.next_cursor), TIMEOUT)
        assert rest.next_cursor is None
        listed = [s.session_id for s in page.sessions + rest.sessions]
        assert sorted(listed) == sorted(made) and elsewhere not in listed  # this folder's only, each once
        assert listed[0] == first  # the most recently updated first
        top = page.sessions[0]
        assert top.cwd == str(b.workdir) and top.title == "hello from the first session" and top.updated_at
        times = [s.updated_at for s in page.sessions + rest.sessions]
        assert times == sorted(times, reverse=True)
        unfiltered = await asyncio.wait_for(b.conn.list_sessions(), TIMEOUT)  # the agent's own folder
        assert unfiltered.sessions[0].session_id == first and elsewhere not in [s.session_id for s in
                                                                                unfiltered.sessions]
        there = await asyncio.wait_for(b.conn.list_sessions(cwd=str(other)), TIMEOUT)
        assert [s.session_id for s in there.sessions] == [elsewhere]
        with pytest.raises(acp.RequestError) as refused:
            await asyncio.wait_for(b.conn.list_sessions(cwd=str(b.workdir), cursor="not-a-cursor"), TIMEOUT)
        assert refused.value.code == -32602 and "cursor" in refused.value.data["message"]
        # resume the one picked from the list
        loaded = await asyncio.wait_for(b.conn.load_session(cwd=str(b.workdir), session_id=top.session_id,
                                                            mcp_servers=[]), TIMEOUT)
        assert loaded.modes.current_mode_id == "restricted"
        replayed = [u.content.text for u in b.editor.updates if u.session_update in ("user_message_chunk",
                                                                                      "agent_message_chunk")]
        assert replayed[0].endswith("hello from the first session") and "hello back" in replayed


@pytest.mark.req("REQ-ACP-027")
async def test_session_close_ends_what_runs_and_keeps_the_session(fake_anthropic: FakeAnthropic,
                                                                  tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.hanging("Let me think about", after_events=3, limit_s=TIMEOUT))
    async with agent(fake_anthropic, tmp_path) as a:
        sid = (await a.new()).session_id
        running = a.prompt(sid, "think hard")
        await a.editor.wait_until(lambda: a.editor.text())  # the model is streaming
        await asyncio.wait_for(a.conn.close_session(session_id=sid), TIMEOUT)
        assert (await running).stop_reason == "cancelled"
        # the witness outside the agent: the model's stream was dropped, not left running
        assert await fake_anthropic.await_for(lambda requests: requests[0].disconnected, TIMEOUT)
        with pytest.raises(acp.RequestError) as refused:
            await a.prompt(sid, "are you there?")
        assert "session/load" in refused.value.data["message"]
        assert len(fake_anthropic.requests) == 1
        # the store keeps it: loaded again, it takes the next prompt
        fake_anthropic.enqueue(Reply.text_reply("back again"))
        await asyncio.wait_for(a.conn.load_session(cwd=str(a.workdir), session_id=sid, mcp_servers=[]), TIMEOUT)
        assert "think hard" in "".join(u.content.text for u in a.editor.updates
                                       if u.session_update == "user_message_chunk")
        assert (await a.prompt(sid, "are you there?")).stop_reason == "end_turn"
        assert "back again" in a.editor.text()
