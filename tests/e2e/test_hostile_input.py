"""Hostile or broken inputs get a clear error and lose nothing (REQ-SEC-001, REQ-SEC-002)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.harness import session
from tests.fake_anthropic import FakeAnthropic

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess


@pytest.mark.req("REQ-SEC-002", "REQ-PROTO-034")
async def test_unusable_data_directory_is_reported(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the data directory should be")
    async with session(fake_anthropic, tmp_path, data_dir=blocker) as s:
        with pytest.raises(JsonRpcException) as info:
            await s.request("phoenix/newConversation", {"workingDirectory": str(s.workdir)})
        assert "could not start" in info.value.message and "data directory" in info.value.message
        assert any("could not start" in m.message for m in s.client.messages)


@pytest.mark.req("REQ-SEC-001")
async def test_a_pasted_api_key_never_reaches_the_model(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    from tests.e2e.harness import API_KEY
    from tests.fake_anthropic import Reply

    fake_anthropic.enqueue(Reply.text_reply("noted"))
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": f"my key is {API_KEY}, keep it"})
        await s.wait_status(cid, "idle")
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
    sent = str(fake_anthropic.requests[0].messages)
    assert API_KEY not in sent and "[REDACTED]" in sent
    assert API_KEY not in str(conv) and API_KEY not in str(s.events)
