"""End-to-end on both providers (issue 27): the same scenarios on Anthropic and on an OpenAI-compatible server.

The real server runs as a subprocess behind a real LSP client; the model is the fake Anthropic server or the
fake Chat Completions server (tests/fake_openai.py, driven by the real ``openai`` SDK inside the server), both
scripted with the same ``Reply`` vocabulary. ``Model`` hides which one answers: where the scripted replies go,
and how the recorded requests show what the model was told (``tool_result`` blocks, or ``tool`` messages).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import Buffers, Session, last_seq, session, wait_idle
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.fake_openai import FakeOpenAI

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess

OPENAI_KEY = "sk-proj-e2e-openai-secret-0123456789"
PROVIDERS = ["anthropic", "openai"]


@dataclass
class Model:
    """The model of one scenario, on one provider."""

    provider: str
    anthropic: FakeAnthropic
    openai: FakeOpenAI

    @property
    def id(self) -> str:
        return "claude-sonnet-4-6" if self.provider == "anthropic" else "openai/gpt-4.1"

    def enqueue(self, *replies: Reply) -> None:
        (self.anthropic if self.provider == "anthropic" else self.openai).enqueue(*replies)

    @property
    def requests(self) -> list[Any]:
        return (self.anthropic if self.provider == "anthropic" else self.openai).requests

    def results(self, index: int) -> dict[str, tuple[str, bool]]:
        """What request ``index`` told the model of each tool call: ``{call id: (content, is error)}``, keyed
        by the id the script gave (``toolu_...``) on both providers."""
        request = self.requests[index]
        out: dict[str, tuple[str, bool]] = {}
        if self.provider == "anthropic":
            for block in request.messages[-1]["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    content = block["content"]
                    text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
                    out[block["tool_use_id"]] = (text, bool(block.get("is_error")))
            return out
        for message in request.messages:
            if message["role"] == "tool":
                text = message["content"]
                out[message["tool_call_id"].replace("call_", "toolu_", 1)] = (text, text.startswith("Error"))
        return out


@asynccontextmanager
async def started(model: Model, tmp_path: Path, **kw: Any) -> AsyncIterator[Session]:
    env = {**model.openai.env(OPENAI_KEY), "PHOENIX_MODEL": model.id, **kw.pop("env", {})}
    async with session(model.anthropic, tmp_path, env=env, **kw) as s:
        yield s


@pytest.fixture(params=PROVIDERS)
def model(request: pytest.FixtureRequest, fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI) -> Model:
    return Model(str(request.param), fake_anthropic, fake_openai)


async def send(s: Session, cid: str, text: str = "go") -> int:
    mark = last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
    return mark


@pytest.mark.req("REQ-MODEL-006", "REQ-MODEL-005")
async def test_text_streams_with_usage_on_every_provider(model: Model, tmp_path: Path) -> None:
    model.enqueue(Reply.text_reply("Hello there, how can I help?", deltas=5), Reply.text_reply("Again.", deltas=2))
    async with started(model, tmp_path) as s:
        cid = await s.new()
        await wait_idle(s, cid, await send(s, cid, "hi"))
        await wait_idle(s, cid, await send(s, cid, "and again"))
        assert "".join(e["text"] for e in s.of("textDelta", cid)) == "Hello there, how can I help?Again."
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert conv["model"] == model.id and [m["role"] for m in conv["messages"]] == ["user", "assistant"] * 2
        usage = s.of("usage", cid)[-1]
        request = usage["request"]
        assert request["outputTokens"] > 0
        assert request["inputTokens"] + request["cacheReadTokens"] + request["cacheWriteTokens"] > 0
        if model.provider == "openai":  # the byte-stable prefix is read from the provider's cache
            first, second = model.openai.requests
            assert second.usage["cached_tokens"] > 0
            assert usage["request"]["cacheReadTokens"] == second.usage["cached_tokens"]
            assert usage["request"]["inputTokens"] == second.usage["prompt_tokens"] - second.usage["cached_tokens"]
            assert json.dumps(second.messages[: len(first.messages)]) == json.dumps(first.messages)
            assert usage["estimatedCost"] is not None  # a known hosted model has a price


@pytest.mark.req("REQ-MODEL-006", "REQ-BASH-008")
async def test_parallel_tool_calls_run_in_order_in_the_restricted_sandbox(model: Model, tmp_path: Path) -> None:
    read = ToolUseBlock("bash", {"command": "cat VERSION"}, id="toolu_read1")
    write = ToolUseBlock("bash", {"command": "echo plan > notes.txt"}, id="toolu_write1")
    model.enqueue(Reply.tool_reply(read, write, text="Looking."), Reply.text_reply("Version 4.2."))
    async with started(model, tmp_path) as s:
        (s.workdir / "VERSION").write_text("4.2\n")
        cid = await s.new(policy="auto")
        await wait_idle(s, cid, await send(s, cid, "which version?"))
        starts = [e["toolUseId"] for e in s.of("toolStart", cid)]
        assert [i.replace("call_", "toolu_", 1) for i in starts] == ["toolu_read1", "toolu_write1"]
        results = model.results(1)
        assert results["toolu_read1"] == ("4.2\n", False) or results["toolu_read1"][0].startswith("4.2")
        text, is_error = results["toolu_write1"]
        assert is_error and ("Read-only" in text or "Permission denied" in text)
        assert not (s.workdir / "notes.txt").exists(), "the Restricted write never reached the disk"
        assert "".join(e["text"] for e in s.of("textDelta", cid)).endswith("Version 4.2.")


@pytest.mark.req("REQ-MODEL-006", "REQ-BED-015")
async def test_upgrade_then_patch_with_an_approval_on_every_provider(model: Model, tmp_path: Path) -> None:
    upgrade = ToolUseBlock("request_mode_upgrade", {"reason": "I need to fix a.txt"}, id="toolu_up1")
    fix = ToolUseBlock("patch", {"path": "a.txt", "patches": [{"operation": "append_eof", "newText": "two\n"}]},
                       id="toolu_fix1")
    other = ToolUseBlock("patch", {"path": "a.txt", "patches": [{"operation": "append_eof", "newText": "bad\n"}]},
                         id="toolu_bad1")
    model.enqueue(Reply.tool_reply(upgrade), Reply.tool_reply(fix, other), Reply.text_reply("done"))
    async with started(model, tmp_path) as s:
        (s.workdir / "a.txt").write_text("one\n")
        s.on_apply_edit = Buffers(s).apply
        cid = await s.new(policy="interactive")
        mark = await send(s, cid, "fix a.txt")
        await s.wait_event(lambda e: e["kind"] == "upgradeRequested" and e["seq"] > mark)
        await s.request("phoenix/respondToModeUpgrade", {"conversationId": cid, "approve": True})
        first = await s.wait_event(lambda e: e["kind"] == "approvalRequested" and e["seq"] > mark)
        await s.request("phoenix/respondToApproval", {"conversationId": cid, "toolUseId": first["toolUseId"],
                                                      "decision": "allow"})
        second = await s.wait_event(lambda e: e["kind"] == "approvalRequested" and e["seq"] > first["seq"])
        assert "+two" in first["diff"] and "+bad" in second["diff"]  # asked in the model's order
        await s.request("phoenix/respondToApproval", {"conversationId": cid, "toolUseId": second["toolUseId"],
                                                      "decision": "deny"})
        await wait_idle(s, cid, mark)
        assert (s.workdir / "a.txt").read_text() == "one\ntwo\n"
        assert model.results(1)["toolu_up1"][0].startswith("The user approved the upgrade")
        results = model.results(2)
        assert results["toolu_fix1"][1] is False and results["toolu_bad1"][1] is True
        assert "denied" in results["toolu_bad1"][0]


@pytest.mark.req("REQ-MODEL-009", "REQ-MODEL-010")
async def test_a_rate_limit_is_retried_and_a_401_names_the_variable(model: Model, tmp_path: Path) -> None:
    model.enqueue(Reply.error(429, "slow down", retry_after="0"), Reply.text_reply("after the wait"),
                  Reply.error(401, f"Incorrect API key provided: {OPENAI_KEY}"))
    async with started(model, tmp_path) as s:
        cid = await s.new()
        await wait_idle(s, cid, await send(s, cid, "hi"))
        assert s.of("retry", cid) and "".join(e["text"] for e in s.of("textDelta", cid)) == "after the wait"
        mark = await send(s, cid, "again")
        failed = await s.wait_event(lambda e: e["kind"] == "status" and e["status"] == "error" and e["seq"] > mark)
        variable = "ANTHROPIC_API_KEY" if model.provider == "anthropic" else "OPENAI_API_KEY"
        errors = [e for e in s.of("error", cid) if e["seq"] > mark]
        assert variable in json.dumps([*errors, failed])
        everything = json.dumps(s.events)
    assert OPENAI_KEY not in everything
    stored = b"".join(p.read_bytes() for p in s.data_dir.rglob("*") if p.is_file())
    assert OPENAI_KEY.encode() not in stored


@pytest.mark.req("REQ-MODEL-010")
async def test_the_openai_key_is_redacted_from_a_file_a_tool_read(fake_anthropic: FakeAnthropic,
                                                                   fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    model = Model("openai", fake_anthropic, fake_openai)
    model.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": "cat .env"}, id="toolu_env1")),
                  Reply.text_reply(f"The key is {OPENAI_KEY}."))
    async with started(model, tmp_path) as s:
        (s.workdir / ".env").write_text(f"OPENAI_API_KEY={OPENAI_KEY}\n")
        cid = await s.new(policy="auto")
        await wait_idle(s, cid, await send(s, cid, "read .env"))
        told = model.results(1)["toolu_env1"][0]
        assert OPENAI_KEY not in told and "[REDACTED]" in told  # never sent back to the model
        assert OPENAI_KEY not in json.dumps(s.events)  # nor shown, even when the model says it
    db = next(s.data_dir.rglob("*.db"))
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT * FROM events").fetchall()
    assert OPENAI_KEY not in json.dumps(rows, default=str)


@pytest.mark.req("REQ-MODEL-005", "REQ-MODEL-003")
async def test_switching_provider_mid_conversation_translates_the_history(
    fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": "echo one"}, id="toolu_a1")),
                           Reply.text_reply("Anthropic saw one."))
    fake_openai.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": "echo two"}, id="toolu_o1")),
                        Reply.text_reply("OpenAI saw two."))
    fake_anthropic.enqueue(Reply.text_reply("Back on Anthropic."))
    model = Model("anthropic", fake_anthropic, fake_openai)
    async with started(model, tmp_path) as s:
        cid = await s.new(policy="auto")
        await wait_idle(s, cid, await send(s, cid, "first"))
        switched = await s.request("phoenix/setModel", {"conversationId": cid, "model": "openai/gpt-4.1"})
        assert switched["changed"] is True and switched["contextWindow"] == 1_047_576
        await wait_idle(s, cid, await send(s, cid, "second"))
        await s.request("phoenix/setModel", {"conversationId": cid, "model": "claude-sonnet-4-6"})
        await wait_idle(s, cid, await send(s, cid, "third"))
    sent = fake_openai.requests[0].messages
    assert sent[0]["role"] == "system"
    calls = [m for m in sent if m["role"] == "assistant" and m.get("tool_calls")]
    assert calls[0]["tool_calls"][0]["id"] == "toolu_a1"
    assert json.loads(calls[0]["tool_calls"][0]["function"]["arguments"]) == {"command": "echo one"}
    tool = next(m for m in sent if m["role"] == "tool")
    assert tool["tool_call_id"] == "toolu_a1" and tool["content"].startswith("one")
    back = fake_anthropic.requests[-1].messages
    uses = [b for m in back if m["role"] == "assistant" for b in m["content"] if b.get("type") == "tool_use"]
    assert [u["id"] for u in uses] == ["toolu_a1", "call_o1"]
    results = [b for m in back if m["role"] == "user" for b in m["content"] if b.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["toolu_a1", "call_o1"]
    assert "OpenAI saw two." in json.dumps(back) and fake_anthropic.requests[-1].body["model"] == "claude-sonnet-4-6"


@pytest.mark.req("REQ-MODEL-007", "REQ-MODEL-008")
async def test_models_are_listed_by_provider_and_ids_validated(
    fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    model = Model("anthropic", fake_anthropic, fake_openai)
    async with started(model, tmp_path) as s:
        for _ in range(20):  # each call waits up to 1.5 s; a list later than that (a loaded machine) fills the next
            listed = await s.request("phoenix/listModels", {})
            if any(p["listed"] for p in listed.get("providers", [])):
                break
        ours = {m["id"]: m for m in listed["models"] if m.get("provider") == "openai"}
        assert set(ours) == {"openai/gpt-4.1", "openai/meta-llama/llama-3.3-70b"}
        assert ours["openai/meta-llama/llama-3.3-70b"]["contextWindow"] == 131_072
        assert ours["openai/gpt-4.1"]["contextWindow"] == 1_047_576
        assert any(p["provider"] == "openai" and p["listed"] for p in listed["providers"])
        bad = await s.error("phoenix/newConversation", {"workingDirectory": str(s.workdir), "model": "nosuch/x"})
        assert bad.data.get("field") == "model" and "not configured" in bad.message
        cid = await s.new()
        refused = await s.error("phoenix/setModel", {"conversationId": cid, "model": "azure/gpt-4o"})
        assert "AZURE_OPENAI_ENDPOINT" in refused.message
        ok = await s.new(model="openai/meta-llama/llama-3.3-70b")
        conv = await s.request("phoenix/getConversation", {"conversationId": ok})
        assert conv["model"] == "openai/meta-llama/llama-3.3-70b"


@pytest.mark.req("REQ-MODEL-007", "REQ-MODEL-011")
async def test_a_bad_model_setting_or_providers_file_is_reported_and_anthropic_keeps_working(
    fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    bad_file = tmp_path / "providers.json"
    bad_file.write_text('{"providers": {"router": {"baseUrl": "https://llm.example.com/v1", "apiKey": "sk-1234"}}}')
    fake_anthropic.enqueue(Reply.text_reply("Anthropic still answers."))
    model = Model("anthropic", fake_anthropic, fake_openai)
    env = {"PHOENIX_MODEL": "nosuch/model", "PHOENIX_PROVIDERS": str(bad_file)}
    async with started(model, tmp_path, env=env) as s:
        cid = await s.new()
        await wait_idle(s, cid, await send(s, cid, "hi"))
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert conv["model"] == "claude-sonnet-4-6"
        assert "".join(e["text"] for e in s.of("textDelta", cid)) == "Anthropic still answers."
        warnings = [m.message for m in s.client.messages]
    assert any("nosuch/model" in w and "claude-sonnet-4-6" in w for w in warnings), warnings
    assert any(str(bad_file) in w and "providers.router.apiKey" in w for w in warnings), warnings


@pytest.mark.req("REQ-MODEL-006", "REQ-MODEL-002")
async def test_sub_agents_answer_on_their_parents_provider(
    fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    from phoenix_lsp.server.prompts import SUBAGENT

    def route(body: dict[str, Any]) -> Reply | None:
        first = body["messages"][0]
        if first["role"] != "system" or SUBAGENT not in first["content"]:
            return None  # the parent's replies come from the queue
        task = body["messages"][1]["content"]
        return Reply.tool_reply(ToolUseBlock("submit_result", {"result": f"done: {task}"}))

    fake_openai.handler = route
    fake_openai.enqueue(Reply.tool_reply(ToolUseBlock("spawn_agents", {"tasks": ["count a", "count b"]},
                                                      id="toolu_spawn")), Reply.text_reply("Both done."))
    model = Model("openai", fake_anthropic, fake_openai)
    async with started(model, tmp_path) as s:
        cid = await s.new(policy="auto")
        await wait_idle(s, cid, await send(s, cid, "split the work"))
        assert "".join(e["text"] for e in s.of("textDelta", cid)).endswith("Both done.")
    assert not fake_anthropic.requests, "no sub-agent went to Anthropic"
    told = model.results(-1)["toolu_spawn"][0]
    assert "done: count a" in told and "done: count b" in told
