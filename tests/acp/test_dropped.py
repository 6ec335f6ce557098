"""A dropped client (issue 28, REQ-ACP-017): the client's pipe closes while the model streams, while a sandboxed
command runs, while a permission request is open. The agent process ends by itself, nothing it started outlives
it, and the conversation is whole in the store: a new agent over the same data directory loads it."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.acp.harness import TIMEOUT, Agent, Editor, agent
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.waiting import eventually, exited

pytestmark = pytest.mark.slow  # each test starts the agent as a subprocess


def _running_below(pid: int, marker: str) -> list[int]:
    """The processes below ``pid`` whose command line holds ``marker`` (another test's agent may run the same)."""
    found = []
    for child in _descendants(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in command:
            found.append(child)
    return found


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` now (the sandboxed commands, MCP servers and workers the agent started)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        children = [p for p, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


async def _drop(a: Agent) -> int:
    """Close the client's end of the pipe and wait for the agent to end by itself (no signal is sent); nothing
    it started may outlive it."""
    started = _descendants(a.process.pid)
    a.process.stdin.close()
    code = await asyncio.wait_for(a.process.wait(), TIMEOUT)
    assert await exited(started, TIMEOUT) == [], "a process the agent started outlived it"
    return code


@pytest.mark.req("REQ-ACP-017", "REQ-ACP-012")
async def test_a_client_gone_while_the_model_streams(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.hanging("Let me think about", after_events=3, limit_s=TIMEOUT))
    async with agent(fake_anthropic, tmp_path) as first:
        sid = (await first.new()).session_id
        first.prompt(sid, "a long question")
        await first.editor.wait_until(lambda: first.editor.text())
        assert await _drop(first) == 0
    fake_anthropic.enqueue(Reply.text_reply("answered"))
    async with agent(fake_anthropic, tmp_path) as second:
        await asyncio.wait_for(second.conn.load_session(cwd=str(second.workdir), session_id=sid, mcp_servers=[]),
                               TIMEOUT)
        replayed = [u for u in second.editor.updates if u.session_update == "user_message_chunk"]
        assert replayed and replayed[0].content.text.endswith("a long question")
        assert (await second.prompt(sid, "again")).stop_reason == "end_turn"  # the conversation takes a prompt
        assert "answered" in second.editor.text()


@pytest.mark.req("REQ-ACP-017")
async def test_a_client_gone_while_a_sandboxed_command_runs(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    marker = "3017.25"
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": f"sleep {marker}"}, id="toolu_b1")))
    async with agent(fake_anthropic, tmp_path) as first:
        sid = (await first.new()).session_id  # Restricted: the command runs in the kernel sandbox
        first.prompt(sid, "wait a while")
        await first.editor.wait_until(lambda: "in_progress" in first.editor.statuses("toolu_b1"))
        await eventually(lambda: _running_below(first.process.pid, f"sleep {marker}"), "the command runs",
                         timeout=TIMEOUT)
        assert await _drop(first) == 0  # the command did not outlive the agent
    fake_anthropic.enqueue(Reply.text_reply("back"))
    async with agent(fake_anthropic, tmp_path) as second:
        await asyncio.wait_for(second.conn.load_session(cwd=str(second.workdir), session_id=sid, mcp_servers=[]),
                               TIMEOUT)
        assert [u.kind for u in second.editor.updates if u.session_update == "tool_call"] == ["execute"]
        assert (await second.prompt(sid, "again")).stop_reason == "end_turn"


@pytest.mark.req("REQ-ACP-017", "REQ-ACP-013")
async def test_a_client_gone_while_a_permission_request_is_open(fake_anthropic: FakeAnthropic,
                                                                tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": "touch made.txt"}, id="toolu_b1")))
    async with agent(fake_anthropic, tmp_path) as first:
        sid = (await first.new()).session_id
        await asyncio.wait_for(first.conn.set_session_mode(session_id=sid, mode_id="unrestricted"), TIMEOUT)
        first.prompt(sid, "make a file")
        await first.editor.wait_until(lambda: first.editor.asked)
        assert await _drop(first) == 0
    assert not (tmp_path / "work" / "made.txt").exists()  # a client that went away approved nothing
    fake_anthropic.enqueue(Reply.text_reply("made it"))
    async with agent(fake_anthropic, tmp_path, Editor(save=True)) as second:
        await asyncio.wait_for(second.conn.load_session(cwd=str(second.workdir), session_id=sid, mcp_servers=[]),
                               TIMEOUT)
        asked = await second.editor.wait_until(lambda: second.editor.asked and second.editor.asked[0])
        assert asked.tool_call.tool_call_id == "toolu_b1"  # asked again
        second.editor.answer = lambda review: second.editor.option(review, "allow_once")  # its change (issue 36)
        asked.answer.set_result(second.editor.option(asked, "allow_once"))
        await second.editor.wait_until(lambda: "made it" in second.editor.text())
    assert (tmp_path / "work" / "made.txt").exists()


@pytest.mark.req("REQ-ACP-017", "REQ-ACP-015")
async def test_a_client_gone_leaves_no_worker_nor_mcp_server_running(fake_anthropic: FakeAnthropic,
                                                                     tmp_path: Path) -> None:
    import json
    import sys

    from acp.schema import McpServerStdio

    from tests.agent.mcp_helpers import SERVER
    from tests.agent.triage_flow import LIST

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ui_settings.json").write_text(json.dumps({"route": "agent"}))
    server = McpServerStdio(name="records", command=sys.executable, args=[str(SERVER), "--data",
                                                                         str(tmp_path / "records.json")],
                            env=[])
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("describe_tools", {"tools": [LIST]}, id="toolu_d1")),
                           Reply.hanging("Looking at the records", after_events=3, limit_s=TIMEOUT))
    async with agent(fake_anthropic, tmp_path) as a:
        session = await asyncio.wait_for(a.conn.new_session(cwd=str(a.workdir), mcp_servers=[server]), TIMEOUT)
        a.prompt(session.session_id, "what can the records server do?")
        await a.editor.wait_until(lambda: a.editor.text())
        await eventually(lambda: _running_below(a.process.pid, "phoenix_lsp.agent.worker"), "the warm worker runs",
                         timeout=TIMEOUT)  # _drop checks that it, and every MCP server the route holds, ends
        assert await _drop(a) == 0
