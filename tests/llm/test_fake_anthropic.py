"""The fake Anthropic server itself: wire format, scripting, records, subprocess mode.

The SDK is the judge of the wire format: if the real SDK parses what the fake sends, the fake is right
enough for the server's tests.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.llm.client import LlmClient, LlmFailure, LlmRequest, LlmSuccess
from tests.fake_anthropic import (
    FakeAnthropic,
    RecordedRequest,
    Reply,
    ToolUseBlock,
    _Handler,
    count_tokens,
    system_text,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
#: A hang guard for a read from the fake and for a wait on its records: long on purpose (a passing test never
#: waits it out; 5 s was too short on a machine loaded to 20).
GUARD_S = 30.0


def req(text: str = "hi", tools: list[dict[str, Any]] | None = None) -> LlmRequest:
    return LlmRequest(model="claude-test-model", system="", messages=[{"role": "user", "content": text}], tools=tools)


async def test_non_streaming_answer_parses_with_the_sdk(fake_anthropic: FakeAnthropic) -> None:
    from anthropic import AsyncAnthropic

    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("read_file", {"path": "x"}, id="toolu_1"), text="Hm."))
    sdk = AsyncAnthropic(api_key="k", base_url=fake_anthropic.base_url, max_retries=0)
    msg = await sdk.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    await sdk.close()
    assert msg.stop_reason == "tool_use"
    assert msg.content[0].type == "text" and msg.content[0].text == "Hm."
    assert msg.content[1].type == "tool_use" and msg.content[1].input == {"path": "x"}
    assert fake_anthropic.requests[0].body.get("stream") is None


async def test_handler_routes_by_content_and_falls_back_to_queue(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.handler = lambda body: (
        Reply.text_reply("routed") if body["messages"][0]["content"] == "special" else None
    )
    fake_anthropic.enqueue(Reply.text_reply("queued"))
    client = LlmClient(api_key="k", base_url=fake_anthropic.base_url)
    a = await client.stream(req("special"), lambda t: None)
    b = await client.stream(req("plain"), lambda t: None)
    c = await client.stream(req("plain again"), lambda t: None)  # nothing scripted left
    await client.aclose()
    assert isinstance(a, LlmSuccess) and a.content[0]["text"] == "routed"
    assert isinstance(b, LlmSuccess) and b.content[0]["text"] == "queued"
    assert isinstance(c, LlmFailure) and not c.retryable and "no reply scripted" in c.message
    assert fake_anthropic.unexpected == 1


async def test_broken_handler_is_reported_not_hung(fake_anthropic: FakeAnthropic) -> None:
    def handler(body: dict[str, Any]) -> Reply:
        raise KeyError("oops")

    fake_anthropic.handler = handler
    result = await LlmClient(api_key="k", base_url=fake_anthropic.base_url).stream(req(), lambda t: None)
    assert isinstance(result, LlmFailure) and "test handler raised KeyError" in result.message
    assert fake_anthropic.handler_errors == ["KeyError: 'oops'"]


async def test_ten_thousand_deltas_in_one_stream(fake_anthropic: FakeAnthropic) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(10_000))
    fake_anthropic.enqueue(Reply.text_reply(text, deltas=10_000))
    seen: list[str] = []
    result = await LlmClient(api_key="k", base_url=fake_anthropic.base_url).stream(req(), seen.append)
    assert isinstance(result, LlmSuccess)
    assert len(seen) == 10_000 and "".join(seen) == text
    rec = fake_anthropic.requests[0]
    assert rec.completed and rec.events_sent == 10_000 + 5


def test_hanging_stream_notices_a_raw_socket_disconnect(fake_anthropic: FakeAnthropic) -> None:
    """Without any SDK: a client that reads the first bytes and closes is seen as disconnected."""
    import http.client

    fake_anthropic.enqueue(Reply.hanging(after_events=2, limit_s=30))
    conn = http.client.HTTPConnection("127.0.0.1", fake_anthropic.port, timeout=GUARD_S)
    conn.request(
        "POST",
        "/v1/messages",
        body=json.dumps({"model": "m", "messages": [], "stream": True}),
        headers={"content-type": "application/json"},
    )
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    first = resp.read1(65536).decode()
    assert "event: message_start" in first
    conn.close()
    resp.close()
    assert fake_anthropic.wait_for(lambda rs: rs[0].ended_at is not None, timeout=GUARD_S)
    assert fake_anthropic.requests[0].disconnected


def test_overlap_is_computed_from_recorded_intervals(fake_anthropic: FakeAnthropic) -> None:
    """Two sequential requests do not overlap; two concurrent slow ones do."""
    fake_anthropic.handler = lambda body: Reply.text_reply("abcdef", deltas=6, delay_s=0.02)

    def one() -> None:
        r = urllib.request.Request(
            f"{fake_anthropic.base_url}/v1/messages",
            data=json.dumps({"model": "m", "messages": [], "stream": True}).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(r, timeout=GUARD_S) as resp:
            resp.read()

    one()
    one()
    assert fake_anthropic.max_concurrency() == 1
    a, b = fake_anthropic.requests
    assert not a.overlaps(b)
    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fake_anthropic.max_concurrency() == 3
    assert fake_anthropic.requests[2].overlaps(fake_anthropic.requests[3])


def test_a_handler_slow_to_finish_after_its_last_write_is_not_an_overlap(
    fake_anthropic: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client reads the whole reply and starts its next request before the fake's thread, descheduled
    after its last write (a busy machine), stamps ``ended_at``: still sequential, not an overlap."""
    fake_anthropic.handler = lambda body: Reply.text_reply("abc", deltas=3)
    write = _Handler._write

    def slow_after_the_last_chunk(self: _Handler, data: bytes, rec: RecordedRequest) -> None:
        write(self, data, rec)
        if data == b"0\r\n\r\n":
            time.sleep(0.3)

    monkeypatch.setattr(_Handler, "_write", slow_after_the_last_chunk)

    def one() -> None:  # a new connection each time (a kept-alive one would wait for the handler to return)
        r = urllib.request.Request(
            f"{fake_anthropic.base_url}/v1/messages",
            data=json.dumps({"model": "m", "messages": [], "stream": True}).encode(),
            headers={"content-type": "application/json", "connection": "close"},
        )
        with urllib.request.urlopen(r, timeout=GUARD_S) as resp:
            resp.read()

    one()
    one()
    assert fake_anthropic.wait_for(lambda rs: len(rs) == 2 and all(r.ended_at is not None for r in rs), timeout=GUARD_S)
    a, b = fake_anthropic.requests
    assert b.started_at < a.ended_at, "the second request started while the first's thread was still running"
    assert not a.overlaps(b) and fake_anthropic.max_concurrency() == 1


@pytest.mark.req("REQ-BED-003")
async def test_eight_concurrent_streams_of_thousands_of_deltas(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.handler = lambda body: Reply.text_reply(
        body["messages"][0]["content"] * 2000, deltas=2000, delay_s=0.0002
    )
    client = LlmClient(api_key="k", base_url=fake_anthropic.base_url)
    names = [chr(ord("A") + i) for i in range(8)]
    outs: dict[str, list[str]] = {n: [] for n in names}
    results = await asyncio.gather(*(client.stream(req(n), outs[n].append) for n in names))
    await client.aclose()
    assert all(isinstance(r, LlmSuccess) for r in results)
    assert all(outs[n] == [n] * 2000 for n in names)
    assert fake_anthropic.max_concurrency() == 8


async def test_subprocess_mode_serves_a_script_and_exposes_records(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "loop": True,
                "replies": [
                    {"text": "from the subprocess", "deltas": 4, "usage": {"input_tokens": 7}},
                    {"tool_uses": [{"name": "read_file", "input": {"path": "a"}, "id": "toolu_s"}]},
                ],
            }
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_anthropic", "--port", "0", "--script", str(script)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 20)
        assert line.startswith("FAKE_ANTHROPIC_LISTENING ")
        base_url = line.split()[1]
        client = LlmClient(api_key="k", base_url=base_url)
        results = [await client.stream(req(f"q{i}"), lambda t: None) for i in range(3)]
        await client.aclose()
        assert [r.stop_reason for r in results if isinstance(r, LlmSuccess)] == ["end_turn", "tool_use", "end_turn"]
        first = results[0]
        assert isinstance(first, LlmSuccess) and first.usage["input_tokens"] == 7
        with urllib.request.urlopen(f"{base_url}/_fake/requests", timeout=GUARD_S) as resp:
            records = json.loads(resp.read())
        assert [r["body"]["messages"][0]["content"] for r in records] == ["q0", "q1", "q2"]
        assert all("headers" not in r for r in records)
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


# ------------------------------------------------------------------------------ prompt caching (issue 16)

EPHEMERAL = {"type": "ephemeral"}
KEY = "sk-ant-cache-test-key"  # long enough not to be found inside the answers' words


def _doc(i: int, size: int = 400) -> dict[str, Any]:
    """A text block of about ``size`` tokens (the fake counts bytes / 4)."""
    return {"type": "text", "text": f"document {i}: " + "lorem ipsum " * (size // 3)}


def _marked(block: dict[str, Any], ttl: str | None = None) -> dict[str, Any]:
    return {**block, "cache_control": {**EPHEMERAL, **({"ttl": ttl} if ttl else {})}}


def _cached_req(blocks: list[dict[str, Any]], model: str = "claude-sonnet-4-5", system: Any = "") -> LlmRequest:
    return LlmRequest(model=model, system=system, messages=[{"role": "user", "content": blocks}], tools=None)


INPUT_FIGURES = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


async def _usage(fake: FakeAnthropic, request: LlmRequest, *, split: bool = False) -> dict[str, int]:
    """The input figures of the answer (with ``split``, also the cache writes per TTL) as the client read them."""
    fake.enqueue(Reply.text_reply("ok"))
    client = LlmClient(api_key=KEY, base_url=fake.base_url)
    result = await client.stream(request, lambda t: None)
    await client.aclose()
    assert isinstance(result, LlmSuccess), result
    keys = (*INPUT_FIGURES, "cache_write_5m_tokens", "cache_write_1h_tokens") if split else INPUT_FIGURES
    return {k: result.usage[k] for k in keys}


def _tokens(blocks: list[dict[str, Any]]) -> int:
    return sum(count_tokens(b) for b in blocks)


async def test_cache_writes_a_marked_prefix_and_the_next_request_reads_it(fake_anthropic: FakeAnthropic) -> None:
    docs = [_doc(i) for i in range(6)]
    first = await _usage(fake_anthropic, _cached_req([*docs[:3], _marked(docs[3]), docs[4]]))
    written = _tokens(docs[:4])
    assert first == {
        "input_tokens": count_tokens(docs[4]),
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": 0,
    }
    # the next request repeats the prefix and moves the breakpoint: it reads what the first one wrote
    second = await _usage(fake_anthropic, _cached_req([*docs[:5], _marked(docs[5])]))
    assert second == {
        "input_tokens": 0,
        "cache_creation_input_tokens": _tokens(docs[4:6]),
        "cache_read_input_tokens": written,
    }
    assert fake_anthropic.requests[1].usage is not None
    assert fake_anthropic.requests[1].usage["cache_read_input_tokens"] == written


async def test_usage_counts_what_the_request_contains_with_or_without_breakpoints(
    fake_anthropic: FakeAnthropic,
) -> None:
    docs = [_doc(i) for i in range(3)]
    tools = [{"name": "t", "description": "d" * 400, "input_schema": {"type": "object"}}]
    plain = LlmRequest("m", "You are a test.", [{"role": "user", "content": docs}], tools)
    marked = LlmRequest(
        "m",
        [_marked({"type": "text", "text": "You are a test."})],
        [{"role": "user", "content": [*docs[:2], _marked(docs[2])]}],
        [_marked(tools[0])],
    )
    a, b = await _usage(fake_anthropic, plain), await _usage(fake_anthropic, marked)
    everything = _tokens([*tools, {"type": "text", "text": "You are a test."}, *docs])
    assert a == {"input_tokens": everything, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    assert sum(b.values()) == everything  # a breakpoint changes what is billed how, never how much is input
    assert b["cache_creation_input_tokens"] == everything


async def test_a_fifth_breakpoint_is_refused_with_a_400_like_the_api(fake_anthropic: FakeAnthropic) -> None:
    docs = [_marked(_doc(i, 50)) for i in range(5)]
    fake_anthropic.enqueue(Reply.text_reply("never sent"))
    client = LlmClient(api_key=KEY, base_url=fake_anthropic.base_url)
    result = await client.stream(_cached_req(docs), lambda t: None)
    four = await client.stream(_cached_req(docs[:4]), lambda t: None)  # the scripted reply is still there
    await client.aclose()
    assert isinstance(result, LlmFailure) and result.status == 400 and not result.retryable
    assert "maximum of 4 blocks with cache_control" in result.message and "Found 5" in result.message
    assert isinstance(four, LlmSuccess) and four.content[0]["text"] == "never sent"
    assert fake_anthropic.requests[0].breakpoints == 5


async def test_a_prefix_below_the_models_minimum_is_not_cached_and_not_refused(
    fake_anthropic: FakeAnthropic,
) -> None:
    blocks = [_doc(0, 1000), _marked(_doc(1, 1000))]  # about 2,000 tokens
    assert 1024 < _tokens(blocks) < 4096
    haiku = await _usage(fake_anthropic, _cached_req(blocks, model="claude-haiku-4-5"))  # minimum 4,096
    assert haiku == {"input_tokens": _tokens(blocks), "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    again = await _usage(fake_anthropic, _cached_req(blocks, model="claude-haiku-4-5"))
    assert again["cache_read_input_tokens"] == 0
    sonnet = await _usage(fake_anthropic, _cached_req(blocks, model="claude-sonnet-4-5"))  # minimum 1,024
    assert sonnet["cache_creation_input_tokens"] == _tokens(blocks)


async def test_entries_are_per_model_and_live_for_their_ttl(fake_anthropic: FakeAnthropic) -> None:
    five = [_doc(0, 2000), _marked(_doc(1))]
    hour = [_doc(2, 2000), _marked(_doc(3), "1h")]
    await _usage(fake_anthropic, _cached_req(five))
    await _usage(fake_anthropic, _cached_req(hour))
    other_model = await _usage(fake_anthropic, _cached_req(five, model="claude-opus-4-1"))
    assert other_model["cache_read_input_tokens"] == 0  # the cache is per model
    fake_anthropic.cache.advance(200)
    assert (await _usage(fake_anthropic, _cached_req(five)))["cache_read_input_tokens"] == _tokens(five)
    fake_anthropic.cache.advance(299)  # 499 s after the write, but 299 s after the hit that refreshed it
    assert (await _usage(fake_anthropic, _cached_req(five)))["cache_read_input_tokens"] == _tokens(five)
    fake_anthropic.cache.advance(301)
    assert (await _usage(fake_anthropic, _cached_req(five)))["cache_read_input_tokens"] == 0  # expired
    assert (await _usage(fake_anthropic, _cached_req(hour)))["cache_read_input_tokens"] == _tokens(hour)


async def test_one_changed_byte_invalidates_everything_after_it(fake_anthropic: FakeAnthropic) -> None:
    docs = [_doc(i, 600) for i in range(4)]
    await _usage(fake_anthropic, _cached_req([docs[0], _marked(docs[1]), docs[2], _marked(docs[3])]))
    changed = {**docs[2], "text": docs[2]["text"].replace("ipsum", "ipsun", 1)}
    usage = await _usage(fake_anthropic, _cached_req([docs[0], _marked(docs[1]), changed, _marked(docs[3])]))
    assert usage["cache_read_input_tokens"] == _tokens(docs[:2])  # the unchanged prefix still hits
    reordered = {"text": docs[0]["text"], "type": "text"}  # same content, keys in another order
    usage = await _usage(fake_anthropic, _cached_req([reordered, _marked(docs[1])]))
    assert usage["cache_read_input_tokens"] == 0


async def test_a_breakpoint_finds_a_kept_prefix_only_within_20_blocks(fake_anthropic: FakeAnthropic) -> None:
    head = [_doc(0, 2000), _doc(1, 10)]
    await _usage(fake_anthropic, _cached_req([head[0], _marked(head[1])]))
    near = [_doc(100 + i, 10) for i in range(19)]  # the new breakpoint is 19 blocks after the kept prefix
    usage = await _usage(fake_anthropic, _cached_req([*head, *near[:-1], _marked(near[-1])]))
    assert usage["cache_read_input_tokens"] == _tokens(head)
    far = [_doc(200 + i, 10) for i in range(20)]  # 20 blocks after: out of reach
    usage = await _usage(fake_anthropic, _cached_req([*head, *far[:-1], _marked(far[-1])]))
    assert usage["cache_read_input_tokens"] == 0
    # a second breakpoint left on the old position finds it again
    other = [_doc(300 + i, 10) for i in range(20)]
    usage = await _usage(fake_anthropic, _cached_req([head[0], _marked(head[1]), *other[:-1], _marked(other[-1])]))
    assert usage["cache_read_input_tokens"] == _tokens(head)


async def test_cache_writes_are_reported_per_ttl_like_the_apis_cache_creation(fake_anthropic: FakeAnthropic) -> None:
    hour = [_doc(0, 1500), _marked(_doc(1), "1h")]  # a 1-hour prefix (above the 1,024 minimum), then 5 minutes
    five = [_doc(2, 300), _marked(_doc(3))]
    first = await _usage(fake_anthropic, _cached_req([*hour, *five]), split=True)
    assert first["cache_write_1h_tokens"] == _tokens(hour) and first["cache_write_5m_tokens"] == _tokens(five)
    assert first["cache_creation_input_tokens"] == _tokens([*hour, *five])
    recorded = fake_anthropic.requests[0].usage
    assert recorded is not None and recorded["ephemeral_1h_input_tokens"] == _tokens(hour)
    # the next request reads both entries and writes only its new 5-minute part
    more = [_doc(4, 100), _marked(_doc(5))]
    second = await _usage(fake_anthropic, _cached_req([*hour, *five, *more]), split=True)
    assert second == {"input_tokens": 0, "cache_creation_input_tokens": _tokens(more),
                      "cache_read_input_tokens": _tokens([*hour, *five]),
                      "cache_write_5m_tokens": _tokens(more), "cache_write_1h_tokens": 0}
    # an answer without the split (as from an older API) leaves both parts 0
    fake_anthropic.enqueue(Reply.text_reply("ok", usage={"cache_creation_input_tokens": 70}))
    client = LlmClient(api_key=KEY, base_url=fake_anthropic.base_url)
    result = await client.stream(_cached_req([_doc(9)]), lambda t: None)
    await client.aclose()
    assert isinstance(result, LlmSuccess) and result.usage["cache_creation_input_tokens"] == 70
    assert result.usage["cache_write_5m_tokens"] == result.usage["cache_write_1h_tokens"] == 0


async def test_a_1h_breakpoint_after_a_5m_one_is_refused(fake_anthropic: FakeAnthropic) -> None:
    client = LlmClient(api_key=KEY, base_url=fake_anthropic.base_url)
    result = await client.stream(_cached_req([_marked(_doc(0)), _marked(_doc(1), "1h")]), lambda t: None)
    await client.aclose()
    assert isinstance(result, LlmFailure) and result.status == 400 and "ttl='1h'" in result.message


def test_system_text_reads_strings_and_blocks() -> None:
    assert system_text({"system": "plain"}) == "plain"
    assert system_text({"system": [_marked({"type": "text", "text": "blocks"})]}) == "blocks"
    assert system_text({}) == ""


async def test_latency_model_delays_the_first_byte_by_uncached_tokens(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.ttft_base_s = 0.05
    fake_anthropic.prefill_s_per_token = 0.0001
    blocks = [_doc(0, 1500), _marked(_doc(1, 1500))]
    await _usage(fake_anthropic, _cached_req(blocks))
    await _usage(fake_anthropic, _cached_req(blocks))
    cold, warm = (r.first_byte_at - r.started_at for r in fake_anthropic.requests if r.first_byte_at)
    assert cold >= 0.05 + _tokens(blocks) * 0.0001 * 0.95
    assert warm < cold - 0.2  # the second request's prefix is cached: only the base remains
