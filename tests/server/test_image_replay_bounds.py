"""How many of a history's images one replay sends (issue 37, REQ-ACP-031): at most ``REPLAY_IMAGES``, the newest
first, each through the gate, in a real store (SQLite); the older ones, and one whose bytes changed on the disk,
keep their labels and say why they are not shown."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest
from PIL import Image as PILImage

from phoenix_lsp.core.machine import new_conversation
from phoenix_lsp.core.values import Image, Message, Text
from phoenix_lsp.server.usecases import images
from phoenix_lsp.store import Store


def png(n: int) -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (4 + n, 4), (n, 0, 0)).save(out, "PNG")
    return out.getvalue()


@pytest.mark.req("REQ-ACP-031")
async def test_a_replay_sends_the_newest_images_through_the_gate_and_names_the_rest(tmp_path: Path) -> None:
    total = images.REPLAY_IMAGES + 3
    with Store(tmp_path / "p.db") as store:
        ids = [store.put_image(png(n), "image/png") for n in range(total)]
        history = tuple(Message("user", (Text(f"picture {n}"), Image(ids[n], "image/png"))) for n in range(total))
        state = new_conversation("c1", model="m", working_directory="/w", sandbox=True, history=history)
        with sqlite3.connect(tmp_path / "p.db") as db:  # the newest one's bytes changed on the disk
            db.execute("UPDATE images SET data = ? WHERE id = ?", (png(200), ids[-1]))
        replayed = await images.for_replay(store, state)
    assert list(replayed) == ids[::-1], "every image of the history is named, the newest first"
    assert replayed[ids[-1]].image is None and "not the ones it kept" in replayed[ids[-1]].missing
    sent = [i for i in ids if replayed[i].image is not None]
    assert sent == ids[-1 - images.REPLAY_IMAGES:-1], "the newest images that pass, no more than the bound"
    for old in ids[:2]:
        assert replayed[old].image is None and "at most" in replayed[old].missing
        assert replayed[old].label.startswith("image (PNG, ")
