"""Attacks through an MCP tool's images (issue 37, REQ-MCP-021), through the real server and the tests' own MCP
server (``tests/tools/tracker_server.py``): an image of 64 MB, one of 6 MB, one that claims to be a PNG and is
not, a decompression bomb, 10,000 image blocks. Each costs at most that call (a clear note, or one tool error),
never the turn, and nothing unbounded is decoded. The witnesses are the fake model server's recorded requests and
the tracker's own log of the calls it received."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from PIL import Image

from phoenix_lsp import limits
from tests.e2e.harness import Session, last_seq, session, tool_results, wait_idle
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.tools.tracker import received, tracker_env

pytestmark = pytest.mark.slow


async def turn(s: Session, cid: str, *calls: ToolUseBlock, answer: str = "ok") -> dict[str, dict[str, object]]:
    """One user turn in which the model makes ``calls``, then answers; the results it was given."""
    s.fake.enqueue(Reply.tool_reply(*calls), Reply.text_reply(answer))
    mark = last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "go"})
    await wait_idle(s, cid, mark, timeout=180)
    assert "".join(e["text"] for e in s.of("textDelta", cid)).endswith(answer), "the turn did not go on"
    return tool_results(s.fake.requests[-1])


def text_of(result: dict[str, object]) -> str:
    content = result["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)  # type: ignore


def images_of(result: dict[str, object]) -> list[bytes]:
    content = result["content"]
    if isinstance(content, str):
        return []
    return [base64.b64decode(b["source"]["data"]) for b in content if b.get("type") == "image"]  # type: ignore


def picture(kind: str, count: int = 1, n: int = 1) -> ToolUseBlock:
    return ToolUseBlock("mcp__tracker__picture", {"kind": kind, "count": count}, id=f"toolu_{kind}{n}")


@pytest.mark.req("REQ-MCP-021", "REQ-PROTO-063")
async def test_a_64_mb_image_is_one_tool_error_and_the_next_image_still_arrives(fake_anthropic: FakeAnthropic,
                                                                              tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path)) as s:
        cid = await s.new()
        huge, oversize, real = picture("huge"), picture("oversize"), picture("png")
        results = await turn(s, cid, huge, oversize, real)
        assert results[huge.id].get("is_error") is True and "RESULT_TOO_LARGE" in text_of(results[huge.id])
        note = text_of(results[oversize.id])
        assert not results[oversize.id].get("is_error") and "here is oversize" in note
        assert f"over the limit of {limits.MCP_IMAGE_BYTES:,} bytes for one image" in note, note
        assert images_of(results[oversize.id]) == []
        [image] = images_of(results[real.id])
        assert Image.open(io.BytesIO(image)).size == (64, 48)
        assert received(tmp_path) == ["picture", "picture", "picture"]
        assert all(len(json.dumps(r.body)) < 1_000_000 for r in s.fake.requests)


@pytest.mark.req("REQ-MCP-021")
async def test_data_that_claims_to_be_a_png_and_a_decompression_bomb_become_notes(fake_anthropic: FakeAnthropic,
                                                                                 tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path)) as s:
        cid = await s.new()
        fake, bomb = picture("fake"), picture("bomb")
        results = await turn(s, cid, fake, bomb)
        fake_note, bomb_note = text_of(results[fake.id]), text_of(results[bomb.id])
        assert not results[fake.id].get("is_error") and images_of(results[fake.id]) == []
        assert "here is fake" in fake_note and "Image 1 of the result (image/png" in fake_note
        assert "left out: it is not a recognisable image" in fake_note, fake_note
        assert not results[bomb.id].get("is_error") and images_of(results[bomb.id]) == []
        assert "left out" in bomb_note and "pixels" in bomb_note, bomb_note
        assert [e["summary"].startswith("image (") for e in s.of("toolEnd", cid)] == [False, False]


@pytest.mark.req("REQ-MCP-021")
async def test_10000_image_blocks_give_the_model_the_first_few_and_a_note(fake_anthropic: FakeAnthropic,
                                                                         tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path)) as s:
        cid = await s.new()
        many = picture("tiny", 10_000)
        results = await turn(s, cid, many)
        assert not results[many.id].get("is_error")
        assert len(images_of(results[many.id])) == limits.MCP_IMAGES
        assert f"{10_000 - limits.MCP_IMAGES:,} more images of the result were left out" in text_of(results[many.id])
        assert received(tmp_path) == ["picture"]
