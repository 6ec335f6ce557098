"""A misbehaving model API (issue 13): retry-after, stalled streams, retries used up.

The real server (subprocess, real LSP, real SDK) against the fake Messages API, which answers 429/529 with
``retry-after`` headers and stalls (no byte at all) before the headers or mid-answer until the client gives up.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.e2e.harness import session
from tests.fake_anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess


@pytest.mark.req("REQ-BED-006", "REQ-PROTO-021")
async def test_retry_after_is_waited_out_up_to_the_cap_and_shown(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(
        Reply.error(429, retry_after_ms="400"),  # longer than the 20 ms backoff: waited out
        Reply.error(529, retry_after="3600"),  # an hour: capped at PHOENIX_RETRY_AFTER_MAX_MS
        Reply.text_reply("finally"),
    )
    async with session(fake_anthropic, tmp_path, env={"PHOENIX_RETRY_AFTER_MAX_MS": "600"}) as s:
        cid = await s.new()
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "hello"})
        await s.wait_status(cid, "idle")
        retries = s.of("retry", cid)
        assert [(r["delayMs"], r["retryAfterMs"]) for r in retries] == [(400, 400), (600, 3_600_000)]
        assert "429" in retries[0]["reason"] and "529" in retries[1]["reason"]
        first, second, third = fake_anthropic.requests
        assert second.started_at - first.ended_at >= 0.4  # really waited, not only announced
        assert third.started_at - second.ended_at >= 0.6
        assert "error" not in [e["status"] for e in s.of("status", cid)]


@pytest.mark.req("REQ-BED-006")
async def test_retries_used_up_do_not_promise_another(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(*(Reply.error(429, retry_after="0") for _ in range(4)))
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "hello"})
        await s.wait_status(cid, "error")
        (error,) = s.of("error", cid)
        message = error["message"]
        assert "after 3 retries" in message and "HTTP 429" in message and "Send a message to try again" in message
        assert "will be retried" not in message and "after a pause" not in message, message
        assert ".." not in message, message


@pytest.mark.req("REQ-BED-025", "REQ-PROTO-021")
async def test_a_stalled_stream_is_noticed_retried_and_shown(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(
        Reply.stalled(before_headers=True),
        Reply.stalled(after_events=4),  # a few words, then nothing
        Reply.text_reply("recovered", deltas=3),
    )
    started = time.monotonic()
    async with session(fake_anthropic, tmp_path, env={"PHOENIX_LLM_IDLE_TIMEOUT_S": "0.5"}) as s:
        cid = await s.new()
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "hello"})
        await s.wait_status(cid, "idle")
        retries = s.of("retry", cid)
        assert len(retries) == 2
        assert "stalled" in retries[0]["reason"] and "before the response headers" in retries[0]["reason"]
        assert "stalled" in retries[1]["reason"] and "after 4 stream events" in retries[1]["reason"]
        assert all(r.get("retryAfterMs") is None for r in retries)
        # the words of the stalled answer were shown as they came, but only the whole answer is kept
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert [m["role"] for m in conv["messages"]] == ["user", "assistant"]
        assert conv["messages"][-1]["content"] == [{"type": "text", "text": "recovered"}]
        assert all(r.disconnected for r in fake_anthropic.requests[:2])  # the stalled connections were closed
    assert time.monotonic() - started < 30  # the SDK's own timeout is 600 s
