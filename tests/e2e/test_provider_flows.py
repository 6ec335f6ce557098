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
        cid = await s.new(policy="auto")
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


def ollama_env(fake: FakeOpenAI, model: str = "ollama/tiny") -> dict[str, str]:
    return {"OLLAMA_HOST": fake.root, "PHOENIX_MODEL": model}


@pytest.mark.req("REQ-MODEL-012", "REQ-BED-019", "REQ-BED-023")
async def test_an_ollama_model_chosen_before_any_list_gets_ollamas_window_and_its_thresholds(
    fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    window = 8_192  # what Ollama reports; the assumed window for an unknown one is 32,768
    fake_openai.ollama = {"tiny": (window, False)}
    ls = ToolUseBlock("bash", {"command": "ls"}, id="toolu_late2")
    fake_openai.enqueue(
        Reply.text_reply("a long answer", usage={"prompt_tokens": 6_800, "cached_tokens": 0}),  # 83 %
        Reply.tool_reply(ls, usage={"prompt_tokens": 7_500, "cached_tokens": 0}),  # 92 %
        Reply.text_reply("SUMMARY: tiny context"),
    )
    async with session(fake_anthropic, tmp_path, env=ollama_env(fake_openai)) as s:
        cid = await s.new(policy="auto")  # the default model: no listModels was asked
        await wait_idle(s, cid, await send(s, cid, "first"))
        warning = await s.wait_event(lambda e: e["kind"] == "contextWarning" and e["conversationId"] == cid)
        assert warning["contextWindow"] == window
        assert s.of("usage", cid)[-1]["estimatedCost"]["usd"] == 0  # a local model's tokens cost nothing
        mark = await send(s, cid, "second")
        await s.wait_event(lambda e: e["kind"] == "status" and e["status"] == "exhausted" and e["seq"] > mark)
        assert not s.of("toolStart", cid)
        started = await s.wait_event(lambda e: e["kind"] == "continuationStarted" and e["conversationId"] == cid)
        assert started["contextWindow"] == window
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert conv["model"] == "ollama/tiny" and conv["contextUsage"]["contextWindow"] == window
        said = [m.message for m in s.client.log_messages if "ollama/tiny" in m.message]
    assert fake_openai.requests[0].body["model"] == "tiny" and fake_openai.show_calls >= 1
    assert any(f"{window:,} tokens" in m and "num_ctx" in m for m in said), said  # the size in use, said


@pytest.mark.req("REQ-MODEL-012", "REQ-MODEL-002")
async def test_new_conversation_answers_before_ollama_reports_and_the_window_follows(
    fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """The lookup runs in the background: the request that creates the conversation does not wait for it.
    Ollama's Modelfile sets num_ctx below the model's own length: that is the window in use."""
    import threading

    fake_openai.ollama = {"big": (131_072, False)}
    fake_openai.ollama_parameters = {"big": "temperature 0.2\nnum_ctx 16384\nstop \"<|eot|>\""}
    fake_openai.show_gate = threading.Event()
    env = {"OLLAMA_HOST": fake_openai.root}
    try:
        async with session(fake_anthropic, tmp_path, env=env) as s:
            cid = await s.new(model="ollama/big")  # answered while /api/show is held
            conv = await s.request("phoenix/getConversation", {"conversationId": cid})
            assert conv["model"] == "ollama/big" and conv["contextUsage"]["contextWindow"] == 32_768  # assumed
            fake_openai.show_gate.set()
            told = await s.wait_event(lambda e: e["kind"] == "usage" and e["conversationId"] == cid)
            assert told["contextWindow"] == 16_384 and told["usedTokens"] == 0
            conv = await s.request("phoenix/getConversation", {"conversationId": cid})
            assert conv["contextUsage"]["contextWindow"] == 16_384
            said = [m.message for m in s.client.log_messages if "ollama/big" in m.message]
    finally:
        fake_openai.show_gate.set()
    assert any("16,384 tokens" in m and "num_ctx" in m and "131,072" in m for m in said), said


@pytest.mark.req("REQ-MODEL-010", "REQ-MODEL-011", "REQ-SEC-001")
async def test_a_providers_file_key_never_reaches_tools_events_debug_logs_or_the_store(
    fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """The providers file may name its key's variable anything (here no word in it says "key"): the tools'
    environment goes without it like without the Anthropic key, and the key is redacted everywhere else."""
    secret = "rtr-e2e-4b1d9f0c7a2e6d58"
    providers = tmp_path / "providers.json"
    providers.write_text(json.dumps({"providers": {"router": {
        "baseUrl": fake_openai.base_url, "apiKey": "env:LLM_ROUTER_AUTH",
        "models": {"some/model": {"contextWindow": 65536}}}}}))
    fake_openai.expected_api_key = secret
    dump = ToolUseBlock("bash", {"command": "env; echo done"}, id="toolu_env2")
    fake_openai.enqueue(Reply.tool_reply(dump, text=f"Your key is {secret}."), Reply.text_reply("Checked."),
                        Reply.error(401, f"Incorrect API key provided: {secret}"))
    env = {"PHOENIX_PROVIDERS": str(providers), "LLM_ROUTER_AUTH": secret, "PHOENIX_MODEL": "router/some/model",
           "PHOENIX_LOG_LEVEL": "DEBUG"}
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await s.new(policy="auto")
        await wait_idle(s, cid, await send(s, cid, "show me the environment"))
        mark = await send(s, cid, "again")
        await s.wait_event(lambda e: e["kind"] == "status" and e["status"] == "error" and e["seq"] > mark)
        assert fake_openai.requests[0].api_key_sent() == secret  # the key was really in use
        told = tool_messages(fake_openai.requests[1])[openai_id(dump)]
        assert "done" in told and "LLM_ROUTER_AUTH" not in told  # the tool never had it
        errors = [e["message"] for e in s.of("error", cid)]
        assert any("LLM_ROUTER_AUTH" in m for m in errors), errors  # the 401 names the variable to set
        assert secret not in json.dumps(s.events)
        assert secret not in str([m.message for m in s.client.log_messages + s.client.messages])
    files = [p for p in s.data_dir.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".log") for p in files) and any(".db" in p.name for p in files)
    for path in files:
        assert secret.encode() not in path.read_bytes(), path.name
