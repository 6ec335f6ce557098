"""``phoenix-lsp acp``: initialize, sessions, modes and a streamed answer (issue 28)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import acp
import pytest

from tests.acp.harness import TIMEOUT, agent
from tests.fake_anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.slow  # each test starts the agent as a subprocess


@pytest.mark.req("REQ-ACP-001", "REQ-ACP-002", "REQ-ACP-003", "REQ-ACP-004")
async def test_initialize_new_session_and_a_streamed_answer(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.text_reply("Hello there, how can I help?", deltas=5))
    async with agent(fake_anthropic, tmp_path) as a:
        init = a.editor.initialized  # type: ignore[attr-defined]
        assert init.protocol_version == 1
        assert init.agent_capabilities.load_session is True
        prompts = init.agent_capabilities.prompt_capabilities
        assert prompts.image is True and prompts.embedded_context is True
        session = await a.new()
        assert session.modes.current_mode_id == "restricted"  # a session starts Restricted
        assert [m.id for m in session.modes.available_modes] == ["restricted", "unrestricted"]
        answer = await a.prompt(session.session_id, "hello")
        assert answer.stop_reason == "end_turn"
        # every chunk arrived before the prompt's answer
        assert a.editor.text() == "Hello there, how can I help?"
        assert "agent_message_chunk" in a.editor.kinds()
        assert fake_anthropic.requests[0].messages[-1]["content"][-1]["text"].endswith("hello")


@pytest.mark.req("REQ-ACP-003")
async def test_set_mode_is_the_users_choice_both_ways(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with agent(fake_anthropic, tmp_path) as a:
        session = await a.new()
        sid = session.session_id
        await asyncio.wait_for(a.conn.set_session_mode(session_id=sid, mode_id="unrestricted"), TIMEOUT)
        await a.editor.wait_until(lambda: any(getattr(u, "current_mode_id", None) == "unrestricted"
                                              for u in a.editor.updates))
        assert not a.editor.asked  # the user's own choice: nobody is asked
        await asyncio.wait_for(a.conn.set_session_mode(session_id=sid, mode_id="restricted"), TIMEOUT)
        await a.editor.wait_until(lambda: [getattr(u, "current_mode_id", None) for u in a.editor.updates
                                           if u.session_update == "current_mode_update"][-1] == "restricted")
        with pytest.raises(acp.RequestError) as refused:
            await asyncio.wait_for(a.conn.set_session_mode(session_id=sid, mode_id="yolo"), TIMEOUT)
        assert "not a mode" in str(refused.value.data)


@pytest.mark.req("REQ-ACP-002", "REQ-ACP-004")
async def test_images_and_embedded_context_reach_the_model_and_usage_is_reported(fake_anthropic: FakeAnthropic,
                                                                                 tmp_path: Path) -> None:
    import base64
    import io

    from PIL import Image

    picture = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(picture, format="PNG")
    fake_anthropic.enqueue(Reply.text_reply("a red square"))
    async with agent(fake_anthropic, tmp_path) as a:
        session = await a.new()
        blocks = [acp.text_block("what is this?"),
                  acp.image_block(base64.b64encode(picture.getvalue()).decode(), "image/png"),
                  acp.resource_block(acp.embedded_text_resource("file:///src/app.py", "print('embedded')\n"))]
        answer = await asyncio.wait_for(a.conn.prompt(session_id=session.session_id, prompt=blocks), TIMEOUT)
        assert answer.stop_reason == "end_turn"
        usage = [u for u in a.editor.updates if u.session_update == "usage_update"]
        assert usage and usage[-1].used > 0 and usage[-1].size > 0
    sent = fake_anthropic.requests[0].messages[-1]["content"]
    assert any(b.get("type") == "image" for b in sent)
    text = "".join(b.get("text", "") for b in sent)
    assert "file:///src/app.py" in text and "print('embedded')" in text and "what is this?" in text
