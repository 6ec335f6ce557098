"""End-to-end: a plan that renders the answer (REQ-AGENT-039), through the real server, the real script engine
and the issues MCP server of issue 25, the model being the fake Anthropic server.

With ``answer`` set, the last node's ``answer`` string is the turn's reply: the client receives it as the model's
text, the store keeps it as the assistant's message, and the model is asked once, not twice. A plan that fails,
or whose last node has no ``answer``, goes back to the model as before.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import Session, session
from tests.e2e.test_agent_issues import GET, LIST, agent_turn, issues_files
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = [pytest.mark.slow]

COUNT = "n = len(issues_list_issues(state='open', limit=5))\n{'answer': 'Open issues among the 5 newest: ' + str(n)}"


def plan(code: str, tools: list[str], *, answer: bool) -> ToolUseBlock:
    return ToolUseBlock("run_plan", {"goal": "count", "answer": answer, "nodes": [
        {"id": "n", "code": code, "tools": tools, "outputs": []}]})


def shown(s: Session, cid: str) -> str:
    """What the client was shown as the replies' text (every textDelta of the conversation)."""
    return "".join(e["text"] for e in s.of("textDelta", cid))


def stored(tmp_path: Path, cid: str) -> list[Any]:
    """The conversation's messages as the store's database holds them, in order."""
    [database] = [p for p in (tmp_path / "data").rglob("*") if p.is_file() and p.read_bytes()[:6] == b"SQLite"]
    with sqlite3.connect(database) as db:
        return [json.loads(row[0]) for row in db.execute(
            "SELECT json FROM messages WHERE conversation_id = ? ORDER BY idx", (cid,))]


@pytest.mark.req("REQ-AGENT-039", "REQ-AGENT-043")
async def test_a_plan_that_renders_its_answer_ends_the_turn_with_one_model_request(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=issues_files(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        # the second reply is what the model would say if it were asked again: it must not be
        requests = await agent_turn(s, cid, Reply.tool_reply(plan(COUNT, [LIST], answer=True)),
                                    Reply.text_reply("SECOND TURN"), text="how many open?")
        assert len(requests) == 1, [r.messages[-1] for r in requests]
        assert shown(s, cid) == "Open issues among the 5 newest: 5"
        history = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert [m["role"] for m in history["messages"]][-3:] == ["assistant", "user", "assistant"]
        # the next turn's request carries the plan, its result and the rendered reply, quoted as data in the
        # user's turn (its words came from tool data, REQ-AGENT-043), before the next message
        s.fake.enqueue(Reply.text_reply("yes"))
        await agent_turn(s, cid, text="sure?")
        last = s.fake.requests[-1].messages
        assert last[-2]["role"] == "assistant" and "run_plan" in json.dumps(last[-2])
        assert last[-1]["role"] == "user" and "Open issues among the 5 newest: 5" in json.dumps(last[-1])
        assert "sure?" in json.dumps(last[-1]["content"][-1])
        assert "SECOND TURN" not in json.dumps(last)
    # the store holds the turn: the plan's call, its result, the rendered reply as the assistant's message
    rows = [json.dumps(row) for row in stored(tmp_path, cid)]
    [at] = [i for i, row in enumerate(rows) if "Open issues among the 5 newest: 5" in row and "run_plan" not in row
            and '"role":"assistant"' in row.replace(" ", "")]
    assert '"tool_use' in rows[at - 2] + rows[at - 1] and "sure?" in rows[at + 1], rows[at - 2:]


@pytest.mark.req("REQ-AGENT-039")
async def test_without_answer_or_when_the_plan_fails_the_model_writes_the_reply(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=issues_files(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        for block in (plan(COUNT, [LIST], answer=False),  # not asked for: the results go to the model
                      plan("{'answer': 'never: ' + str(issues_get_issue(number=999999))}", [GET], answer=True),
                      plan("{'count': 3}", [], answer=True)):  # no 'answer' in the last node's result
            requests = await agent_turn(s, cid, Reply.tool_reply(block), Reply.text_reply("the model's reply"))
            assert len(requests) == 2, block.input
        assert shown(s, cid) == "the model's reply" * 3


def comments_on(tmp_path: Path, number: int) -> list[str]:
    """The issues server's own data file: the comments it stored on an issue (the witness outside the server)."""
    path = tmp_path / "issues.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    return [c["body"] for c in data.get("comments", {}).get(str(number), [])]


SCRIPTS = ["rows = issues_list_issues(state='open', limit=5)",
           "issues_add_comment(number=1, body=f'{len(rows)} open')\nf'Posted on #1: {len(rows)} open'"]


@pytest.mark.req("REQ-AGENT-045")
async def test_a_plan_written_as_scripts_runs_and_its_last_expression_is_the_reply(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=issues_files(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        requests = await agent_turn(s, cid, Reply.tool_reply(ToolUseBlock("run_plan", {"nodes": SCRIPTS})),
                                    Reply.text_reply("SECOND TURN"), text="post the count")
        # the route shows run_plan's nodes as scripts; the server read each node's tools, inputs and outputs
        [run_plan] = [t for t in requests[0].body["tools"] if t["name"] == "run_plan"]
        assert run_plan["input_schema"]["properties"] == {"nodes": {"type": "array", "items": {"type": "string"}}}
        assert len(requests) == 1 and shown(s, cid) == "Posted on #1: 5 open"
        assert comments_on(tmp_path, 1) == ["5 open"]


@pytest.mark.req("REQ-AGENT-045")
async def test_a_write_in_a_script_is_still_refused_in_restricted_mode(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=issues_files(tmp_path)) as s:
        cid = await s.new()  # Restricted
        alias = ["post = issues_add_comment\npost(number=1, body='from a script')\n'posted'"]
        requests = await agent_turn(s, cid, Reply.tool_reply(ToolUseBlock("run_plan", {"nodes": alias})),
                                    Reply.text_reply("I could not post."), text="post it")
        assert len(requests) == 2 and "Restricted" in json.dumps(requests[1].messages[-1])
        assert shown(s, cid) == "I could not post."
        assert comments_on(tmp_path, 1) == []  # the issues server stored nothing
