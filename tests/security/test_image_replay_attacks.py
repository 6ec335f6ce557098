"""Attacks on the images a reopened conversation sends back (issue 37, REQ-PROTO-072, REQ-ACP-031): the store's
file is on the disk, so between two runs of the server anything with the user's rights may change it. Three
images of a conversation are changed there: one's bytes replaced by another PNG (with a token in a text chunk),
one's by 6 MB, and one swapped whole, its id made to fit (a PNG whose text chunk holds the token, with the
conversation's rows rewritten to name it). Through the real server, the real LSP client's answers to
phoenix/getArtifact and the ACP SDK client's session/load replay are the witnesses: nothing is sent as it lies on
the disk, the replaced and the oversized images are refused saying why, and the swapped one arrives as its pixels
alone (the token is not in what the clients received)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from PIL.PngImagePlugin import PngInfo

from phoenix_lsp.llm.images import gate
from tests.acp.harness import TIMEOUT, agent
from tests.e2e.harness import last_seq, session, wait_idle
from tests.fake_anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.slow

TOKEN = "img-replay-tok-5c81e0a9"


def png(width: int, height: int, colour: tuple[int, int, int], text: str | None = None) -> bytes:
    info = PngInfo()
    if text:
        info.add_text("Comment", text)
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, "PNG", pnginfo=info)
    return out.getvalue()


def kept_id(data: bytes) -> str:
    """The id the store keeps an attached PNG by: the sha256 of its gated form (REQ-SEC-043)."""
    return hashlib.sha256(gate(data, "image/png")[0]).hexdigest()


def database(tmp_path: Path) -> Path:
    [found] = [p for p in (tmp_path / "data").rglob("*") if p.is_file() and p.read_bytes()[:6] == b"SQLite"]
    return found


def tamper(db_path: Path, replaced: str, oversized: str, swapped: str) -> tuple[bytes, str]:
    """Change the three images on the disk; the swapped one's new bytes and id."""
    other = png(12, 12, (0, 255, 0), f"replaced, token {TOKEN}")
    swap = png(40, 10, (0, 0, 255), f"swapped, token {TOKEN}")
    swap_id = hashlib.sha256(swap).hexdigest()
    with sqlite3.connect(db_path) as db:
        db.execute("UPDATE images SET data = ? WHERE id = ?", (other, replaced))
        db.execute("UPDATE images SET data = ? WHERE id = ?", (b"\x89PNG\r\n\x1a\n" + b"A" * (6 << 20), oversized))
        db.execute("UPDATE images SET id = ?, data = ?, size = ? WHERE id = ?", (swap_id, swap, len(swap), swapped))
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            for column in db.execute(f"PRAGMA table_info({table})").fetchall():
                if column[2].upper() == "TEXT":
                    db.execute(f"UPDATE {table} SET {column[1]} = replace({column[1]}, ?, ?)", (swapped, swap_id))
    return swap, swap_id


@pytest.mark.req("REQ-PROTO-072", "REQ-ACP-031")
async def test_images_changed_on_the_disk_are_never_sent_as_they_lie(fake_anthropic: FakeAnthropic,
                                                                     tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.text_reply("three pictures"))
    sent = [png(20, 20, (255, 0, 0)), png(21, 21, (255, 255, 0)), png(22, 22, (0, 255, 255))]
    async with session(fake_anthropic, tmp_path) as first:
        cid = await first.new()
        mark = last_seq(first, cid)
        await first.request("phoenix/sendMessage", {"conversationId": cid, "text": "look", "images": [
            {"mediaType": "image/png", "data": base64.b64encode(data).decode()} for data in sent]})
        await wait_idle(first, cid, mark)
    replaced, oversized, swapped = (kept_id(data) for data in sent)
    swap, swap_id = tamper(database(tmp_path), replaced, oversized, swapped)

    async with session(fake_anthropic, tmp_path) as second:
        conv = await second.request("phoenix/getConversation", {"conversationId": cid})
        handles = {b["imageId"]: b["handle"] for m in conv["messages"] for b in m["content"] if b["type"] == "image"}
        assert set(handles) == {replaced, oversized, swap_id}
        refused = await second.error("phoenix/getArtifact", {"conversationId": cid, "handle": handles[replaced]})
        assert "not the ones it kept" in refused.message, refused
        refused = await second.error("phoenix/getArtifact", {"conversationId": cid, "handle": handles[oversized]})
        assert "over the limit" in refused.message, refused
        got = await second.request("phoenix/getArtifact", {"conversationId": cid, "handle": handles[swap_id]})
        served = base64.b64decode(got["data"])
        assert TOKEN.encode() not in served and served != swap, "the swapped image was sent as it lies on the disk"
        with Image.open(io.BytesIO(served)) as opened:
            assert opened.size == (40, 10) and not any(TOKEN in str(v) for v in opened.info.values())

    async with agent(fake_anthropic, tmp_path) as acp_client:
        await asyncio.wait_for(acp_client.conn.load_session(cwd=str(acp_client.workdir), session_id=cid,
                                                            mcp_servers=[]), TIMEOUT)
        wire = acp_client.editor.wire
    updates = [m["params"]["update"] for m in wire if m.get("method") == "session/update"]
    chunks: list[dict[str, Any]] = [u["content"] for u in updates if u["sessionUpdate"] == "user_message_chunk"]
    images = [base64.b64decode(c["data"]) for c in chunks if c["type"] == "image"]
    notes = " ".join(c["text"] for c in chunks if c["type"] == "text")
    assert len(images) == 1, "only the swapped image passes the gate"
    with Image.open(io.BytesIO(images[0])) as opened:
        assert opened.size == (40, 10)
    assert "not the ones it kept" in notes and "over the limit" in notes, notes
    raw = json.dumps(wire)
    assert TOKEN not in raw and all(TOKEN.encode() not in data for data in images)
    assert base64.b64encode(b"A" * 3000).decode() not in raw, "the oversized bytes were sent"
