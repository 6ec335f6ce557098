"""Attacks on the images a conversation sends to the model (REQ-SEC-043): the store's file is on the disk, so
between two runs of the server anything with the user's rights may change it, and the next turn reads the
conversation's images back from it for the model's request. Four kept images are changed there: one's bytes
replaced by another PNG (with a token in a text chunk), one's by 6 MB, one's bytes corrupted by a single flipped
byte (its sha256 no longer its id), and one swapped whole, its id made to fit, for a PNG whose text chunk carries
the server's API key. The witness is what the fake model server received for the next turn: nothing is sent as it
lies on the disk, the three refused images are each replaced by a note naming the image and saying why, the
swapped one arrives as its pixels alone (neither the token nor the key is in its bytes), and the turn goes on.

The same gate holds on every surface, since the turn is the one way to the model: an image an ACP editor puts in a
prompt, whose text chunk carries a token, reaches the model as its pixels alone (before, an attachment within the
limits went as it was sent, metadata and all). And the store's image bytes have one reader, the gate: no module
but ``server/usecases/images.py`` asks the store for them."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import acp
import pytest
from PIL import Image

from tests.acp.harness import TIMEOUT, agent
from tests.e2e.harness import API_KEY, last_seq, session, wait_idle
from tests.fake_anthropic import FakeAnthropic, Reply
from tests.security.test_image_replay_attacks import TOKEN, database, kept_id, png

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def tamper(db_path: Path, replaced: str, oversized: str, corrupted: str, swapped: str) -> str:
    """Change the four images on the disk; the swapped one's new id."""
    swap = png(40, 10, (0, 0, 255), f"swapped, key {API_KEY}")
    swap_id = hashlib.sha256(swap).hexdigest()
    with sqlite3.connect(db_path) as db:
        [(kept,)] = db.execute("SELECT data FROM images WHERE id = ?", (corrupted,)).fetchall()
        flipped = bytes(kept[:-20]) + bytes([kept[-20] ^ 1]) + bytes(kept[-19:])
        db.execute("UPDATE images SET data = ? WHERE id = ?", (png(12, 12, (0, 255, 0), f"token {TOKEN}"), replaced))
        db.execute("UPDATE images SET data = ? WHERE id = ?", (b"\x89PNG\r\n\x1a\n" + b"A" * (6 << 20), oversized))
        db.execute("UPDATE images SET data = ? WHERE id = ?", (flipped, corrupted))
        db.execute("UPDATE images SET id = ?, data = ?, size = ? WHERE id = ?", (swap_id, swap, len(swap), swapped))
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            for column in db.execute(f"PRAGMA table_info({table})").fetchall():
                if column[2].upper() == "TEXT":
                    db.execute(f"UPDATE {table} SET {column[1]} = replace({column[1]}, ?, ?)", (swapped, swap_id))
    return swap_id


def blocks(request: Any) -> list[dict[str, Any]]:
    """Every content block of a request's messages, those inside tool results too."""
    out: list[dict[str, Any]] = []
    for message in request.messages:
        for block in message["content"] if isinstance(message["content"], list) else []:
            out.append(block)
            if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                out.extend(block["content"])
    return out


@pytest.mark.req("REQ-SEC-043")
async def test_images_changed_on_the_disk_reach_the_model_only_through_the_gate(fake_anthropic: FakeAnthropic,
                                                                                tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.text_reply("four pictures"))
    sent = [png(20 + n, 20 + n, (255, 60 * n, 0)) for n in range(4)]
    async with session(fake_anthropic, tmp_path) as first:
        cid = await first.new()
        mark = last_seq(first, cid)
        await first.request("phoenix/sendMessage", {"conversationId": cid, "text": "look", "images": [
            {"mediaType": "image/png", "data": base64.b64encode(data).decode()} for data in sent]})
        await wait_idle(first, cid, mark)
    replaced, oversized, corrupted, swapped = (kept_id(data) for data in sent)
    swap_id = tamper(database(tmp_path), replaced, oversized, corrupted, swapped)

    fake_anthropic.enqueue(Reply.text_reply("still here"))
    async with session(fake_anthropic, tmp_path) as second:
        mark = last_seq(second, cid)
        await second.request("phoenix/sendMessage", {"conversationId": cid, "text": "and now?"})
        assert await fake_anthropic.await_for(lambda rs: len(rs) == 2, 30), "the next turn's request never came"
        check(fake_anthropic.requests[-1], replaced, oversized, corrupted, swap_id)
        await wait_idle(second, cid, mark)
        conv = await second.request("phoenix/getConversation", {"conversationId": cid})
        assert "still here" in json.dumps(conv["messages"]), "the turn did not go on"


def check(request: Any, replaced: str, oversized: str, corrupted: str, swap_id: str) -> None:
    """What the model received: one image (the swapped one's pixels alone), a note for each refused one."""
    found = blocks(request)
    images = [base64.b64decode(b["source"]["data"]) for b in found if b.get("type") == "image"]
    notes = " ".join(b["text"] for b in found if b.get("type") == "text")
    raw = json.dumps(request.body)
    assert TOKEN not in raw and API_KEY not in raw
    assert all(TOKEN.encode() not in data and API_KEY.encode() not in data for data in images), \
        "an image was sent with the text chunk the disk gave it"
    assert base64.b64encode(b"A" * 3000).decode() not in raw, "the oversized bytes were sent"
    assert len(images) == 1, f"only the swapped image passes the gate, {len(images)} images were sent"
    with Image.open(io.BytesIO(images[0])) as opened:
        assert opened.size == (40, 10) and not getattr(opened, "text", {}), "the swapped image kept its text chunk"
    for image_id, why in ((replaced, "not the ones it kept"), (oversized, "over the limit"),
                          (corrupted, "not the ones it kept")):
        assert f"image://{image_id}" in notes and why in notes, (image_id, why, notes)
    assert swap_id not in notes


@pytest.mark.req("REQ-SEC-043")
async def test_an_acp_prompts_image_reaches_the_model_as_its_pixels_alone(fake_anthropic: FakeAnthropic,
                                                                          tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.text_reply("a picture"))
    picture = png(24, 16, (10, 200, 90), f"location and token {TOKEN}")
    async with agent(fake_anthropic, tmp_path) as a:
        session_id = (await a.new()).session_id
        prompt = [acp.text_block("what is this?"), acp.image_block(base64.b64encode(picture).decode(), "image/png")]
        answer = await asyncio.wait_for(a.conn.prompt(session_id=session_id, prompt=prompt), TIMEOUT)
        assert answer.stop_reason == "end_turn"
    images = [base64.b64decode(b["source"]["data"]) for b in blocks(fake_anthropic.requests[-1])
              if b.get("type") == "image"]
    assert len(images) == 1 and TOKEN.encode() not in images[0], "the image went to the model with its text chunk"
    with Image.open(io.BytesIO(images[0])) as opened:
        assert opened.size == (24, 16)


def test_the_stores_image_bytes_have_one_reader_the_gate() -> None:
    """``Store.get_image`` is called by ``usecases/images.stored`` alone: any other caller would send an image
    around the gate."""
    callers = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "phoenix_lsp").rglob("*.py"))
               for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               if re.search(r"\.get_image\b", line)]
    assert callers == ["phoenix_lsp/server/usecases/images.py:" + str(_stored_line())], callers


def _stored_line() -> int:
    text = (ROOT / "phoenix_lsp" / "server" / "usecases" / "images.py").read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(text, 1) if "store.get_image(" in line)


@pytest.mark.req("REQ-SEC-043")
async def test_an_attachments_text_chunk_never_reaches_the_stores_file(fake_anthropic: FakeAnthropic,
                                                                       tmp_path: Path) -> None:
    """An image is gated when it is kept: the store holds its pixels encoded again, never the file as it was sent
    (its text chunk, metadata). The witnesses are the data directory's files (the database and its write-ahead
    log) and the fake model server's requests: the image is the same bytes before and after a restart (the prompt
    cache's prefix), which are the bytes the store holds."""
    fake_anthropic.enqueue(Reply.text_reply("a picture"), Reply.text_reply("the same picture"))
    picture = png(48, 32, (200, 20, 90), f"where it was taken, and token {TOKEN}")
    async with session(fake_anthropic, tmp_path) as first:
        cid = await first.new()
        mark = last_seq(first, cid)
        await first.request("phoenix/sendMessage", {"conversationId": cid, "text": "look", "images": [
            {"mediaType": "image/png", "data": base64.b64encode(picture).decode()}]})
        await wait_idle(first, cid, mark)
    stored = [p for p in (tmp_path / "data").rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]
    assert stored == [], f"the attachment's text chunk was kept in {stored}"
    async with session(fake_anthropic, tmp_path) as second:
        mark = last_seq(second, cid)
        await second.request("phoenix/sendMessage", {"conversationId": cid, "text": "again"})
        await wait_idle(second, cid, mark)
    sent = [[base64.b64decode(b["source"]["data"]) for b in blocks(r) if b.get("type") == "image"]
            for r in fake_anthropic.requests]
    assert len(sent) == 2 and sent[0] == sent[1] and len(sent[0]) == 1, "the image's bytes changed across a restart"
    with sqlite3.connect(database(tmp_path)) as db:
        [(kept,)] = db.execute("SELECT data FROM images").fetchall()
    assert bytes(kept) == sent[0][0] and TOKEN.encode() not in kept


@pytest.mark.req("REQ-SEC-043")
def test_an_image_has_one_way_into_the_store_the_gate() -> None:
    """``Store.put_image`` is called by ``usecases/images.keep`` alone, which takes the gate's output: any other
    caller would keep an image as it was sent (its metadata in the store's file) and make the request decode it."""
    callers = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "phoenix_lsp").rglob("*.py"))
               for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               if re.search(r"\.put_image\(", line)]
    assert [c.rsplit(":", 1)[0] for c in callers] == ["phoenix_lsp/server/usecases/images.py"], callers
