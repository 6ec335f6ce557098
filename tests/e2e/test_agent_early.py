"""End-to-end: a plan's read-only nodes start while the model still writes the plan (REQ-AGENT-041), through the
real server, the real script engine and the issues MCP server (its call log the witness), the model being the
fake Anthropic server streaming ``run_plan``'s input in small pieces.

The order is the witness, never a time: the fake holds the reply's last delta until a condition on the MCP
server's log is true (or a limit passes, which it records), so "the first node's call arrived before the model's
reply was complete" is something the fake saw, not a duration.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import last_seq, session, tool_results, wait_idle
from tests.e2e.test_agent_issues import COMMENT, COMMENTS, GET, LIST, agent_turn, issues_entry, issues_files
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = [pytest.mark.slow]

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


@pytest.mark.req("REQ-AGENT-041")
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


@pytest.mark.req("REQ-AGENT-041")
async def test_a_write_node_waits_for_the_whole_plan_while_the_read_before_it_starts(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    write = {"id": "w", "code": "issues_add_comment(number=1, body='seen ' + str(len(nums)))\n{'done': True}",
             "tools": [COMMENT], "depends_on": ["a"], "inputs": ["nums"], "outputs": ["done"]}
    after = {"id": "c", "code": "{'n': len(issues_list_comments(number=1))}", "tools": [COMMENTS],
             "depends_on": ["w"], "outputs": ["n"]}
    block = plan(READ, write, after)
    seen: list[list[str]] = []

    def read_arrived() -> bool:  # what the server had got when the model's reply was about to be complete
        seen.append(tools(tmp_path))
        return "list_issues" in seen[-1]

    async with session(fake_anthropic, tmp_path, env=env(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        requests = await agent_turn(s, cid, held(block, read_arrived), Reply.text_reply("done"))
        assert requests[0].held_until is True
        assert "add_comment" not in seen[-1] and "list_comments" not in seen[-1], seen[-1]
        result = str(tool_results(requests[1])[block.id]["content"])
        assert ": ok (" in result, result
    # the write ran once the plan was complete and checked, after its read; the read after the write ran then
    assert tools(tmp_path) == ["list_issues", "add_comment", "list_comments"]


@pytest.mark.req("REQ-AGENT-041")
async def test_a_plan_that_turns_out_invalid_runs_no_write_though_its_first_read_started(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    write = {"id": "w", "code": "issues_add_comment(number=1, body='never')\n{'done': True}", "tools": [COMMENT],
             "depends_on": ["a", "z"], "outputs": ["done"]}  # z: no such node, the whole plan is refused
    block = plan(READ, write)
    async with session(fake_anthropic, tmp_path, env=env(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        requests = await agent_turn(s, cid, held(block, lambda: "list_issues" in tools(tmp_path)),
                                    Reply.text_reply("sorry"))
        assert requests[0].held_until is True  # the read did start early
        result = str(tool_results(requests[1])[block.id]["content"])
        assert "The plan was not run" in result and "unknown nodes" in result, result
    assert tools(tmp_path) == ["list_issues"]
    assert json.loads((tmp_path / "issues.json").read_text())["comments"].get("1", []) == []


@pytest.mark.req("REQ-AGENT-041")
async def test_cancelling_the_turn_stops_a_node_started_early(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    many = {"id": "a", "code": "issues_list_issues(state='open', limit=1)\nfor k in range(400):\n"
                               "    issues_get_issue(number=1)\n{'k': 1}", "tools": [LIST, GET], "outputs": ["k"]}
    block = plan(many, {"id": "b", "code": "{'x': k}", "depends_on": ["a"], "inputs": ["k"], "outputs": ["x"]})
    async with session(fake_anthropic, tmp_path, env=env(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        # the node is busy calling get_issue; the model's reply is not complete (held for good)
        s.fake.enqueue(held(block, lambda: False, limit_s=120))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "go", "route": "agent"})
        for _ in range(6000):
            if tools(tmp_path).count("get_issue") >= 3:
                break
            await asyncio.sleep(0.01)
        await s.request("phoenix/cancel", {"conversationId": cid})
        await wait_idle(s, cid, mark, timeout=60)
        # another plan runs to its end: the stopped node's calls would go on arriving meanwhile
        other = plan({"id": "c", "code": "{'n': len(issues_list_comments(number=2))}", "tools": [COMMENTS],
                      "outputs": ["n"]})
        await agent_turn(s, cid, Reply.tool_reply(other), Reply.text_reply("ok"), text="again")
        await agent_turn(s, cid, Reply.tool_reply(plan({**other.input["nodes"][0], "id": "d"})),
                         Reply.text_reply("ok"), text="and again")
    log = tools(tmp_path)
    first_other = log.index("list_comments")
    assert "get_issue" not in log[first_other:], log[first_other - 3:]
    assert log.count("get_issue") < 400
