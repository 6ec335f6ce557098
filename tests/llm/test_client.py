"""The real ``anthropic`` SDK, driven by LlmClient, against the local fake Messages API server."""

from __future__ import annotations

import asyncio
import email.utils
import socket
import time
from typing import Any

import pytest

from phoenix_lsp.llm.client import (
    TOOL_INPUT_ERROR_KEY,
    LlmClient,
    LlmFailure,
    LlmRequest,
    LlmSuccess,
    retry_after_ms,
)
from tests.fake_anthropic import FakeAnthropic, Reply, TextBlock, ToolUseBlock

#: How long a wait for what the fake or the client reports may take before the test fails: a hang guard, long
#: on purpose (a passing test never waits it out; 5 s was too short on a machine loaded to 20).
GUARD_S = 20.0
#: How long the fake holds a reply that only the client's leaving may end: longer than every guard before the
#: leaving is checked, so that nothing but the client can have ended it.
HANG_S = 3 * GUARD_S

TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]


def make_request(tools: list[dict[str, Any]] | None = None, **kw: Any) -> LlmRequest:
    return LlmRequest(
        model=kw.pop("model", "claude-test-model"),
        system=kw.pop("system", "You are a test."),
        messages=kw.pop("messages", [{"role": "user", "content": "hi"}]),
        tools=tools,
        **kw,
    )


@pytest.fixture
async def client(fake_anthropic: FakeAnthropic) -> Any:
    c = LlmClient(api_key="sk-ant-test-key", base_url=fake_anthropic.base_url, timeout_s=10)
    # the SDK imported and its client made here, not in the test's first request: at load 20 the import alone
    # took 13-20 s, and the first test of a run (alone: the cancel test's [hanging]) timed out waiting for a delta
    await c.prepare()
    yield c
    await c.aclose()


@pytest.mark.req("REQ-BED-003")
async def test_text_streams_every_delta_in_order(fake_anthropic: FakeAnthropic, client: LlmClient) -> None:
    text = "".join(f"word{i} " for i in range(200))
    fake_anthropic.enqueue(Reply.text_reply(text, deltas=200, usage={"input_tokens": 1234, "output_tokens": 321}))
    seen: list[str] = []
    result = await client.stream(make_request(), seen.append)
    assert isinstance(result, LlmSuccess)
    assert len(seen) == 200
    assert "".join(seen) == text
    assert seen == TextBlock(text, 200).pieces()  # same pieces, same order as the server sent them
    assert result.content == [{"type": "text", "text": text}]
    assert result.stop_reason == "end_turn"
    assert result.usage == {
        "input_tokens": 1234,
        "output_tokens": 321,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_write_5m_tokens": 0,
        "cache_write_1h_tokens": 0,
    }


@pytest.mark.req("REQ-BED-003")
async def test_request_carries_history_system_and_tools(fake_anthropic: FakeAnthropic, client: LlmClient) -> None:
    history = [
        {"role": "user", "content": "read a.py"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x = 1"}]},
    ]
    fake_anthropic.enqueue(Reply.text_reply("done"), Reply.text_reply("summary"))
    assert isinstance(
        await client.stream(make_request(TOOLS, messages=history, max_tokens=777), lambda t: None), LlmSuccess
    )
    # tools=None (continuation summaries): the request has no tools at all
    assert isinstance(await client.stream(make_request(None, messages=history), lambda t: None), LlmSuccess)
    with_tools, without_tools = fake_anthropic.requests
    assert with_tools.body["messages"] == history
    assert with_tools.body["system"] == "You are a test."
    assert with_tools.body["max_tokens"] == 777
    assert with_tools.body["stream"] is True
    assert with_tools.tool_names == ["read_file"]
    assert with_tools.body["tools"] == TOOLS
    assert without_tools.tool_names is None
    assert "tools" not in without_tools.body


@pytest.mark.req("REQ-BED-003")
async def test_tool_use_blocks_parsed_from_split_json(fake_anthropic: FakeAnthropic, client: LlmClient) -> None:
    big_input = {"path": "src/main.py", "lines": [1, 2, 3], "nested": {"q": 'a "quoted" \u00e9 value'}}
    fake_anthropic.enqueue(
        Reply.tool_reply(
            ToolUseBlock("read_file", big_input, id="toolu_A", json_chunks=17),
            ToolUseBlock("list_dir", {}, id="toolu_B"),
            ToolUseBlock("read_file", {"path": "b.py"}, id="toolu_C", json_chunks=5),
            text="Let me look.",
            deltas=3,
            usage={"input_tokens": 50, "output_tokens": 60, "cache_read_input_tokens": 40},
        )
    )
    seen: list[str] = []
    result = await client.stream(make_request(TOOLS), seen.append)
    assert isinstance(result, LlmSuccess)
    assert "".join(seen) == "Let me look."
    assert result.stop_reason == "tool_use"
    assert result.content == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_A", "name": "read_file", "input": big_input},
        {"type": "tool_use", "id": "toolu_B", "name": "list_dir", "input": {}},
        {"type": "tool_use", "id": "toolu_C", "name": "read_file", "input": {"path": "b.py"}},
    ]
    assert result.usage["cache_read_input_tokens"] == 40
    assert result.usage["output_tokens"] == 60


@pytest.mark.req("REQ-BED-003")
async def test_malformed_tool_json_comes_back_with_the_parser_error(
    fake_anthropic: FakeAnthropic, client: LlmClient
) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(
            ToolUseBlock("read_file", id="toolu_bad", raw_json='{"path": "a.py", ', json_chunks=4),
            ToolUseBlock("read_file", id="toolu_list", raw_json="[1, 2]"),
            ToolUseBlock("read_file", {"path": "ok.py"}, id="toolu_ok"),
        )
    )
    result = await client.stream(make_request(TOOLS), lambda t: None)
    assert isinstance(result, LlmSuccess)
    bad, not_object, ok = result.content
    assert bad["input"] == {}  # never a made-up field inside the input
    assert bad[TOOL_INPUT_ERROR_KEY] == "Expecting property name enclosed in double quotes: line 1 column 18 (char 17)"
    assert not_object["input"] == {}
    assert not_object[TOOL_INPUT_ERROR_KEY] == "expected a JSON object, got an array: [1, 2]"
    assert ok["input"] == {"path": "ok.py"} and TOOL_INPUT_ERROR_KEY not in ok


@pytest.mark.req("REQ-BED-003")
@pytest.mark.parametrize("stop_reason", ["max_tokens", "pause_turn", "stop_sequence", "refusal"])
async def test_any_stop_reason_passes_through(
    fake_anthropic: FakeAnthropic, client: LlmClient, stop_reason: str
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("partial", deltas=2, stop_reason=stop_reason))
    result = await client.stream(make_request(), lambda t: None)
    assert isinstance(result, LlmSuccess)
    assert result.stop_reason == stop_reason
    assert result.content == [{"type": "text", "text": "partial"}]


ERROR_CASES = [
    # status, retryable, words the message must contain
    (400, False, ["HTTP 400", "messages: field required"]),
    (401, False, ["HTTP 401", "ANTHROPIC_API_KEY"]),
    (403, False, ["HTTP 403", "ANTHROPIC_API_KEY", "claude-test-model"]),
    (404, False, ["HTTP 404", "claude-test-model", "model name"]),
    (413, False, ["HTTP 413", "too large"]),
    (429, True, ["HTTP 429", "rate limit"]),
    (500, True, ["HTTP 500", "server error"]),
    (502, True, ["HTTP 502"]),
    (503, True, ["HTTP 503"]),
    (529, True, ["HTTP 529", "overloaded"]),
]


@pytest.mark.req("REQ-BED-006")
@pytest.mark.parametrize(("status", "retryable", "words"), ERROR_CASES, ids=[str(c[0]) for c in ERROR_CASES])
async def test_error_statuses_are_classified(
    fake_anthropic: FakeAnthropic, client: LlmClient, status: int, retryable: bool, words: list[str]
) -> None:
    fake_anthropic.enqueue(Reply.error(status))
    seen: list[str] = []
    result = await client.stream(make_request(TOOLS), seen.append)
    assert isinstance(result, LlmFailure)
    assert result.status == status
    assert result.retryable is retryable
    for word in words:
        assert word.lower() in result.message.lower(), result.message
    # whether it is retried is the core's decision, told in its own event: the failure never promises it
    assert "retried" not in result.message and "will be" not in result.message, result.message
    assert result.retry_after_ms is None  # the fake sent no retry-after
    assert seen == []


@pytest.mark.req("REQ-BED-006")
@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (429, {"retry_after": "7"}, 7000),
        (529, {"retry_after_ms": "1500"}, 1500),
        (429, {"retry_after": "30", "retry_after_ms": "2500"}, 2500),  # the precise one wins
        (429, {"retry_after": "0.25"}, 250),
        (529, {"retry_after": "soon"}, None),  # unusable: the core's own backoff applies
        (400, {"retry_after": "5"}, None),  # not retried: nothing to wait for
    ],
    ids=["429-seconds", "529-ms", "ms-wins", "fraction", "garbage", "400"],
)
async def test_retry_after_is_read_from_the_response(
    fake_anthropic: FakeAnthropic, client: LlmClient, status: int, headers: dict[str, str], expected: int | None
) -> None:
    fake_anthropic.enqueue(Reply.error(status, **headers))
    result = await client.stream(make_request(), lambda t: None)
    assert isinstance(result, LlmFailure)
    assert result.retry_after_ms == expected


@pytest.mark.req("REQ-BED-006")
def test_retry_after_as_an_http_date() -> None:
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 12, usegmt=True)
    assert retry_after_ms({"retry-after": date}, now=now) == 12_000
    assert retry_after_ms({"retry-after": email.utils.formatdate(now - 5, usegmt=True)}, now=now) is None
    assert retry_after_ms({}, now=now) is None
    assert retry_after_ms({"retry-after": "-3"}, now=now) is None
    assert retry_after_ms({"retry-after": "nan"}, now=now) is None


@pytest.mark.req("REQ-BED-006")
async def test_400_message_carries_the_api_reason(fake_anthropic: FakeAnthropic, client: LlmClient) -> None:
    fake_anthropic.enqueue(Reply.error(400, "messages.1.content: tool_use ids must be unique"))
    result = await client.stream(make_request(), lambda t: None)
    assert isinstance(result, LlmFailure)
    assert not result.retryable
    assert "tool_use ids must be unique" in result.message


@pytest.mark.req("REQ-BED-006")
async def test_dropped_connection_mid_stream_is_retryable(fake_anthropic: FakeAnthropic, client: LlmClient) -> None:
    fake_anthropic.enqueue(Reply.dropped("one two three four five six", after_events=5))
    seen: list[str] = []
    result = await client.stream(make_request(), seen.append)
    assert isinstance(result, LlmFailure)
    assert result.retryable
    assert result.status is None
    assert "connection" in result.message.lower()
    assert seen  # some deltas had arrived before the cut; the caller discards them (nothing partial kept)
    rec = fake_anthropic.requests[0]
    assert not rec.completed


@pytest.mark.req("REQ-BED-006")
@pytest.mark.parametrize(
    ("error_type", "retryable"), [("overloaded_error", True), ("api_error", True), ("invalid_request_error", False)]
)
async def test_error_event_mid_stream_is_classified(
    fake_anthropic: FakeAnthropic, client: LlmClient, error_type: str, retryable: bool
) -> None:
    fake_anthropic.enqueue(Reply(blocks=[TextBlock("some text", 3)], sse_error=error_type))
    result = await client.stream(make_request(), lambda t: None)
    assert isinstance(result, LlmFailure)
    assert result.retryable is retryable
    assert "mid-stream" in result.message


@pytest.mark.req("REQ-BED-025")
@pytest.mark.parametrize(
    ("reply", "where"),
    [
        (Reply.stalled(before_headers=True), "before the response headers"),
        (Reply.stalled(after_events=0), "after the response headers"),
        (Reply.stalled(after_events=4), "after 4 stream events"),
    ],
    ids=["before-headers", "after-headers", "mid-answer"],
)
async def test_a_stalled_stream_fails_after_the_idle_timeout(
    fake_anthropic: FakeAnthropic, reply: Reply, where: str
) -> None:
    """No byte for the idle timeout is a retryable failure that says where it stalled, long before the
    request's own timeout (600 s by default, 30 s here), and the connection is closed."""
    fake_anthropic.enqueue(reply)
    client = LlmClient(api_key="k", base_url=fake_anthropic.base_url, timeout_s=30, idle_timeout_s=0.4)
    seen: list[str] = []
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        result = await client.stream(make_request(), seen.append)
    finally:
        await client.aclose()
    assert loop.time() - started < 30  # the idle timeout ended it, not the request's own 30 s
    assert isinstance(result, LlmFailure)
    assert result.retryable and result.status is None
    assert "stalled" in result.message and where in result.message and "0.4 s" in result.message, result.message
    assert "PHOENIX_LLM_IDLE_TIMEOUT_S" in result.message  # what to change if the model is just slow
    assert (seen != []) is (where == "after 4 stream events")
    assert await fake_anthropic.await_for(lambda rs: rs[0].disconnected, timeout=GUARD_S)


@pytest.mark.req("REQ-BED-025")
async def test_a_slow_stream_that_keeps_sending_is_not_a_stall(fake_anthropic: FakeAnthropic) -> None:
    """The idle timeout is between bytes, not for the whole answer: deltas 0.1 s apart for well over the
    idle timeout are one good answer."""
    fake_anthropic.enqueue(Reply.text_reply("a b c d e f g h i j", deltas=10, delay_s=0.1))
    client = LlmClient(api_key="k", base_url=fake_anthropic.base_url, timeout_s=30, idle_timeout_s=0.4)
    try:
        result = await client.stream(make_request(), lambda t: None)
    finally:
        await client.aclose()
    assert isinstance(result, LlmSuccess), result
    assert result.content == [{"type": "text", "text": "a b c d e f g h i j"}]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.req("REQ-BED-006")
async def test_connection_refused_is_retryable_and_names_the_endpoint() -> None:
    port = _closed_port()
    client = LlmClient(api_key="k", base_url=f"http://127.0.0.1:{port}", timeout_s=5)
    result = await client.stream(make_request(), lambda t: None)
    assert isinstance(result, LlmFailure)
    assert result.retryable
    assert f"127.0.0.1:{port}" in result.message
    assert "ANTHROPIC_BASE_URL" in result.message


@pytest.mark.req("REQ-BED-006")
async def test_missing_api_key_fails_without_a_request(
    fake_anthropic: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    client = LlmClient(base_url=fake_anthropic.base_url)
    result = await client.stream(make_request(), lambda t: None)
    assert isinstance(result, LlmFailure)
    assert not result.retryable
    assert "ANTHROPIC_API_KEY" in result.message
    assert fake_anthropic.requests == []


async def test_environment_is_honoured_and_arguments_override_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeAnthropic(expected_api_key="env-key") as env_fake, FakeAnthropic(expected_api_key="arg-key") as arg_fake:
        env_fake.enqueue(Reply.text_reply("from env"))
        arg_fake.enqueue(Reply.text_reply("from args"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", env_fake.base_url)
        from_env = await LlmClient().stream(make_request(), lambda t: None)
        from_args = await LlmClient(api_key="arg-key", base_url=arg_fake.base_url).stream(
            make_request(), lambda t: None
        )
        wrong_key = await LlmClient(api_key="other").stream(make_request(), lambda t: None)
    assert isinstance(from_env, LlmSuccess) and from_env.content[0]["text"] == "from env"
    assert isinstance(from_args, LlmSuccess) and from_args.content[0]["text"] == "from args"
    assert isinstance(wrong_key, LlmFailure) and wrong_key.status == 401  # env base_url, argument key
    assert len(env_fake.requests) == 2 and len(arg_fake.requests) == 1


@pytest.mark.req("REQ-BED-005")
@pytest.mark.parametrize("shape", ["hanging", "slow", "before_headers"])
async def test_cancel_aborts_the_http_request(fake_anthropic: FakeAnthropic, client: LlmClient, shape: str) -> None:
    if shape == "hanging":
        reply = Reply.hanging("a b c d e", after_events=3, limit_s=HANG_S)
    elif shape == "slow":
        reply = Reply.text_reply("x" * 100, deltas=100, delay_s=HANG_S / 100)
    else:
        reply = Reply(blocks=[TextBlock("never")], headers_delay_s=HANG_S)
    fake_anthropic.enqueue(reply)
    first_delta = asyncio.Event()

    def on_text(_: str) -> None:
        first_delta.set()

    task = asyncio.create_task(client.stream(make_request(), on_text))
    if shape == "before_headers":
        assert await fake_anthropic.await_for(lambda rs: len(rs) == 1 and rs[0].held == "headers")
    else:
        await asyncio.wait_for(first_delta.wait(), GUARD_S)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, GUARD_S)
    # The server sees the client go away before its hang (or its slow stream, or its held headers) would end.
    assert await fake_anthropic.await_for(lambda rs: rs[0].ended_at is not None, timeout=GUARD_S)
    rec = fake_anthropic.requests[0]
    assert rec.disconnected
    assert not rec.completed
    assert rec.ended_at is not None and rec.ended_at - rec.started_at < HANG_S


@pytest.mark.req("REQ-BED-005")
async def test_client_is_usable_after_a_cancel(fake_anthropic: FakeAnthropic, client: LlmClient) -> None:
    fake_anthropic.enqueue(Reply.hanging(), Reply.text_reply("next answer", deltas=2))
    started = asyncio.Event()
    task = asyncio.create_task(client.stream(make_request(), lambda t: started.set()))
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    result = await client.stream(make_request(), lambda t: None)
    assert isinstance(result, LlmSuccess)
    assert result.content == [{"type": "text", "text": "next answer"}]


async def test_callback_errors_propagate_unchanged(fake_anthropic: FakeAnthropic, client: LlmClient) -> None:
    fake_anthropic.enqueue(Reply.text_reply("abc", deltas=3))

    def boom(_: str) -> None:
        raise RuntimeError("bug in the caller")

    with pytest.raises(RuntimeError, match="bug in the caller"):
        await client.stream(make_request(), boom)


@pytest.mark.req("REQ-BED-003")
async def test_concurrent_streams_overlap(fake_anthropic: FakeAnthropic, client: LlmClient) -> None:
    """Eight streams through one client run in parallel: proven by overlap recorded in the fake server."""

    def route(body: dict[str, Any]) -> Reply:
        agent = body["messages"][0]["content"]
        return Reply.text_reply(f"{agent}:" + "y" * 500, deltas=500, delay_s=0.0005)

    fake_anthropic.handler = route
    outputs: dict[str, list[str]] = {f"agent{i}": [] for i in range(8)}
    results = await asyncio.gather(
        *(
            client.stream(make_request(messages=[{"role": "user", "content": name}]), outputs[name].append)
            for name in outputs
        )
    )
    assert all(isinstance(r, LlmSuccess) for r in results)
    for name, pieces in outputs.items():
        assert "".join(pieces) == f"{name}:" + "y" * 500  # each stream got its own answer, unmixed
    assert fake_anthropic.max_concurrency() == 8


@pytest.mark.req("REQ-PROTO-030", "REQ-PROTO-049")
def test_a_big_answer_is_assembled_in_linear_time() -> None:
    """20 MB of text in 1 KB deltas: the answer is built once from its pieces. Adding each delta to the whole
    text so far copied ~200 GB (minutes at 100% CPU); joining takes milliseconds."""
    from types import SimpleNamespace as NS

    from phoenix_lsp.llm.client import _Accumulator

    piece = "y" * 1023 + "\n"
    acc = _Accumulator()
    seen = 0

    def on_text(text: str) -> None:
        nonlocal seen
        seen += len(text)

    started = time.perf_counter()
    acc.feed(NS(type="content_block_start", index=0, content_block=NS(type="text", text="")), on_text)
    delta = NS(type="content_block_delta", index=0, delta=NS(type="text_delta", text=piece))
    for _ in range(20 * 1024):
        acc.feed(delta, on_text)
    acc.feed(NS(type="content_block_stop", index=0), on_text)
    acc.feed(NS(type="message_stop"), on_text)
    result = acc.result()
    elapsed = time.perf_counter() - started
    assert seen == 20 * 1024 * 1024 and len(result.content[0]["text"]) == seen
    # a quadratic assembly copies terabytes (minutes); a linear one takes well under a second quietly, and some
    # seconds at load 20, where 5 s was near the edge
    assert elapsed < 30, f"{elapsed:.1f} s to assemble 20 MB"


@pytest.mark.req("REQ-BED-003")
def test_a_text_block_never_closed_is_still_delivered() -> None:
    from types import SimpleNamespace as NS

    from phoenix_lsp.llm.client import _Accumulator

    acc = _Accumulator()
    acc.feed(NS(type="content_block_start", index=0, content_block=NS(type="text", text="Hel")), lambda t: None)
    acc.feed(NS(type="content_block_delta", index=0, delta=NS(type="text_delta", text="lo")), lambda t: None)
    acc.feed(NS(type="message_stop"), lambda t: None)
    assert acc.result().content == [{"type": "text", "text": "Hello"}]


@pytest.mark.req("REQ-PROTO-049", "REQ-PROTO-029")
async def test_a_fast_stream_lets_other_tasks_run_between_its_events(
    fake_anthropic: FakeAnthropic, client: LlmClient
) -> None:
    """A fast model's events arrive dozens to a read; working through them without a pause held the event loop
    for as long as that took, and every other conversation's requests waited. The stream's task now lets
    the loop run others at least every few milliseconds."""
    fake_anthropic.enqueue(Reply.text_reply("w " * 200, deltas=200))
    turns = 0
    done = asyncio.Event()

    async def other_conversation() -> None:
        nonlocal turns
        while not done.is_set():
            turns += 1
            await asyncio.sleep(0)

    def slow_consumer(text: str) -> None:
        time.sleep(0.001)  # 1 ms of work per delta: 200 ms in all, most of it on events already read

    other = asyncio.create_task(other_conversation())
    try:
        result = await client.stream(make_request(), slow_consumer)
    finally:
        done.set()
        await other
    assert isinstance(result, LlmSuccess)
    assert turns >= 40, f"the other task ran {turns} times while the stream took 200 ms of work"


@pytest.mark.req("REQ-PROTO-062")
async def test_the_sdk_client_is_made_off_the_event_loop(fake_anthropic: FakeAnthropic,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Making the SDK's client reads the certificate authorities for its TLS context (tens of ms): the first
    request makes it in a thread, never on the event loop, and every request after it uses the same one."""
    import ssl
    import threading

    made_on: list[int] = []
    plain = ssl.create_default_context

    def recorded(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        made_on.append(threading.get_ident())
        return plain(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", recorded)
    client = LlmClient(api_key="k", base_url=fake_anthropic.base_url, timeout_s=10)
    try:
        for _ in range(2):
            fake_anthropic.enqueue(Reply.text_reply("ok"))
            assert isinstance(await client.stream(make_request(), lambda _: None), LlmSuccess)
    finally:
        await client.aclose()
    assert made_on, "no TLS context was made: the test no longer sees how the client is made"
    assert threading.get_ident() not in made_on, "the SDK's client was made on the event loop"
