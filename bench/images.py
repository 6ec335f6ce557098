"""Images read back (issue 37, REQ-PROTO-072, REQ-ACP-031): what the gate costs, and what a history's image
summaries cost.

Run ``python -m bench images [--quick]``. Each figure beside a baseline measured in the same run, on the same
store file:

- one image read back through the gate (``usecases/images``: the row measured, the bytes read, their sha256
  checked, decoded and encoded again), a 1568 x 980 screenshot-like PNG, against reading its bytes from the store
  alone (what was sent before the gate existed: nothing, or the raw file);
- a model request's images (REQ-SEC-043): a history's 10 distinct screenshot-like PNGs through the gate for the
  request (``images.for_model``), the first request (nothing passed yet: each decoded and encoded) and the next ones
  (kept by id), against reading their bytes from the store alone (what the request carried before the gate);
- a history of 200 messages, 50 of them with an image, made into getConversation's views (``wire.message_to_wire``
  with the store's sizes), against the same history with the images left out;
- images gated when they are kept (REQ-SEC-043): the first request after a restart (nothing passed) with 10
  screenshots kept through the gate (``images.keep``: the request checks each row's size, the sha256 and the gate's
  form, and decodes none), against the same screenshots kept as they were sent, as a screenshot tool writes them
  (with a pHYs chunk), which the request decodes and encodes (what every first request paid before); and what keeping
  one attachment costs now (``llm/images.gate``: decoded and encoded, then stored) against what it cost before
  (``prepare_image``: decoded to check it, stored as sent).
"""

from __future__ import annotations

import asyncio
import io
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PIL import Image as PILImage
from PIL import ImageDraw

from phoenix_lsp.core.values import Image, Message, Text, ToolResult, ToolUse
from phoenix_lsp.llm.images import gate, prepare_image
from phoenix_lsp.server import wire
from phoenix_lsp.server.usecases import images
from phoenix_lsp.store import Store


def _screenshot(shade: int = 250, dpi: int | None = None) -> bytes:
    """A PNG like a screenshot: flat areas, lines of 'text', a gradient band; ``dpi`` writes a pHYs chunk, as a
    screenshot tool does."""
    picture = PILImage.new("RGB", (1568, 980), (shade, shade, shade))
    draw = ImageDraw.Draw(picture)
    for row in range(0, 980, 18):
        draw.rectangle((40, row + 4, 40 + (row * 37) % 1200, row + 12), fill=(40, 40, 60))
    for x in range(1568):
        draw.line((x, 900, x, 980), fill=(x % 256, 128, 255 - x % 256))
    out = io.BytesIO()
    picture.save(out, "PNG", optimize=True, **({"dpi": (dpi, dpi)} if dpi else {}))
    return out.getvalue()


def _median_ms(fn: Callable[[], object], reps: int) -> float:
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def _figure(name: str, value: float, baseline_name: str, baseline: float, goal: str) -> dict[str, object]:
    return {"name": name, "value": round(value, 4), "unit": "ms", "baseline_name": baseline_name,
            "baseline_value": round(baseline, 4), "goal": goal}


def _history(ids: list[str], with_images: bool) -> list[Message]:
    out: list[Message] = []
    for n in range(100):
        call = ToolUse(f"t{n}", "mcp__tracker__picture", {"kind": "png"})
        out.append(Message("assistant", (Text(f"step {n}"), call)))
        pictures = (Image(ids[n % len(ids)], "image/png"),) if with_images and n % 2 == 0 else ()
        out.append(Message("user", (ToolResult(call.id, f"here is picture {n}", images=pictures),)))
    return out


def figures(quick: bool = False) -> list[dict[str, object]]:
    reps = 5 if quick else 30
    with tempfile.TemporaryDirectory(prefix="phoenix-images-bench-") as tmp, Store(Path(tmp) / "p.db") as store:
        data = _screenshot(dpi=144)  # as a screenshot tool writes it: not in the gate's form, so decoded
        image_id = store.put_image(data, "image/png")
        gated = _median_ms(lambda: images.through_gate(images.stored(store, image_id)), reps)
        raw = _median_ms(lambda: store.get_image(image_id), reps)
        ids = [image_id, *(store.put_image(_tiny(n), "image/png") for n in range(49))]
        full, bare = _history(ids, True), _history(ids, False)

        def views(history: list[Message]) -> Callable[[], object]:
            return lambda: [wire.message_to_wire(m, i, i, 0.0, store.image_size) for i, m in enumerate(history)]

        with_images = _median_ms(views(full), reps)
        without = _median_ms(views(bare), reps)
        shots = [Image(store.put_image(_screenshot(250 - n, dpi=144), "image/png"), "image/png") for n in range(10)]
        passed, loop = images.Passed(), asyncio.new_event_loop()
        try:
            cold = _median_ms(lambda: loop.run_until_complete(images.for_model(store, shots, passed)), 1)
            warm = _median_ms(lambda: loop.run_until_complete(images.for_model(store, shots, passed)), reps)
        finally:
            loop.close()
        bytes_only = _median_ms(lambda: [store.get_image(i.image_id) for i in shots], reps)
        sent = [_screenshot(240 - n, dpi=144) for n in range(10)]
        as_sent = [Image(store.put_image(data, "image/png"), "image/png") for data in sent]
        kept = [images.keep(store, gate(data, "image/png"), images.Passed()) for data in sent]
        loop = asyncio.new_event_loop()
        try:  # a fresh Passed each time: the first request after a restart
            before = _median_ms(lambda: loop.run_until_complete(images.for_model(store, as_sent, images.Passed())),
                                max(1, reps // 5))
            after = _median_ms(lambda: loop.run_until_complete(images.for_model(store, kept, images.Passed())), reps)
        finally:
            loop.close()
        keep_now = _median_ms(lambda: images.keep(store, gate(sent[0], "image/png"), images.Passed()), reps)
        keep_before = _median_ms(lambda: store.put_image(*prepare_image(sent[0], "image/png")), reps)
    return [
        _figure(f"one image read back through the gate ({len(data):,}-byte 1568x980 PNG, median)", gated,
                "its bytes read from the store alone", raw, "well under the model's own time for an image"),
        _figure("a request's 10 screenshot images through the gate, the first request (each decoded and encoded)",
                cold, "their bytes read from the store alone (the request before the gate)", bytes_only,
                "paid once per image per server life"),
        _figure("the same 10 images in the next requests (passed, kept by id; median)", warm,
                "their bytes read from the store alone", bytes_only, "under 1 ms for the 10"),
        _figure("getConversation's views of 200 messages, 50 with an image (median)", with_images,
                "the same 200 messages without images", without, "the images add under 1 ms each"),
        _figure("the first request after a restart: 10 screenshots kept through the gate (size, sha256 and form "
                "checked, none decoded; median)", after,
                "the same 10 kept as sent (with a pHYs chunk), each decoded and encoded for the request", before,
                "a small fraction of the baseline (REQ-SEC-043: the gate paid when the image is kept)"),
        _figure("keeping one attached screenshot now (gated: decoded, encoded, stored; median)", keep_now,
                "keeping it before (decoded to check it, stored as sent)", keep_before,
                "paid once per image, where the request paid it at every restart"),
    ]


def _tiny(n: int) -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (8, 8), (n, n, n)).save(out, "PNG")
    return out.getvalue()


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(figures("--quick" in sys.argv))
