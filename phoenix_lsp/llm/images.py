"""Image preparation for the Messages API (REQ-BED-013).

:func:`prepare_image` checks that the bytes really are an image of a type the API accepts (JPEG, PNG, GIF,
WebP), whatever the client claimed, and shrinks it to the provider's limits:

- long edge at most :data:`MAX_LONG_EDGE` pixels (larger images are downscaled by the API anyway, which
  only costs latency and tokens), aspect ratio kept;
- base64-encoded size at most :data:`MAX_ENCODED_BYTES` (the API's 5 MB per-image limit, counted on the
  base64 text we send, which is the conservative reading).

An image already within the limits is returned byte for byte, unless ``reencode`` asks for its pixels only
(an MCP tool's image, REQ-MCP-021: whatever else the file holds, metadata and text chunks, is not passed on).
``max_pixels`` refuses an image whose header claims more pixels before any of them is decoded (a decompression
bomb below Pillow's own limit). Pillow is imported lazily (server start-up).
"""

from __future__ import annotations

import io
import struct
import warnings
import zlib

from PIL import Image as PILImage
from PIL import UnidentifiedImageError
from PIL.Image import Image

from .. import limits

MAX_LONG_EDGE = 1568
MAX_ENCODED_BYTES = 5 * 1024 * 1024

#: Accepted media types and Pillow's format name for each.
ACCEPTED_MEDIA_TYPES: dict[str, str] = {
    "image/jpeg": "JPEG",
    "image/png": "PNG",
    "image/gif": "GIF",
    "image/webp": "WEBP",
}
_FORMAT_TO_MEDIA = {fmt: media for media, fmt in ACCEPTED_MEDIA_TYPES.items()}
_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg", "image/x-png": "image/png"}
_ACCEPTED_TEXT = "JPEG, PNG, GIF or WebP"


class ImageError(ValueError):
    """The data is not an image the model can receive; the message says why and what to send instead, ``reason``
    the why alone, in words that fit any source (an attachment, a tool's result)."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


def _encoded_size(n: int) -> int:
    return 4 * ((n + 2) // 3)


def prepare_image(data: bytes, media_type: str, *, reencode: bool = False,
                  max_pixels: int | None = None) -> tuple[bytes, str]:
    """Validate and, if needed, resize an image; returns ``(bytes, media_type)`` ready to base64-encode.

    The returned media type is the one the bytes really are (a PNG sent as ``image/jpeg`` is returned as
    ``image/png``, since the API rejects a mismatch). Raises :class:`ImageError` for an unsupported
    declared type, empty, corrupt or non-image data, or an image format the API does not accept. ``reencode``:
    always decode and encode the pixels again (nothing else of the file is kept); ``max_pixels``: the most pixels
    the header may claim, checked before decoding.
    """
    declared = _ALIASES.get(media_type.strip().lower(), media_type.strip().lower())
    if declared not in ACCEPTED_MEDIA_TYPES:
        raise ImageError(f"Unsupported image type {media_type!r}: attach a {_ACCEPTED_TEXT} image instead.",
                         f"its type {media_type[:80]!r} is none the model reads ({_ACCEPTED_TEXT})")
    if not data:
        raise ImageError("The attached image is empty (0 bytes): attach the image file again.", "it is empty (0 bytes)")

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", PILImage.DecompressionBombWarning)
            with PILImage.open(io.BytesIO(data)) as probe:
                actual_format = probe.format
                width, height = probe.size
                if max_pixels is not None and width * height > max_pixels:
                    why = (f"it claims {width:,} x {height:,} pixels, over the limit of {max_pixels:,}; it was not "
                           "decoded")
                    raise ImageError(f"The image is too large to process safely: {why}.", why)
                probe.verify()  # checks structure/CRCs without decoding everything
            img = PILImage.open(io.BytesIO(data))
            img.load()  # decodes the pixels: catches truncated data that verify() lets through
    except (PILImage.DecompressionBombError, PILImage.DecompressionBombWarning) as exc:
        raise ImageError(f"The attached image is too large to process safely ({exc}); send a smaller image.",
                         f"it is too large to process safely ({exc})") from exc
    except UnidentifiedImageError as exc:
        raise ImageError(
            f"The attached data (declared {media_type!r}) is not a recognisable image: attach a {_ACCEPTED_TEXT} file.",
            f"it is not a recognisable image (declared {media_type[:80]!r})",
        ) from exc
    except ImageError:
        raise
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise ImageError(
            f"The attached {media_type!r} image is corrupt or truncated ({exc}); re-save or re-attach it.",
            f"it is corrupt or truncated ({str(exc)[:200]})",
        ) from exc

    actual = _FORMAT_TO_MEDIA.get(actual_format or "")
    if actual is None:
        raise ImageError(
            f"The attached image is {actual_format or 'of an unknown format'}, which the model cannot read: "
            f"convert it to {_ACCEPTED_TEXT}.",
            f"it is {actual_format or 'of an unknown format'}, which the model cannot read ({_ACCEPTED_TEXT})",
        )

    with img:
        if not reencode and max(img.size) <= MAX_LONG_EDGE and _encoded_size(len(data)) <= MAX_ENCODED_BYTES:
            return data, actual
        return _shrink(img, actual, keep_info=not reencode)


def _shrink(img: Image, media_type: str, keep_info: bool = True) -> tuple[bytes, str]:
    """Downscale to the long-edge limit, then lower quality/size until the encoded size fits."""
    if getattr(img, "n_frames", 1) > 1:
        img.seek(0)  # the API reads the first frame of an animation only
    frame = img.copy()
    if not keep_info:  # the pixels only: no text chunk, profile or EXIF of the original is written again
        frame.info = {k: v for k, v in frame.info.items() if k == "transparency"}
    if frame.mode == "P":
        frame = frame.convert("RGBA" if "transparency" in frame.info else "RGB")
    elif frame.mode not in ("RGB", "RGBA", "L", "LA"):
        frame = frame.convert("RGBA" if "A" in frame.mode else "RGB")

    scale = min(1.0, MAX_LONG_EDGE / max(frame.size))
    quality = 90
    for _attempt in range(12):
        size = (max(1, round(frame.width * scale)), max(1, round(frame.height * scale)))
        resized = frame.resize(size, PILImage.Resampling.LANCZOS) if size != frame.size else frame
        out, out_type = _encode(resized, media_type, quality)
        if _encoded_size(len(out)) <= MAX_ENCODED_BYTES:
            return out, out_type
        # Too big still: lossy formats first lose quality, then everything loses pixels.
        if out_type in ("image/jpeg", "image/webp") and quality > 60:
            quality -= 15
        else:
            scale *= 0.75
    raise ImageError("The attached image could not be reduced below the 5 MB limit; send a smaller image.",
                     "it could not be reduced below the 5 MB limit")


def _encode(img: Image, media_type: str, quality: int) -> tuple[bytes, str]:
    buf = io.BytesIO()
    if media_type == "image/jpeg":
        rgb = img.convert("RGB") if img.mode != "RGB" and img.mode != "L" else img
        rgb.save(buf, "JPEG", quality=quality, optimize=True)
    elif media_type == "image/webp":
        img.save(buf, "WEBP", quality=quality)
    elif media_type == "image/gif":
            img.convert("RGB").convert("P", palette=PILImage.Palette.ADAPTIVE).save(buf, "GIF")
    else:
        img.save(buf, "PNG", optimize=True)
        if _encoded_size(buf.tell()) > MAX_ENCODED_BYTES and img.mode in ("RGB", "L"):
            # A photo stored as PNG: JPEG is far smaller and loses nothing the model can see.
            return _encode(img, "image/jpeg", quality)
    return buf.getvalue(), media_type


def gate(data: bytes, media_type: str) -> tuple[bytes, str]:
    """The one image gate (REQ-SEC-043): ``data`` checked (at most ``limits.IMAGE_PIXELS`` pixels claimed before
    any is decoded), decoded and its pixels encoded again, shrunk to the provider's limits; nothing else of the file
    is kept (no text chunk, no metadata). What an attachment and an MCP tool's image are kept as, and what an image
    read back from the store becomes when it is not :func:`in_gated_form`. :class:`ImageError` says why not."""
    return prepare_image(data, media_type, reencode=True, max_pixels=limits.IMAGE_PIXELS)


#: the PNG chunks :func:`gate` writes: the header, a palette and its transparency, the pixels, the end
_PNG_CHUNKS = frozenset((b"IHDR", b"PLTE", b"tRNS", b"IDAT", b"IEND"))
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: the JPEG segments it writes before and between scans: quantization and Huffman tables, a frame, a restart
#: interval, a scan (APP0's JFIF header is checked apart: any other application segment or comment is refused)
_JPEG_SEGMENTS = frozenset((0xDB, 0xC4, 0xC0, 0xC1, 0xC2, 0xDD, 0xDA))


def in_gated_form(data: bytes, media_type: str) -> bool:
    """Whether ``data`` is in the form :func:`gate` writes, read without decoding a pixel (REQ-SEC-043): a PNG of
    those chunks alone (each CRC right) or a baseline or progressive JFIF JPEG without any other application
    segment or comment, nothing after its end, within the provider's size and edge limits. So an image kept in the
    gated form is sent as it is kept, and anything else a file may hold (a text chunk, EXIF, bytes after the end)
    sends it back through :func:`gate`. GIF and WebP are not read here: they go through the gate."""
    if _encoded_size(len(data)) > MAX_ENCODED_BYTES:
        return False
    try:
        if media_type == "image/png":
            return _png_form(data)
        if media_type == "image/jpeg":
            return _jpeg_form(data)
    except (struct.error, IndexError):
        return False
    return False


def _fits(width: int, height: int) -> bool:
    return 0 < width <= MAX_LONG_EDGE and 0 < height <= MAX_LONG_EDGE


def _png_form(data: bytes) -> bool:
    if not data.startswith(_PNG_SIGNATURE):
        return False
    at, first = len(_PNG_SIGNATURE), True
    while at + 12 <= len(data):
        length, kind = struct.unpack_from(">I4s", data, at)
        end: int = at + 12 + length
        if kind not in _PNG_CHUNKS or end > len(data) or (first and kind != b"IHDR"):
            return False
        body = data[at + 8:at + 8 + length]
        if zlib.crc32(kind + body) != struct.unpack_from(">I", data, end - 4)[0]:
            return False
        if first and not _fits(*struct.unpack_from(">II", body)):
            return False
        if kind == b"IEND":
            return end == len(data)  # nothing after the end
        at, first = end, False
    return False


def _jpeg_form(data: bytes) -> bool:
    if not data.startswith(b"\xff\xd8"):
        return False
    at, framed = 2, False
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return False
        marker = data[at + 1]
        length = struct.unpack_from(">H", data, at + 2)[0]
        body = data[at + 4:at + 2 + length]
        if marker == 0xE0:
            if length != 16 or not body.startswith(b"JFIF\x00"):  # the header alone: no thumbnail
                return False
        elif marker not in _JPEG_SEGMENTS:
            return False
        elif marker in (0xC0, 0xC1, 0xC2):
            height, width = struct.unpack_from(">HH", body, 1)
            if framed or not _fits(width, height):
                return False
            framed = True
        at += 2 + length
        if marker == 0xDA:  # a scan's data: up to the next marker (0xFF 0x00 is a data byte, 0xFF 0xD0-D7 a restart)
            while True:
                at = data.find(b"\xff", at)
                if at < 0 or at + 1 >= len(data):
                    return False
                following = data[at + 1]
                if following == 0x00 or 0xD0 <= following <= 0xD7:
                    at += 2
                    continue
                break
            if following == 0xD9:  # the end: nothing after it
                return framed and at + 2 == len(data)
    return False
