"""End-to-end: a plan's read-only nodes start while the model still writes the plan (REQ-AGENT-044), through the
real server, the real script engine and the issues MCP server (its call log the witness), the model being the
fake Anthropic server streaming ``run_plan``'s input in small pieces.

The order is the witness, never a time: the fake holds the reply's last delta until a condition on the MCP
server's log is true (or a limit passes, which it records), so "the first node's call arrived before the model's
reply was complete" is something the fake saw, not a duration.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import last_seq, session, tool_results, wait_idle
from tests.e2e.test_agent_issues import COMMENT, COMMENTS, LIST, agent_turn, issues_entry, issues_files
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.waiting import eventually

pytestmark = [pytest.mark.slow]

SEARCH = "mcp://issues/search_issues"
READ = {"id": "a", "code": "{'nums': [i['number'] for i in issues_list_issues(state='open', limit=5)]}",
        "tools": [LIST], "outputs": ["nums"]}


def env(tmp_path: Path) -> dict[str, str]:
    """The issues server with its call log (``calls.log``)."""
    entry = issues_entry(tmp_path / "issues.json", "--log", str(tmp_path / "calls.log"))
    return issues_files(tmp_path, entry=entry)


def calls(tmp_path: Path) -> list[dict[str, Any]]:
    """The tool calls that reached the issues server, in the order they arrived."""
    log = tmp_path / "calls.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def tools(tmp_path: Path) -> list[str]:
    return [call["tool"] for call in calls(tmp_path)]


def plan(*nodes: dict[str, Any], answer: bool = False) -> ToolUseBlock:
    """run_plan's call, its input streamed in pieces of about 8 characters (as a model writes it)."""
    block = ToolUseBlock("run_plan", {"goal": "issues", "answer": answer, "nodes": list(nodes)})
    block.json_chunks = max(1, len(block.json_text()) // 8)
    return block


def held(block: ToolUseBlock, until: Any, limit_s: float = 30.0) -> Reply:
    """The reply with the call whose last delta waits for ``until`` (the fake records whether it came true)."""
    return Reply.tool_reply(block, hold_last_delta=until, hold_limit_s=limit_s)


@pytest.mark.req("REQ-AGENT-044")
async def test_the_first_node_calls_its_tool_before_the_model_has_finished_writing_the_plan(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    later = {"id": "b", "code": "{'answer': 'Open: ' + ', '.join([str(n) for n in nums])}", "depends_on": ["a"],
             "inputs": ["nums"], "outputs": []}
    block = plan(READ, later, answer=True)
    async with session(fake_anthropic, tmp_path, env=env(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        requests = await agent_turn(s, cid, held(block, lambda: "list_issues" in tools(tmp_path)),
                                    Reply.text_reply("A SECOND TURN"))
        # the MCP server got the first node's call while the model still had the plan's last piece to send
        assert requests[0].held_until is True, tools(tmp_path)
        shown = "".join(e["text"] for e in s.of("textDelta", cid))
        assert shown.startswith("Open: ") and len(requests) == 1, shown
    assert tools(tmp_path) == ["list_issues"]  # run once: the plan's run took the early node's result


@pytest.mark.req("REQ-AGENT-044")
async def test_a_write_node_waits_for_the_whole_plan_while_the_read_before_it_starts(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    write = {"id": "w", "code": "issues_add_comment(number=1, body='seen ' + str(len(nums)))\n{'done': True}",
             "tools": [COMMENT], "depends_on": ["a"], "inputs": ["nums"], "outputs": ["done"]}
    after = {"id": "c", "code": "{'n': len(issues_list_comments(number=1))}", "tools": [COMMENTS],
             "depends_on": ["w"], "outputs": ["n"]}
    block = plan(READ, write, after)
    async with session(fake_anthropic, tmp_path, env=env(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        # the model's reply waits (at most 10 s) for a write to reach the server before it is complete: none may
        requests = await agent_turn(s, cid, held(block, lambda: "add_comment" in tools(tmp_path), limit_s=10),
                                    Reply.text_reply("done"))
        assert requests[0].held_until is False, tools(tmp_path)
        result = str(tool_results(requests[1])[block.id]["content"])
        assert ": ok (" in result, result
    # the write ran once the plan was complete and checked, after its read; the read after the write ran then
    assert tools(tmp_path) == ["list_issues", "add_comment", "list_comments"]


@pytest.mark.req("REQ-AGENT-044")
async def test_a_plan_that_turns_out_invalid_runs_no_write_though_its_first_read_started(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    write = {"id": "w", "code": "issues_add_comment(number=1, body='never')\n{'done': True}", "tools": [COMMENT],
             "depends_on": ["a"], "outputs": ["done"]}
    bad = {"id": "x", "code": "{'y': 1}", "depends_on": ["nope"], "outputs": ["y"]}  # the whole plan is refused
    block = plan(READ, write, bad)
    async with session(fake_anthropic, tmp_path, env=env(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        requests = await agent_turn(s, cid, held(block, lambda: "add_comment" in tools(tmp_path), limit_s=10),
                                    Reply.text_reply("sorry"))
        assert requests[0].held_until is False, tools(tmp_path)  # no write before the plan was complete
        result = str(tool_results(requests[1])[block.id]["content"])
        assert "The plan was not run" in result and "unknown nodes" in result, result
    assert tools(tmp_path) == ["list_issues"]  # the read started early; the write never ran
    assert json.loads((tmp_path / "issues.json").read_text())["comments"].get("1", []) == []


@pytest.mark.req("REQ-AGENT-044")
async def test_cancelling_the_turn_stops_a_node_started_early(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    """Two things stop it: the turn's cancel stops the early nodes (their worker killed), and the core, no longer
    waiting for the model, refuses their host calls; the witness (no call after the cancel) holds with either,
    so this test still passes with the first taken out (it fails with the early start off: nothing started)."""
    many = {"id": "a", "code": "for k in range(450):\n    issues_search_issues(label='bug', state='all')\n{'k': 1}",
            "tools": [SEARCH], "outputs": ["k"]}
    block = plan(many, {"id": "b", "code": "{'x': k}", "depends_on": ["a"], "inputs": ["k"], "outputs": ["x"]})
    async with session(fake_anthropic, tmp_path, env=env(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        # the node is busy calling search_issues; the model's reply is not complete (held for good)
        s.fake.enqueue(held(block, lambda: False, limit_s=120))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "go", "route": "agent"})
        # a fact no event reports (the MCP server's log): the one poller, and a failure if it never comes (the loop
        # here went on to the cancel after its count, and the test then proved less than it says)
        await eventually(lambda: tools(tmp_path).count("search_issues") >= 3, "the node's third search call", 60)
        await s.request("phoenix/cancel", {"conversationId": cid})
        await wait_idle(s, cid, mark, timeout=60)
        # another conversation's plans run to their end: the stopped node's calls would go on arriving meanwhile
        other = await unrestricted(s, "auto")
        for name in ("c", "d", "e"):
            node = {"id": name, "code": "{'n': len(issues_list_comments(number=2))}", "tools": [COMMENTS],
                    "outputs": ["n"]}
            await agent_turn(s, other, Reply.tool_reply(plan(node)), Reply.text_reply("ok"), text=name)
    log = tools(tmp_path)
    first_other = log.index("list_comments")
    assert "search_issues" not in log[first_other:], log[first_other - 3:]
    assert 3 <= log.count("search_issues") < 450
