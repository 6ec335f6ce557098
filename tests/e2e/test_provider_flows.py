"""End-to-end on the OpenAI-compatible providers (issue 27): continuation at the context threshold, the agent
route, and Ollama's own context window, through the real server, the real ``openai`` SDK and the fake Chat
Completions server (tests/fake_openai.py; a fake: no hosted API nor Ollama can be reached from tests).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agent.triage_flow import LIST, UPDATE
from tests.agent.triage_flow import expected as expected_ids
from tests.e2e.harness import Session, last_seq, session, wait_idle
from tests.e2e.test_agent_route import agent_files, plan, records
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.fake_openai import FakeOpenAI, Recorded

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess

OPENAI_KEY = "sk-proj-e2e-flows-secret-0123456789"
GPT = "openai/gpt-4.1"  # a 1,047,576-token window (the table of hosted models)


async def send(s: Session, cid: str, text: str = "go", **extra: Any) -> int:
    mark = last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text, **extra})
    return mark


def tool_messages(request: Recorded) -> dict[str, str]:
    """The ``tool`` messages of a recorded Chat Completions request: ``{tool_call_id: content}``."""
    return {m["tool_call_id"]: m["content"] for m in request.messages if m["role"] == "tool"}


def openai_id(block: ToolUseBlock) -> str:
    return block.id.replace("toolu_", "call_")  # as the fake streams the call's id


@pytest.mark.req("REQ-MODEL-008", "REQ-BED-019", "REQ-BED-023")
async def test_the_warning_and_the_continuation_work_on_an_openai_model(
    fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    window = 1_047_576
    ls = ToolUseBlock("bash", {"command": "ls"}, id="toolu_late1")
    fake_openai.enqueue(
        Reply.text_reply("a long answer", usage={"prompt_tokens": int(window * 0.82), "cached_tokens": 0}),
        Reply.tool_reply(ls, usage={"prompt_tokens": int(window * 0.91), "cached_tokens": 0}),
        Reply.text_reply("SUMMARY: the parser needs a rewrite"),
        Reply.text_reply("on we go"),
    )
    env = {**fake_openai.env(OPENAI_KEY), "PHOENIX_MODEL": GPT}
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await s.new(approvalPolicy="auto")
        await wait_idle(s, cid, await send(s, cid, "first"))
        warning = await s.wait_event(lambda e: e["kind"] == "contextWarning" and e["conversationId"] == cid)
        assert warning["contextWindow"] == window and 0.8 <= warning["fraction"] < 0.9
        mark = await send(s, cid, "second")
        exhausted = await s.wait_event(lambda e: e["kind"] == "status" and e["status"] == "exhausted"
                                       and e["seq"] > mark)
        assert exhausted and not s.of("toolStart", cid), "no tool of the response past 90 % runs"
        started = await s.wait_event(lambda e: e["kind"] == "continuationStarted" and e["conversationId"] == cid)
        assert started["contextWindow"] == window and started["fraction"] >= 0.9
        continuation = await s.wait_event(lambda e: e["kind"] == "continuation" and e["conversationId"] == cid)
        assert continuation["summary"] == "SUMMARY: the parser needs a rewrite" and not continuation["fallback"]
        # the summary request went to the same provider, with the call it did not run answered
        summary = fake_openai.requests[2]
        assert summary.body["model"] == "gpt-4.1" and not fake_anthropic.requests
        told = tool_messages(summary)[openai_id(ls)]
        assert "Not executed" in told or "not run" in told.lower()
        assert summary.messages[-1]["role"] == "user" and "summary" in json.dumps(summary.messages[-1]).lower()
        new = await s.request("phoenix/newConversation", {"continueFrom": cid, "seedWithSummary": True})
        await wait_idle(s, new["conversationId"], await send(s, new["conversationId"], "go on"))
        assert "the parser needs a rewrite" in json.dumps(fake_openai.requests[-1].messages)
        conv = await s.request("phoenix/getConversation", {"conversationId": new["conversationId"]})
        assert conv["model"] == GPT and conv["contextUsage"]["contextWindow"] == window


@pytest.mark.req("REQ-MODEL-006", "REQ-AGENT-003", "REQ-AGENT-004")
async def test_the_agent_route_runs_a_plan_on_an_openai_model(
    fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    describe = ToolUseBlock("describe_tools", {"tools": [LIST, UPDATE]}, id="toolu_describe1")
    run = plan()
    run.id = "toolu_plan1"
    fake_openai.enqueue(Reply.tool_reply(describe), Reply.tool_reply(run),
                        Reply.text_reply("Triaged the urgent open records."))
    env = {**agent_files(tmp_path), **fake_openai.env(OPENAI_KEY), "PHOENIX_MODEL": GPT}
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await unrestricted(s, "auto")
        await wait_idle(s, cid, await send(s, cid, "triage the urgent open records", route="agent"), timeout=120)
        assert "".join(e["text"] for e in s.of("textDelta", cid)).endswith("Triaged the urgent open records.")
        assert [e["toolName"] for e in s.of("toolStart", cid)] == ["describe_tools", "run_plan"]
    first, second, third = fake_openai.requests
    assert not fake_anthropic.requests
    tools = {t["function"]["name"]: t["function"] for t in first.body["tools"]}
    assert {"describe_tools", "run_plan"} <= set(tools)
    assert f"{LIST} [read] records_list_records() -> dict" in tools["run_plan"]["description"]
    assert "cache_control" not in json.dumps(first.body)
    schemas = tool_messages(second)[openai_id(describe)]
    assert "records_update_record(**arguments)" in schemas and '"fields"' in schemas
    # the plan ran inside the engine against the real MCP server; the model got the compact result
    ids = expected_ids()
    assert sorted(r["id"] for r in records(tmp_path) if r["status"] == "triaged") == ids
    text = tool_messages(third)[openai_id(run)]
    assert not text.startswith("Error") and json.dumps(ids, separators=(",", ":")) in text and len(text) < 2000
