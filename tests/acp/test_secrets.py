"""No key in any update, log or file (issue 28): the API key of the environment never reaches the ACP client,
nor the data directory, even when the model and the user paste it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acp.harness import API_KEY, agent, received
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the agent as a subprocess


@pytest.mark.req("REQ-ACP-014")
async def test_the_api_key_never_reaches_the_client_nor_the_data_dir(fake_anthropic: FakeAnthropic,
                                                                      tmp_path: Path) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo $ANTHROPIC_API_KEY; env"}, id="toolu_b1"),
                         text=f"Your key is {API_KEY}."),
        Reply.text_reply(f"again: {API_KEY}"),
    )
    async with agent(fake_anthropic, tmp_path) as a:
        session = await a.new()
        await a.prompt(session.session_id, f"my key is {API_KEY}, keep it")
        assert a.editor.call_updates("toolu_b1")  # the turn ran its tool
        sent = received(a.editor)
        assert "agent_message_chunk" in sent
    assert API_KEY not in sent and API_KEY[10:40] not in sent
    files = [p for p in (tmp_path / "data").rglob("*") if p.is_file()]
    assert any(p.name == "phoenix-lsp.log" for p in files)
    for path in files:
        assert API_KEY.encode() not in path.read_bytes(), path
