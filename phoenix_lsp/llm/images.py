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
import warnings

from PIL import Image as PILImage
from PIL import UnidentifiedImageError
from PIL.Image import Image

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
