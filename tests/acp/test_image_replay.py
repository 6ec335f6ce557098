"""A session's images replayed on ``session/load`` (issue 37, REQ-ACP-031, REQ-MCP-021), driven by the ACP SDK's
client side against a new agent over the same store: the image the user sent with the prompt and the image an MCP
tool returned come back as image content blocks (the call's text naming it as the live call did), their pixels
through the one gate (the tracker's token, hidden in the PNG's text chunk, is never in them)."""

from __future__ import annotations

import asyncio
import base64
import io
from pathlib import Path
from typing import Any

import acp
import pytest
from PIL import Image

from tests.acp.harness import TIMEOUT, Editor, agent
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.tools.tracker import TOKEN, tracker_env

pytestmark = pytest.mark.slow  # the agent and an MCP server run as subprocesses


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(out, "PNG")
    return out.getvalue()


def replayed(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The session/update notifications the client received before the answer to session/load (id 1)."""
    answer = next(i for i, m in enumerate(wire) if m["direction"] == "incoming" and m.get("id") == 1)
    return [m["params"]["update"] for m in wire[:answer] if m.get("method") == "session/update"]


def pixels(block: dict[str, Any]) -> tuple[tuple[int, int], bytes]:
    data = base64.b64decode(block["data"])
    with Image.open(io.BytesIO(data)) as opened:
        assert opened.format == "PNG"
        return opened.size, data


@pytest.mark.req("REQ-ACP-031", "REQ-MCP-021")
async def test_load_replays_the_users_and_the_tools_images(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    call = ToolUseBlock("mcp__tracker__picture", {"kind": "png"}, id="toolu_p1")
    fake_anthropic.enqueue(Reply.tool_reply(call), Reply.text_reply("a gradient"))
    env = tracker_env(tmp_path)
    async with agent(fake_anthropic, tmp_path, env=env) as first:
        sid = (await first.new()).session_id
        prompt = [acp.text_block("like this one"), acp.image_block(base64.b64encode(png(30, 20)).decode(), "image/png")]
        done = await asyncio.wait_for(first.conn.prompt(session_id=sid, prompt=prompt), TIMEOUT * 2)
        assert done.stop_reason == "end_turn"
        live = first.editor.call_text("toolu_p1").splitlines()[0]
    async with agent(fake_anthropic, tmp_path, Editor(), env=env) as second:
        await asyncio.wait_for(second.conn.load_session(cwd=str(second.workdir), session_id=sid, mcp_servers=[]),
                               TIMEOUT)
        updates = replayed(second.editor.wire)
    users = [u["content"] for u in updates if u["sessionUpdate"] == "user_message_chunk"]
    assert users[0]["type"] == "text" and users[0]["text"].endswith("like this one")
    [user_image] = [c for c in users if c["type"] == "image"]
    assert user_image["mimeType"] == "image/png" and pixels(user_image)[0] == (30, 20)
    [final] = [u for u in updates if u.get("toolCallId") == "toolu_p1" and u.get("status") == "completed"]
    parts = [c["content"] for c in final["content"]]
    assert parts[0]["type"] == "text" and parts[0]["text"].startswith(live + "\nhere is png"), parts[0]
    assert live.startswith("image (PNG, ")
    [tool_image] = [p for p in parts if p["type"] == "image"]
    size, data = pixels(tool_image)
    assert size == (64, 48) and TOKEN.encode() not in data
