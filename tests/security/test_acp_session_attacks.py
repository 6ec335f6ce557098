"""Attacks on issue 38's ACP methods (session/list, session/set_config_option): a hostile client against
``phoenix-lsp acp`` as a subprocess, driven by the ACP SDK's own client side. What must hold: a listing names one
project folder's sessions only, held to the session-folder rule, and never a pasted key; a cursor, a model id or a
route from the client is bounded before it is used and refused saying why, with nothing changed on the disk; the
agent keeps serving."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import acp
import pytest

from tests.acp.harness import API_KEY, TIMEOUT, agent, received
from tests.fake_anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.slow  # each test starts the agent as a subprocess


async def refused(call: Any) -> acp.RequestError:
    with pytest.raises(acp.RequestError) as info:
        await asyncio.wait_for(call, TIMEOUT)
    return info.value


@pytest.mark.req("REQ-ACP-026", "REQ-ACP-016")
async def test_a_listing_is_one_project_folders_and_never_shows_a_pasted_key(fake_anthropic: FakeAnthropic,
                                                                            tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    fake_anthropic.enqueue(Reply.text_reply("noted"))
    async with agent(fake_anthropic, tmp_path) as a:
        sid = (await a.new()).session_id
        hidden = (await asyncio.wait_for(a.conn.new_session(cwd=str(other), mcp_servers=[]), TIMEOUT)).session_id
        assert (await a.prompt(sid, f"my key is {API_KEY} keep it")).stop_reason == "end_turn"
        listed = await asyncio.wait_for(a.conn.list_sessions(cwd=str(a.workdir)), TIMEOUT)
        assert [s.session_id for s in listed.sessions] == [sid]
        assert API_KEY not in (listed.sessions[0].title or "") and "keep it" in (listed.sessions[0].title or "")
        # a folder the rule refuses lists nothing: not the whole store, not a parent's sessions
        for cwd in ("/", "/..", "work", str(tmp_path / "missing"), str(Path.home())):
            error = await refused(a.conn.list_sessions(cwd=cwd))
            assert error.code == -32602 and "cwd" in error.data["message"], (cwd, error.data)
        parent = await asyncio.wait_for(a.conn.list_sessions(cwd=str(tmp_path)), TIMEOUT)
        assert parent.sessions == []  # the sessions of folders below it are theirs
        # a cursor is bounded before it is decoded, and a forged one is only a place in this folder's list
        for cursor in ("A" * 100_000, "%%%", base64.urlsafe_b64encode(b"[1, 2, 3]").decode(),
                       base64.urlsafe_b64encode(json.dumps({"id": hidden}).encode()).decode()):
            error = await refused(a.conn.list_sessions(cwd=str(a.workdir), cursor=cursor))
            assert error.code == -32602 and len(json.dumps(error.data)) < 2_000, error.data
        forged = base64.urlsafe_b64encode(json.dumps([1e300, "~"]).encode()).decode()
        page = await asyncio.wait_for(a.conn.list_sessions(cwd=str(a.workdir), cursor=forged), TIMEOUT)
        assert hidden not in [s.session_id for s in page.sessions]
        sent = received(a.editor)
    assert API_KEY not in sent  # the witness: nothing the client received holds the key
    assert hidden not in json.dumps([m for m in json.loads(sent) if "result" in m
                                     and "sessions" in (m.get("result") or {})])


@pytest.mark.req("REQ-ACP-024", "REQ-ACP-016")
async def test_hostile_config_values_are_refused_and_change_nothing(fake_anthropic: FakeAnthropic,
                                                                   tmp_path: Path) -> None:
    async with agent(fake_anthropic, tmp_path) as a:
        sid = (await a.new()).session_id
        for config_id, value in (("model", "m" * 300_000), ("model", "claude\nsonnet"),
                                 ("model", "nowhere/some-model"), ("route", "../../etc/passwd"),
                                 ("route", "A" * 100_000), ("mode", "unrestricted\u0000"), ("../mode", "x")):
            error = await refused(a.conn.set_config_option(config_id=config_id, session_id=sid, value=value))
            assert error.code == -32602, (config_id, value[:40], error)
            assert len(json.dumps(error.data)) < 4_000, (config_id, len(json.dumps(error.data)))
        error = await refused(a.conn.set_config_option(config_id="mode", session_id=sid, value=True))
        assert error.code == -32602 and "boolean" in error.data["message"]
        fake_anthropic.enqueue(Reply.text_reply("still serving"))
        assert (await a.prompt(sid, "hello")).stop_reason == "end_turn"
        assert fake_anthropic.requests[-1].body["model"] == "claude-sonnet-4-6"  # the model did not change
        modes = [u for u in a.editor.updates if u.session_update == "current_mode_update"]
        assert modes == []  # nor the mode
    assert not (tmp_path / "data" / "ui_settings.json").exists()  # nor the route: nothing was written
