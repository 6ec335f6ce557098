"""Prompt caching end to end (issue 16, specs/caching.md): the real server as a subprocess, the real SDK, and
the fake Messages API, which keeps the prefixes marked by breakpoints and bills each request from what it
really contains (tests/fake_anthropic.py). Whether a request "reads the previous prefix" is the fake's own
``cache_read_input_tokens``."""

from __future__ import annotations

import base64
import io
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.llm.models import DEFAULT_MODEL
from phoenix_lsp.llm.models import PRICES as DEFAULT_PRICES
from phoenix_lsp.server.prompts import SUBAGENT
from tests.e2e.harness import Session, last_seq, session, wait_idle
from tests.fake_anthropic import FakeAnthropic, RecordedRequest, Reply, ToolUseBlock, system_text

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess

APP = "".join(f"def handler_{i}(request):\n    return compute(request, {i})  # keeps the service going\n\n"
              for i in range(60))


def _is_sub(body: dict[str, Any]) -> bool:
    return SUBAGENT in system_text(body)


def _first_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


def _stripped(value: Any) -> Any:
    """A request part without its ``cache_control`` markers (the only thing allowed to move)."""
    if isinstance(value, list):
        return [_stripped(v) for v in value]
    if isinstance(value, dict):
        return {k: _stripped(v) for k, v in value.items() if k != "cache_control"}
    return value


def _cached(r: RecordedRequest) -> int:
    """What a request left in the cache for the next one: what it read plus what it wrote."""
    assert r.usage is not None
    return r.usage["cache_read_input_tokens"] + r.usage["cache_creation_input_tokens"]


def _assert_each_reads_the_previous(requests: list[RecordedRequest], who: str) -> None:
    for i, (before, after) in enumerate(itertools.pairwise(requests), start=1):
        assert after.usage is not None and before.usage is not None
        assert _cached(before) > 0, f"{who} request {i} cached nothing"
        assert after.usage["cache_read_input_tokens"] >= _cached(before), (
            f"{who} request {i + 1} did not read the prefix of request {i}: {before.usage} -> {after.usage}"
        )


async def _turn(s: Session, cid: str, text: str, timeout: float = 30.0) -> None:
    mark = last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
    await wait_idle(s, cid, mark, timeout)


def _sum(records: list[RecordedRequest]) -> dict[str, int]:
    names = {"inputTokens": "input_tokens", "outputTokens": "output_tokens",
             "cacheWriteTokens": "cache_creation_input_tokens", "cacheReadTokens": "cache_read_input_tokens"}
    return {wire: sum((r.usage or {}).get(api, 0) for r in records) for wire, api in names.items()}


@pytest.mark.req("REQ-CACHE-001", "REQ-CACHE-002", "REQ-CACHE-005", "REQ-CACHE-006", "REQ-PROTO-021")
async def test_every_request_reads_the_previous_prefix_through_a_whole_session_and_a_restart(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    """Tools, an upgrade, a patch, a restart, sub-agents and a continuation: every request after a
    conversation's first reads from the cache at least what the request before it had cached."""
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "app.py").write_text(APP)
    (tmp_path / "work" / "util.py").write_text(APP.replace("handler", "helper"))

    def agents(body: dict[str, Any]) -> Reply | None:
        if not _is_sub(body):
            return None  # the parent's replies come from the queue, in order
        if not any(m["role"] == "assistant" for m in body["messages"]):
            return Reply.tool_reply(ToolUseBlock("read_file", {"path": "util.py"}), text="Reading.")
        return Reply.tool_reply(ToolUseBlock("submit_result", {"result": f"{_first_text(body)}: fine"}))

    fake_anthropic.handler = agents
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("read_file", {"path": "app.py"}), text="Let me read it."),
        Reply.tool_reply(ToolUseBlock("bash", {"command": "wc -l app.py util.py"}), text="Counting."),
        Reply.text_reply("handler_7 looks wrong."),
        Reply.tool_reply(ToolUseBlock("request_mode_upgrade", {"reason": "fix handler_7"}), text="I need write."),
        Reply.tool_reply(ToolUseBlock("patch", {"path": "app.py", "patches": [
            {"operation": "replace", "oldText": "compute(request, 7)", "newText": "compute(request, 7, safe=True)"}
        ]})),
        Reply.text_reply("Patched."),
    )
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new(policy="auto")
        await _turn(s, cid, "look at app.py")
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "fix it"})
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        if conv["mode"] == "restricted":  # no sandbox here: already unrestricted, the call is answered at once
            await s.wait_event(lambda e: e["kind"] == "upgradeRequested" and e["seq"] > mark)
            await s.request("phoenix/respondToModeUpgrade", {"conversationId": cid, "approve": True})
        await wait_idle(s, cid, mark, 30)
        assert len(s.edits) == 1  # the patch went to the editor
    before_restart = len(fake_anthropic.requests)
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("spawn_agents", {"tasks": ["check util.py", "check app.py"]})),
        Reply.text_reply("Both helpers agree."),
        Reply.text_reply("SUMMARY: handler_7 fixed, helpers checked."),
    )
    async with session(fake_anthropic, tmp_path) as s:  # a new server process on the same store
        await _turn(s, cid, "ask two helpers to check")
        mark = last_seq(s, cid)
        await s.request("phoenix/triggerContinuation", {"conversationId": cid})
        await s.wait_event(lambda e: e["kind"] == "continuation" and e["conversationId"] == cid)
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        usage_events = [e for e in s.of("usage", cid) if e["seq"] > mark]

    records = fake_anthropic.requests
    assert all(r.status == 200 for r in records), [(r.status, r.usage) for r in records]
    parent = [r for r in records if not _is_sub(r.body)]
    subs = {task: [r for r in records if _is_sub(r.body) and _first_text(r.body) == task]
            for task in ("check util.py", "check app.py")}
    assert len(parent) == 9 and all(len(v) == 2 for v in subs.values())
    assert parent[-1].tool_names == parent[-2].tool_names  # the summary kept the prefix (caching is on)
    assert all(r.breakpoints <= 4 for r in records)
    assert all(r.breakpoints == 4 for r in parent[1:])
    _assert_each_reads_the_previous(parent, "parent")  # includes the first request after the restart
    for task, requests in subs.items():
        _assert_each_reads_the_previous(requests, task)
    first_after_restart = parent[before_restart]
    assert first_after_restart.usage is not None and first_after_restart.usage["cache_read_input_tokens"] > 0

    # totals: the parent's own requests plus its sub-agents', as the fake billed them, across the restart
    sub_records = [r for requests in subs.values() for r in requests]
    usage = conv["usage"]
    assert usage["total"] == {**_sum(records), "requests": 13}
    assert usage["subAgents"] == {**_sum(sub_records), "requests": 4}
    assert usage["request"] == {k: v for k, v in _sum(parent[-1:]).items()}
    price = DEFAULT_PRICES[DEFAULT_MODEL]
    total = usage["total"]
    expected = (total["inputTokens"] * price.input + total["outputTokens"] * price.output
                + total["cacheWriteTokens"] * price.write("5m") + total["cacheReadTokens"] * price.read()) / 1e6
    assert usage["estimatedCost"]["usd"] == pytest.approx(expected, abs=1e-6)
    assert usage["estimatedCost"]["isEstimate"] is True and "Estimate" in usage["estimatedCost"]["note"]
    # the usage event of the summary request carries the same numbers
    last = usage_events[-1]
    assert last["request"] == usage["request"] and last["total"] == usage["total"]
    assert {"usedTokens", "contextWindow", "fraction", "estimatedCost", "subAgents"} <= set(last)


@pytest.mark.req("REQ-CACHE-002", "REQ-BED-007")
async def test_a_restored_conversation_sends_the_same_bytes_as_before_the_restart(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (9, 7), (20, 130, 200)).save(buffer, "PNG")
    image = base64.b64encode(buffer.getvalue()).decode()
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("ünïcode notes\n" * 400)
    odd = ToolUseBlock("read_file", {"path": "notes.txt", "zeta": [1, 2.5, "é", None], "alpha": {"b": 1, "a": 2}})
    fake_anthropic.enqueue(Reply.tool_reply(odd, text="Reading… ✓"), Reply.text_reply("It is about ünïcode."))
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "what is in notes.txt? 🙂",
                                                "images": [{"mediaType": "image/png", "data": image}]})
        await wait_idle(s, cid, mark, 30)
        await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})  # a note, appended
    before = fake_anthropic.requests[-1]
    fake_anthropic.enqueue(Reply.text_reply("Still ünïcode."))
    async with session(fake_anthropic, tmp_path) as s:
        await _turn(s, cid, "and now?")
    after = fake_anthropic.requests[-1]

    def dump(value: Any) -> str:
        return json.dumps(_stripped(value), ensure_ascii=False, separators=(",", ":"))

    assert dump(after.body["tools"]) == dump(before.body["tools"])
    assert dump(after.body["system"]) == dump(before.body["system"])
    sent = before.messages
    assert dump(after.messages[: len(sent)]) == dump(sent)  # every message sent before, byte for byte
    assert any(b["type"] == "image" for b in after.messages[0]["content"])
    assert after.usage is not None and before.usage is not None
    assert after.usage["cache_read_input_tokens"] >= _cached(before) > 0  # so the cache still hits


@pytest.mark.req("REQ-CACHE-004", "REQ-CACHE-007")
async def test_caching_off_sends_no_breakpoint_and_the_context_percentage_is_the_same(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "app.py").write_text(APP)
    fractions: dict[str, list[tuple[int, float]]] = {}
    for arm in ("off", "on"):
        first = len(fake_anthropic.requests)
        fake_anthropic.cache.clear()
        fake_anthropic.enqueue(
            Reply.tool_reply(ToolUseBlock("read_file", {"path": "app.py"}), usage={"output_tokens": 12}),
            Reply.text_reply("Read it.", usage={"output_tokens": 3}),
            Reply.text_reply("Again.", usage={"output_tokens": 2}),
        )
        async with session(fake_anthropic, tmp_path, data_dir=tmp_path / arm,
                           env={"PHOENIX_PROMPT_CACHE": arm}) as s:
            cid = await s.new()
            await _turn(s, cid, "read app.py")
            await _turn(s, cid, "once more")
            fractions[arm] = [(e["usedTokens"], e["fraction"]) for e in s.of("usage", cid)]
        requests = fake_anthropic.requests[first:]
        assert len(requests) == 3
        if arm == "off":
            assert all(r.breakpoints == 0 for r in requests)
            assert all(isinstance(r.body["system"], str) for r in requests)
            assert all(r.usage and r.usage["cache_read_input_tokens"] == 0 for r in requests)
        else:
            assert all(r.usage and r.usage["cache_read_input_tokens"] > 0 for r in requests[1:])
    assert fractions["on"] == fractions["off"] and len(fractions["on"]) == 3


@pytest.mark.req("REQ-CACHE-004", "REQ-CACHE-006", "REQ-PROTO-034")
async def test_ttl_and_prices_from_initialization_options_and_bad_values_reported(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    prices = {DEFAULT_MODEL: {"input": 10, "output": 100, "cacheWrite1h": 30, "cacheRead": 1}}
    fake_anthropic.enqueue(Reply.text_reply("hello", usage={"output_tokens": 5}), Reply.text_reply("again"))
    options = {"promptCacheTtl": "1h", "modelPrices": prices}
    async with session(fake_anthropic, tmp_path, init_options=options,
                       env={"PHOENIX_PROMPT_CACHE": "sometimes"}) as s:
        cid = await s.new()
        await _turn(s, cid, "hi")
        await _turn(s, cid, "hi again")
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        warnings = [m.message for m in s.client.messages]
    controls = [b["cache_control"] for r in fake_anthropic.requests
                for b in [*r.body["tools"], *r.body["system"], *(x for m in r.messages for x in m["content"])]
                if "cache_control" in b]
    assert controls and all(c == {"type": "ephemeral", "ttl": "1h"} for c in controls)
    total = conv["usage"]["total"]
    expected = (total["inputTokens"] * 10 + total["outputTokens"] * 100 + total["cacheWriteTokens"] * 30
                + total["cacheReadTokens"] * 1) / 1e6
    assert conv["usage"]["estimatedCost"]["usd"] == pytest.approx(expected, abs=1e-6)
    assert total["cacheReadTokens"] > 0 and total["cacheWriteTokens"] > 0
    bad = [w for w in warnings if "PHOENIX_PROMPT_CACHE" in w]
    assert bad and "'sometimes'" in bad[0] and "on or off" in bad[0]  # what, the default kept, what to set


@pytest.mark.req("REQ-CACHE-005", "REQ-CACHE-006")
async def test_cache_writes_are_priced_at_the_ttl_the_api_reports_across_a_ttl_change(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    """Written with the 1-hour TTL, then (after a restart with the default) with 5 minutes: the estimate prices
    each part at its own rate from the API's ``cache_creation`` split, not everything at the TTL of the day."""
    prices = {DEFAULT_MODEL: {"input": 10, "output": 100, "cacheWrite5m": 20, "cacheWrite1h": 30, "cacheRead": 1}}
    fake_anthropic.enqueue(Reply.text_reply("hello"), Reply.text_reply("again"))
    async with session(fake_anthropic, tmp_path, init_options={"promptCacheTtl": "1h", "modelPrices": prices}) as s:
        cid = await s.new()
        await _turn(s, cid, "hi")
    async with session(fake_anthropic, tmp_path, init_options={"modelPrices": prices}) as s:
        await _turn(s, cid, "and now?")
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
    hour, five = (sum((r.usage or {}).get(f"ephemeral_{ttl}_input_tokens", 0) for r in fake_anthropic.requests)
                  for ttl in ("1h", "5m"))
    total = conv["usage"]["total"]
    assert hour > 0 and five > 0 and hour + five == total["cacheWriteTokens"]
    assert total["cacheReadTokens"] > 0  # the second server read what the first wrote
    expected = (total["inputTokens"] * 10 + total["outputTokens"] * 100 + five * 20 + hour * 30
                + total["cacheReadTokens"] * 1) / 1e6
    assert conv["usage"]["estimatedCost"]["usd"] == pytest.approx(expected, abs=1e-6)


@pytest.mark.req("REQ-CACHE-003")
async def test_a_style_change_rewrites_the_prefix_once_but_still_reads_the_tools(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(*(Reply.text_reply(f"answer {i}") for i in range(4)))
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        await _turn(s, cid, "first")
        await _turn(s, cid, "second")
        await s.request("phoenix/setStyle", {"conversationId": cid, "style": "plan"})
        await _turn(s, cid, "third")
        await _turn(s, cid, "fourth")
    first, second, third, fourth = fake_anthropic.requests
    tools_only = sum(len(json.dumps(t, separators=(",", ":")).encode()) for t in _stripped(first.body["tools"])) // 4
    assert second.usage and second.usage["cache_read_input_tokens"] >= _cached(first)
    assert third.usage and tools_only * 0.9 < third.usage["cache_read_input_tokens"] < _cached(second)
    assert fourth.usage and fourth.usage["cache_read_input_tokens"] >= _cached(third)


@pytest.mark.req("REQ-CACHE-004")
async def test_a_request_below_the_models_minimum_is_sent_with_breakpoints_and_simply_not_cached(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("short"), Reply.text_reply("still short"))
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new(model="claude-haiku-4-5")  # caches nothing below 4,096 tokens
        await _turn(s, cid, "hi")
        await _turn(s, cid, "hi again")
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
    assert all(r.status == 200 and r.breakpoints >= 3 for r in fake_anthropic.requests)
    assert conv["status"] == "idle" and "error" not in conv
    assert conv["usage"]["total"]["cacheWriteTokens"] == 0 and conv["usage"]["total"]["cacheReadTokens"] == 0
    assert conv["usage"]["total"]["inputTokens"] > 2000  # all of it billed as plain input
