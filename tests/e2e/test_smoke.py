from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.harness import session
from tests.fake_anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess


@pytest.mark.req("REQ-BED-003", "REQ-PROTO-008", "REQ-BED-011")
async def test_hello_streams_and_goes_idle(fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str) -> None:
    fake_anthropic.enqueue(Reply.text_reply("Hello there, how can I help?", deltas=5))
    async with session(fake_anthropic, tmp_path, editor) as s:
        cid = await s.new()
        result = await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "hi"})
        assert result["accepted"] is True
        await s.wait_status(cid, "idle")
        deltas = "".join(e["text"] for e in s.of("textDelta", cid))
        assert deltas == "Hello there, how can I help?"
        seqs = [e["seq"] for e in s.events if e["conversationId"] == cid]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert [m["role"] for m in conv["messages"]] == ["user", "assistant"]
