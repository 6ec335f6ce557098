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
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.llm.client import LlmClient, LlmFailure, LlmRequest, LlmSuccess
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

REPO_ROOT = Path(__file__).resolve().parents[2]


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
    conn = http.client.HTTPConnection("127.0.0.1", fake_anthropic.port, timeout=5)
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
    assert fake_anthropic.wait_for(lambda rs: rs[0].ended_at is not None, timeout=5)
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
        with urllib.request.urlopen(r, timeout=5) as resp:
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
        with urllib.request.urlopen(f"{base_url}/_fake/requests", timeout=5) as resp:
            records = json.loads(resp.read())
        assert [r["body"]["messages"][0]["content"] for r in records] == ["q0", "q1", "q2"]
        assert all("headers" not in r for r in records)
    finally:
        proc.terminate()
        assert proc.wait(10) == 0
