"""Image preparation with real generated images (REQ-BED-013)."""

from __future__ import annotations

import base64
import io
import os
import random
from typing import Any

import pytest
from PIL import Image

from phoenix_lsp.llm.images import MAX_ENCODED_BYTES, MAX_LONG_EDGE, ImageError, prepare_image

pytestmark = pytest.mark.req("REQ-BED-013")


def encode(img: Image.Image, fmt: str, **kw: object) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


def gradient(w: int, h: int, mode: str = "RGB") -> Image.Image:
    img = Image.linear_gradient("L").resize((w, h))
    return Image.merge("RGB", (img, img.transpose(Image.Transpose.FLIP_LEFT_RIGHT), img)).convert(mode)


def noise(w: int, h: int, seed: int = 1) -> Image.Image:
    """Incompressible pixels, to produce files above the byte limit at a modest size."""
    return Image.frombytes("RGB", (w, h), random.Random(seed).randbytes(w * h * 3))


@pytest.mark.parametrize(
    ("fmt", "media"), [("JPEG", "image/jpeg"), ("PNG", "image/png"), ("GIF", "image/gif"), ("WEBP", "image/webp")]
)
def test_small_images_pass_unchanged(fmt: str, media: str) -> None:
    data = encode(gradient(320, 200), fmt)
    out, out_media = prepare_image(data, media)
    assert out == data
    assert out_media == media


def test_declared_type_is_corrected_to_the_real_one() -> None:
    data = encode(gradient(64, 64), "PNG")
    out, media = prepare_image(data, "image/jpeg")
    assert media == "image/png"
    assert out == data
    assert prepare_image(encode(gradient(8, 8), "JPEG"), "image/JPG")[1] == "image/jpeg"


@pytest.mark.parametrize(
    ("fmt", "media"), [("JPEG", "image/jpeg"), ("PNG", "image/png"), ("WEBP", "image/webp"), ("GIF", "image/gif")]
)
def test_large_images_are_downscaled_keeping_aspect(fmt: str, media: str) -> None:
    data = encode(gradient(4000, 1000), fmt)
    out, out_media = prepare_image(data, media)
    assert out_media == media
    with Image.open(io.BytesIO(out)) as img:
        assert img.format == fmt
        assert img.size == (MAX_LONG_EDGE, 392)  # 4000x1000 -> 1568x392, same 4:1 aspect
    portrait = encode(gradient(900, 3000), fmt)
    with Image.open(io.BytesIO(prepare_image(portrait, media)[0])) as img:
        assert max(img.size) == MAX_LONG_EDGE
        assert img.size[1] == MAX_LONG_EDGE
        assert abs(img.size[0] / img.size[1] - 0.3) < 0.01


def test_transparent_png_keeps_alpha_when_resized() -> None:
    img = gradient(2000, 2000, "RGBA")
    img.putalpha(128)
    out, media = prepare_image(encode(img, "PNG"), "image/png")
    with Image.open(io.BytesIO(out)) as result:
        assert media == "image/png"
        assert result.mode == "RGBA"
        pixel = result.getpixel((10, 10))
        assert isinstance(pixel, tuple) and pixel[3] == 128


def test_oversized_bytes_are_reduced_below_the_limit() -> None:
    # 1500x1500 noise PNG: within the pixel limit but ~6.75 MB, over the 5 MB (base64) limit.
    data = encode(noise(1500, 1500), "PNG", compress_level=1)
    assert len(data) > MAX_ENCODED_BYTES
    out, media = prepare_image(data, "image/png")
    assert len(base64.b64encode(out)) <= MAX_ENCODED_BYTES
    with Image.open(io.BytesIO(out)) as img:
        assert Image.MIME[img.format or ""] == media
        assert max(img.size) <= MAX_LONG_EDGE


def test_animated_gif_keeps_the_first_frame_when_resized() -> None:
    frames = [Image.new("RGB", (2000, 1000), color) for color in ("red", "blue")]
    buf = io.BytesIO()
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:])
    out, media = prepare_image(buf.getvalue(), "image/gif")
    with Image.open(io.BytesIO(out)) as img:
        assert media == "image/gif"
        assert img.size == (MAX_LONG_EDGE, 784)
        pixel = img.convert("RGB").getpixel((5, 5))
        assert isinstance(pixel, tuple)
        assert pixel[0] > 200 and pixel[2] < 50


def test_non_image_is_rejected() -> None:
    with pytest.raises(ImageError, match="not a recognisable image"):
        prepare_image(b"#!/bin/sh\necho this is a script, not a picture\n" * 10, "image/png")
    with pytest.raises(ImageError, match="not a recognisable image"):
        prepare_image(os.urandom(4096), "image/jpeg")


def test_empty_data_is_rejected() -> None:
    with pytest.raises(ImageError, match="empty"):
        prepare_image(b"", "image/png")


def test_corrupt_image_is_rejected() -> None:
    data = encode(gradient(300, 300), "PNG")
    truncated = data[: len(data) // 2]
    with pytest.raises(ImageError, match="corrupt or truncated"):
        prepare_image(truncated, "image/png")
    flipped = bytearray(data)
    flipped[60] ^= 0xFF  # inside the first chunk: breaks its CRC
    with pytest.raises(ImageError, match="corrupt or truncated"):
        prepare_image(bytes(flipped), "image/png")


@pytest.mark.parametrize("media", ["image/bmp", "image/tiff", "application/pdf", "text/plain", ""])
def test_unsupported_declared_types_are_rejected(media: str) -> None:
    with pytest.raises(ImageError, match="JPEG, PNG, GIF or WebP"):
        prepare_image(encode(gradient(10, 10), "PNG"), media)


def test_unsupported_real_format_is_rejected_even_if_declared_png() -> None:
    bmp = encode(gradient(50, 50), "BMP")
    with pytest.raises(ImageError, match=r"BMP.*convert it to JPEG, PNG, GIF or WebP"):
        prepare_image(bmp, "image/png")


def test_decompression_bomb_is_rejected() -> None:
    # A small file that claims 10000x10000 pixels (above the safety limit of Pillow).
    data = encode(Image.new("1", (10000, 10000)), "PNG")
    assert len(data) < 200_000
    with pytest.raises(ImageError, match="too large to process"):
        prepare_image(data, "image/png")


@pytest.mark.req("REQ-SEC-043")
@pytest.mark.parametrize("mode,fmt,media", [("RGB", "PNG", "image/png"), ("RGBA", "PNG", "image/png"),
                                            ("L", "PNG", "image/png"), ("P", "PNG", "image/png"),
                                            ("RGB", "JPEG", "image/jpeg"), ("L", "JPEG", "image/jpeg")])
def test_what_the_gate_writes_is_in_its_form(mode: str, fmt: str, media: str) -> None:
    from phoenix_lsp.llm.images import gate, in_gated_form

    source = io.BytesIO()
    Image.new(mode, (300, 200)).save(source, fmt)
    out, out_media = gate(source.getvalue(), media)
    assert out_media == media and in_gated_form(out, out_media)


@pytest.mark.req("REQ-SEC-043")
def test_anything_else_a_file_holds_is_out_of_the_gates_form() -> None:
    """A text chunk, EXIF, a JFIF thumbnail's room, bytes after the end, a broken CRC, an edge over the provider's
    limit, a GIF or WebP (not read without decoding): each goes through the gate again."""
    from PIL.PngImagePlugin import PngInfo

    from phoenix_lsp.llm.images import gate, in_gated_form

    def saved(image: Any, fmt: str, **options: Any) -> bytes:
        out = io.BytesIO()
        image.save(out, fmt, **options)
        return out.getvalue()

    info = PngInfo()
    info.add_text("Comment", "a token")
    picture = Image.new("RGB", (40, 30), (1, 2, 3))
    png, _ = gate(saved(picture, "PNG"), "image/png")
    jpeg, _ = gate(saved(picture, "JPEG"), "image/jpeg")
    assert in_gated_form(png, "image/png") and in_gated_form(jpeg, "image/jpeg")
    broken = bytearray(png)
    broken[40] ^= 1
    assert not in_gated_form(saved(picture, "PNG", pnginfo=info), "image/png")
    assert not in_gated_form(png + b"after the end", "image/png")
    assert not in_gated_form(bytes(broken), "image/png")
    assert not in_gated_form(png, "image/jpeg") and not in_gated_form(jpeg, "image/png")
    assert not in_gated_form(saved(picture, "JPEG", exif=b"Exif\x00\x00II*\x00"), "image/jpeg")
    assert not in_gated_form(saved(picture, "JPEG", comment=b"a token"), "image/jpeg")
    assert not in_gated_form(jpeg + b"x", "image/jpeg")
    assert not in_gated_form(saved(Image.new("L", (MAX_LONG_EDGE + 1, 4)), "PNG"), "image/png")
    assert not in_gated_form(saved(picture, "GIF"), "image/gif")
    assert not in_gated_form(png[:-5], "image/png")
