"""The API key never shows up in a failure message, a log line or a repr (REQ-SEC-001)."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

import pytest

from phoenix_lsp.llm.client import LlmClient, LlmFailure, LlmRequest, LlmSuccess
from tests.fake_anthropic import FakeAnthropic, Reply, TextBlock

# Distinctive, so any leak (whole or in part) is unmistakable.
SECRET = "sk-ant-api03-Zq7XSECRETvalue9f3k2LEAKCANARY-AAAA"
FRAGMENTS = [SECRET, "SECRETvalue9f3k2", "LEAKCANARY"]


def _request() -> LlmRequest:
    return LlmRequest(model="claude-test-model", system="sys", messages=[{"role": "user", "content": "hi"}], tools=None)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


ERROR_REPLIES: list[tuple[str, Any]] = [
    *[(f"http-{s}", Reply.error(s)) for s in (400, 401, 403, 404, 413, 429, 500, 503, 529)],
    # the API echoing the key back in its error text must not leak it either
    ("echoed-key", Reply.error(400, f"bad header x-api-key: {SECRET}")),
    ("echoed-key-mid-stream", Reply(blocks=[TextBlock("a")], sse_error="overloaded_error")),
    ("dropped", Reply.dropped()),
    ("timeout", Reply(blocks=[TextBlock("late")], headers_delay_s=5)),
]


def _assert_clean(text: str) -> None:
    for fragment in FRAGMENTS:
        assert fragment not in text


@pytest.mark.req("REQ-SEC-001")
async def test_key_never_leaks_on_any_error_path(
    fake_anthropic: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, SDK and HTTP stack included, at the chattiest level
    client = LlmClient(api_key=SECRET, base_url=fake_anthropic.base_url, timeout_s=0.5)
    failures: list[LlmFailure] = []
    for _name, reply in ERROR_REPLIES:
        fake_anthropic.enqueue(reply)
        result = await client.stream(_request(), lambda t: None)
        assert isinstance(result, LlmFailure), _name
        failures.append(result)
    # cancellation path
    fake_anthropic.enqueue(Reply.hanging())
    started = asyncio.Event()
    task = asyncio.create_task(client.stream(_request(), lambda t: started.set()))
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as cancelled:
        await task
    await client.aclose()

    # the key really was sent: otherwise this test would prove nothing
    assert all(r.api_key_sent() == SECRET for r in fake_anthropic.requests)
    assert len(fake_anthropic.requests) == len(ERROR_REPLIES) + 1

    # connection refused and no-key paths
    refused = await LlmClient(api_key=SECRET, base_url=f"http://127.0.0.1:{_closed_port()}").stream(
        _request(), lambda t: None
    )
    assert isinstance(refused, LlmFailure)
    failures.append(refused)

    produced = [f.message for f in failures] + [repr(f) for f in failures] + [str(f) for f in failures]
    produced += [repr(client), repr(cancelled.value), repr(fake_anthropic), *map(repr, fake_anthropic.requests)]
    produced += [r.getMessage() for r in caplog.records]
    produced += [str(r.args) for r in caplog.records]
    produced += [caplog.text]
    for text in produced:
        _assert_clean(text)
    assert any("HTTP 401" in f.message for f in failures)


@pytest.mark.req("REQ-SEC-001")
async def test_key_with_illegal_characters_does_not_leak(fake_anthropic: FakeAnthropic) -> None:
    """A key pasted with a newline makes the HTTP stack refuse the header; its error must not quote it."""
    bad_key = SECRET + "\nX"
    result = await LlmClient(api_key=bad_key, base_url=fake_anthropic.base_url).stream(_request(), lambda t: None)
    assert isinstance(result, LlmFailure)
    assert not result.retryable
    _assert_clean(result.message)
    _assert_clean(repr(result))


@pytest.mark.req("REQ-SEC-001")
async def test_key_not_in_repr_of_client_or_success(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply.text_reply("fine"))
    client = LlmClient(api_key=SECRET, base_url=fake_anthropic.base_url.replace("http://", "http://user:pw@"))
    _assert_clean(repr(client))
    assert "pw@" not in repr(client)
    client = LlmClient(api_key=SECRET, base_url=fake_anthropic.base_url)
    result = await client.stream(_request(), lambda t: None)
    assert isinstance(result, LlmSuccess)
    _assert_clean(repr(result))
    _assert_clean(repr(client))
    _assert_clean(repr(fake_anthropic.requests))
    await client.aclose()


async def test_surrounding_whitespace_of_a_key_is_ignored(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.expected_api_key = SECRET
    fake_anthropic.enqueue(Reply.text_reply("ok"))
    result = await LlmClient(api_key=f"  {SECRET}\n", base_url=fake_anthropic.base_url).stream(
        _request(), lambda t: None
    )
    assert isinstance(result, LlmSuccess)


@pytest.mark.req("REQ-SEC-001")
@pytest.mark.parametrize(
    "make_exc",
    [
        lambda: __import__("httpx2").LocalProtocolError(f"Illegal header value b'Bearer {SECRET}\\n'"),
        lambda: __import__("httpx2").ConnectError(f"proxy said: unknown key {SECRET}"),
        lambda: __import__("httpx2").RemoteProtocolError(f"peer echoed {SECRET!r}"),
        lambda: ValueError(f"bad value {SECRET.encode()!r}"),
        lambda: RuntimeError(f"something odd with {SECRET}"),
    ],
    ids=["local-protocol", "connect", "remote-protocol", "value", "unexpected"],
)
def test_foreign_error_texts_quoting_the_key_are_redacted(make_exc: Any) -> None:
    """Errors raised below the SDK may quote the key (a header value, a proxy's echo): it is cut out."""
    client = LlmClient(api_key=SECRET, base_url="http://127.0.0.1:9")
    failure = client._classify(make_exc(), _request())
    _assert_clean(failure.message)
    _assert_clean(repr(failure))
