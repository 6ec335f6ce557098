"""The last unbounded inputs (issue 34): a model's stream whose SSE line never ends.

A provider's SDK gathers an SSE line before it decodes it, however long the line grows: a model server (or a
proxy before it) that sends one endless ``data:`` line held the server's memory to the end of it. The answer is
now bounded as it arrives (``bounded_http``, the bounds in ``limits``): over one event's bound the read ends,
the turn fails with what, why and what next, and the server answers the next message. The witnesses are outside
the server: what the fake model server managed to send before the server stopped reading (it stops at the
bound, so nothing past it was read, let alone held), the client's events, and the next turn's answer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from phoenix_lsp import limits
from tests.e2e.harness import last_seq, session, wait_idle
from tests.fake_anthropic import FakeAnthropic, Reply
from tests.fake_openai import FakeOpenAI

pytestmark = pytest.mark.slow  # each test starts the server as a subprocess

OPENAI_KEY = "sk-proj-stream-bounds-0123456789abcdef"
LINE = 3 * limits.PROVIDER_STREAM.unit.max_bytes  # an endless line, as far as the server is concerned


@pytest.mark.req("REQ-PROTO-063")
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_an_endless_sse_line_ends_the_turn_with_a_clear_error_and_the_server_goes_on(
        provider: str, fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    model = fake_openai if provider == "openai" else fake_anthropic
    model.enqueue(Reply.text_reply("the start of an answer", deltas=4, endless_line=LINE),
                  Reply.text_reply("a normal answer"))
    env = {**fake_openai.env(OPENAI_KEY),
           "PHOENIX_MODEL": "openai/gpt-4.1" if provider == "openai" else "claude-sonnet-4-6"}
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await s.new()
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "hello"})
        await s.wait_status(cid, "error")
        errors = s.of("error", cid)
        assert len(errors) == 1, errors
        message = errors[0]["message"]
        assert "one event of the model's stream" in message and "over the limit" in message, message
        assert f"{limits.PROVIDER_STREAM.unit.max_bytes:,}" in message, message
        assert not s.of("retry", cid), "read again, the answer would be read to its bound again"
        # the fake notices the closed connection at its next write
        assert await model.await_for(lambda requests: requests[0].disconnected, timeout=30.0)
        first = model.requests[0]
        # the server stopped reading at the bound: the fake could not send the rest (what the socket buffers
        # hold aside), so nothing past the bound was read or held
        assert first.line_bytes_sent < LINE // 2, first.line_bytes_sent
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "again"})
        await wait_idle(s, cid, mark)
        conversation = await s.request("phoenix/getConversation", {"conversationId": cid})
    assert conversation["messages"][-1]["content"] == [{"type": "text", "text": "a normal answer"}]
    # nothing of the user's is lost: both messages are in the conversation
    said = [m["content"] for m in conversation["messages"] if m["role"] == "user"]
    assert any("hello" in str(c) for c in said) and any("again" in str(c) for c in said), said
