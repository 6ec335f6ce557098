"""The images of a model's request pass the one gate once per server life (REQ-SEC-043): what passed is kept by
the image's id (the sha256 the gate checked), bounded, so the next requests carry the very same bytes (the prompt
cache's prefix stays byte-stable) without decoding again, and a change on the disk afterwards cannot reach the
model; an image that fails stands as a note. A real store, its file changed with sqlite3 beside the server's own
connection."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import sqlite3
from pathlib import Path

import pytest
from PIL import Image as PILImage
from PIL.PngImagePlugin import PngInfo

from phoenix_lsp.core.values import Image, Message, Text, ToolResult
from phoenix_lsp.server import wire
from phoenix_lsp.server.usecases import images
from phoenix_lsp.store import Store

pytestmark = pytest.mark.req("REQ-SEC-043")


def png(side: int, text: str = "") -> bytes:
    info = PngInfo()
    if text:
        info.add_text("Comment", text)
    out = io.BytesIO()
    PILImage.new("RGB", (side, side), (side, 90, 200)).save(out, "PNG", pnginfo=info)
    return out.getvalue()


def change(db: Path, image_id: str, data: bytes) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE images SET data = ? WHERE id = ?", (data, image_id))


def test_a_passed_image_is_the_same_bytes_in_every_request_whatever_the_disk_holds_later(tmp_path: Path) -> None:
    with Store(tmp_path / "p.db") as store:
        kept = store.put_image(png(30, "kept-note"), "image/png")
        history = [Message("user", (Text("look"), Image(kept, "image/png")))]
        passed = images.Passed()

        def request() -> str:
            found = asyncio.run(images.for_model(store, images.images_in(history), passed))

            def picture(image_id: str) -> tuple[bytes, str] | str:
                one = found[image_id]
                return one if isinstance(one, str) else (one.data, one.media_type)
            return json.dumps(wire.history_to_api(history, picture))

        first = request()
        assert "kept-note" not in first and '"type": "image"' in first
        change(tmp_path / "p.db", kept, png(31, "changed-note"))
        assert request() == first, "the second request's bytes differ from the first's"
        fresh = images.Passed()  # a server started after the change: the gate refuses what the disk now holds
        found = asyncio.run(images.for_model(store, images.images_in(history), fresh))
        note = found[kept]
        assert isinstance(note, str) and "not the ones it kept" in note and f"image://{kept}" in note
        assert len(fresh) == 0, "a refused image was kept as passed"


def test_a_refused_image_is_a_note_in_its_place_and_the_others_go(tmp_path: Path) -> None:
    with Store(tmp_path / "p.db") as store:
        good, gone = store.put_image(png(12), "image/png"), hashlib.sha256(b"never kept").hexdigest()
        call = ToolResult("t1", "two pictures", images=(Image(good, "image/png"), Image(gone, "image/png")))
        history = [Message("user", (call,))]
        found = asyncio.run(images.for_model(store, images.images_in(history), images.Passed()))

        def picture(image_id: str) -> tuple[bytes, str] | str:
            one = found[image_id]
            return one if isinstance(one, str) else (one.data, one.media_type)
        [message] = wire.history_to_api(history, picture)
        content = message["content"][0]["content"]
        assert [b["type"] for b in content] == ["text", "image", "text"]
        assert f"image://{gone}" in content[2]["text"] and "no longer in the server's store" in content[2]["text"]


def test_what_passed_is_bounded_in_count_and_in_bytes() -> None:
    passed = images.Passed(most=2, room=100)
    for n, size in enumerate((40, 40, 40)):
        passed.put(images.KeptImage(f"{n}" * 64, b"x" * size, "image/png"))
    assert len(passed) == 2 and passed.get("0" * 64) is None, "the oldest was not dropped at the count bound"
    passed.get("1" * 64)  # used: kept before the unused one
    passed.put(images.KeptImage("3" * 64, b"x" * 60, "image/png"))
    assert passed.get("2" * 64) is None and passed.get("1" * 64) is not None and passed.get("3" * 64) is not None
    passed.put(images.KeptImage("5" * 64, b"x" * 50, "image/png"))  # 1 dropped by the count, 3 by the bytes
    assert [passed.get(c * 64) is not None for c in "135"] == [False, False, True]
    passed.put(images.KeptImage("4" * 64, b"x" * 101, "image/png"))
    assert passed.get("4" * 64) is None, "an image over the whole room was kept"


def test_an_image_kept_through_the_gate_is_sent_as_kept_after_a_restart_without_a_decode(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``keep`` stores the gate's form by its sha256 and counts it as passed; a server started later (nothing
    passed) checks the row's size, the hash and the form, and sends the kept bytes as they are: the request is the
    same bytes before and after the restart (the prompt cache's prefix), and no image is decoded for it."""
    from phoenix_lsp.llm.images import gate

    with Store(tmp_path / "p.db") as store:
        live = images.Passed()
        shot = images.keep(store, gate(png(40, "a note in a text chunk"), "image/png"), live)
        data, media_type = store.get_image(shot.image_id)
        assert b"a note in a text chunk" not in data and hashlib.sha256(data).hexdigest() == shot.image_id
        assert live.get(shot.image_id) is not None, "the kept image does not count as passed"
        first = asyncio.run(images.for_model(store, [shot], live))[shot.image_id]

        def no_decode(*_args: object, **_kwargs: object) -> None:
            raise AssertionError("the request decoded an image kept through the gate")
        monkeypatch.setattr(images, "gate", no_decode)
        after = asyncio.run(images.for_model(store, [shot], images.Passed()))[shot.image_id]
        assert isinstance(first, images.KeptImage) and isinstance(after, images.KeptImage)
        assert first.data == after.data == data and after.media_type == media_type == "image/png"


def test_bytes_not_in_the_gates_form_go_through_the_gate_again(tmp_path: Path) -> None:
    """An image stored as it was sent (by a version that did not gate on the way in, or a row swapped with a text
    chunk and its id made to fit) is not in the gated form: it is decoded and encoded for the request."""
    with Store(tmp_path / "p.db") as store:
        raw = png(20, "old-style-note")
        kept = store.put_image(raw, "image/png")
        found = asyncio.run(images.for_model(store, [Image(kept, "image/png")], images.Passed()))[kept]
        assert isinstance(found, images.KeptImage) and found.data != raw and b"old-style-note" not in found.data
