"""End-to-end: an MCP tool's images reach the model as images (issue 37, REQ-MCP-021), through the real server
with the tests' own MCP server (``tests/tools/tracker_server.py`` over stdio), on both providers' real SDKs
against the fake model servers: Anthropic gets image blocks inside the tool result; OpenAI's Chat Completions
takes text only in a tool message, so the images follow in a user message. The image is encoded again (the
token the tracker hid in its text chunk never reaches the model), every client is told "image (PNG, n KB)", and
the store keeps the bytes once, beside the conversation's rows, which hold its id."""

from __future__ import annotations

import base64
import io
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.e2e.harness import wait_idle
from tests.e2e.test_providers import Model, send, started
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.tools.tracker import TOKEN, received, tracker_env

pytestmark = pytest.mark.slow


def images_sent(model: Model, index: int) -> list[tuple[str, bytes]]:
    """(media type, bytes) of every image request ``index`` carried after the tool call, in either form."""
    found: list[tuple[str, bytes]] = []
    for message in model.requests[index].messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            inner = block.get("content") if block.get("type") == "tool_result" else [block]
            for part in inner if isinstance(inner, list) else []:
                if part.get("type") == "image":
                    found.append((part["source"]["media_type"], base64.b64decode(part["source"]["data"])))
                elif part.get("type") == "image_url":
                    head, data = part["image_url"]["url"].split(",", 1)
                    found.append((head.removeprefix("data:").split(";")[0], base64.b64decode(data)))
    return found


@pytest.mark.req("REQ-MCP-021")
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_an_image_result_reaches_the_model_as_an_image_on_every_provider(
        provider: str, fake_anthropic: FakeAnthropic, fake_openai: Any, tmp_path: Path) -> None:
    model = Model(provider, fake_anthropic, fake_openai)
    call = ToolUseBlock("mcp__tracker__picture", {"kind": "png"}, id="toolu_pic1")
    model.enqueue(Reply.tool_reply(call), Reply.text_reply("A gradient."))
    async with started(model, tmp_path, env=tracker_env(tmp_path)) as s:
        cid = await s.new()
        await wait_idle(s, cid, await send(s, cid, "show me the chart"), timeout=120)
        assert received(tmp_path) == ["picture"]
        text, is_error = model.results(1)["toolu_pic1"]
        assert not is_error and "here is png" in text
        [(media, data)] = images_sent(model, 1)
        assert media == "image/png"
        with Image.open(io.BytesIO(data)) as image:
            assert image.size == (64, 48) and image.format == "PNG"
            assert not any(TOKEN in str(v) for v in image.info.values())
        assert TOKEN.encode() not in data, "the image's text chunk (the tracker's token) reached the model"
        if provider == "openai":  # the tool message holds the text; a user message right after it the image
            roles = [m["role"] for m in model.requests[1].messages]
            assert roles[-2:] == ["tool", "user"]
            parts = model.requests[1].messages[-1]["content"]
            assert parts[0]["type"] == "text" and "returned" in parts[0]["text"] and parts[1]["type"] == "image_url"
        [end] = s.of("toolEnd", cid)
        assert end["summary"].startswith(f"image (PNG, {max(1, round(len(data) / 1024))} KB)\n"), end["summary"]
    # the store keeps the bytes once, in its images, and the conversation's row only their id
    [database] = [p for p in (tmp_path / "data").rglob("*") if p.is_file() and p.read_bytes()[:6] == b"SQLite"]
    with sqlite3.connect(database) as db:
        stored = [bytes(row[0]) for row in db.execute("SELECT data FROM images")]
        rows = "".join(row[0] for row in db.execute("SELECT json FROM messages"))
    assert stored == [data]
    assert base64.b64encode(data).decode()[:64] not in rows and '"images"' in rows
