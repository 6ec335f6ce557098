"""A conversation's images when it is opened again (issue 37, REQ-MCP-021, REQ-PROTO-072), through the real server
and a real LSP client (pytest-lsp), the tests' own MCP server (``tests/tools/tracker_server.py``) and the fake
model server: an MCP tool's image and an image the user attached are in ``phoenix/getConversation``'s history
after a restart, each as its summary (media type, size, the words every client shows) and a handle, never its
bytes, and ``phoenix/getArtifact`` serves the handle (to its own conversation only) through the one image gate."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from PIL import Image

from tests.e2e.harness import last_seq, session, wait_idle
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.tools.tracker import TOKEN, tracker_env

pytestmark = pytest.mark.slow


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 40, 40)).save(out, "PNG")
    return out.getvalue()


def label(media: str, size: int) -> str:
    return f"image ({media.removeprefix('image/').upper()}, {max(1, round(size / 1024))} KB)"


@pytest.mark.req("REQ-MCP-021", "REQ-PROTO-072")
async def test_a_reopened_conversation_shows_its_images_and_serves_them(fake_anthropic: FakeAnthropic,
                                                                        tmp_path: Path) -> None:
    call = ToolUseBlock("mcp__tracker__picture", {"kind": "png"}, id="toolu_pic1")
    fake_anthropic.enqueue(Reply.tool_reply(call), Reply.text_reply("A gradient."))
    attached = png(30, 20)
    env = tracker_env(tmp_path)
    async with session(fake_anthropic, tmp_path, env=env) as first:
        cid = await first.new()
        mark = last_seq(first, cid)
        await first.request("phoenix/sendMessage", {"conversationId": cid, "text": "show me the chart",
                                                    "images": [{"mediaType": "image/png",
                                                                "data": base64.b64encode(attached).decode()}]})
        await wait_idle(first, cid, mark, timeout=120)
        [end] = first.of("toolEnd", cid)
        live = end["summary"].splitlines()[0]
        other = await first.new()
    # a new server over the same store: the conversation opened again
    async with session(fake_anthropic, tmp_path, env=env) as second:
        conv = await second.request("phoenix/getConversation", {"conversationId": cid})
        raw = json.dumps(conv)
        blocks = [b for m in conv["messages"] for b in m["content"]]
        [result] = [b for b in blocks if b["type"] == "toolResult"]
        [tool_image] = result["images"]
        assert tool_image["label"] == live, "the reopened call does not say what the live one said"
        assert tool_image["mediaType"] == "image/png" and tool_image["label"] == label("image/png", tool_image["size"])
        [user_image] = [b for b in blocks if b["type"] == "image"]
        assert user_image["label"] == label("image/png", len(attached)) and user_image["size"] == len(attached)
        assert base64.b64encode(attached).decode()[:40] not in raw, "the history carried an image's bytes inline"
        for image, expected_size in ((tool_image, (64, 48)), (user_image, (30, 20))):
            got = await second.request("phoenix/getArtifact", {"conversationId": cid, "handle": image["handle"]})
            assert got["type"] == "image" and got["mediaType"] == "image/png"
            data = base64.b64decode(got["data"])
            assert got["size"] == len(data)
            with Image.open(io.BytesIO(data)) as opened:
                assert opened.size == expected_size and opened.format == "PNG"
            assert TOKEN.encode() not in data
        # another conversation cannot read them by their handle
        refused = await second.error("phoenix/getArtifact", {"conversationId": other, "handle": tool_image["handle"]})
        assert "not an image of this conversation" in refused.message, refused
