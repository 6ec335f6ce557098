"""The images of an MCP tool's result, through the one gate before the model sees them (REQ-MCP-021).

The MCP client hands over the first ``limits.MCP_IMAGES`` image blocks as the server sent them (base64 text and
a declared media type) and how many there were (``agent/mcp_calls.result_images``). Here each is bounded in size
before it is decoded from base64 (``limits.MCP_IMAGE_BYTES``), then goes through the product's one image path,
the attachments' (``llm/images.gate``): Pillow opens it, refuses a header that claims more than
``limits.IMAGE_PIXELS`` pixels before decoding any (a decompression bomb), decodes it whole, and encodes its pixels
again (nothing else of the file reaches the model: no text chunk, no metadata), shrunk to the provider's limits.
An image that fails any step becomes a note in words for the model, and the call goes on.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from .. import limits
from ..llm import images
from ..protocol.views import image_label


@dataclass(frozen=True)
class Picture:
    """An image ready for the store: its bytes (encoded again) and their real media type."""

    data: bytes
    media_type: str

    def shown(self) -> str:
        """How a client shows that it came back: ``image (PNG, 12 KB)``."""
        return image_label(self.media_type, len(self.data))  # the words a reopened history uses too


def _decoded_size(b64: str) -> int:
    return len(b64) * 3 // 4


def gate(kept: tuple[tuple[str, str], ...], total: int) -> tuple[list[Picture], list[str]]:
    """The images the model is given, and a note for each that is not (and one for those past the count)."""
    pictures: list[Picture] = []
    notes: list[str] = []
    for number, (b64, media) in enumerate(kept, 1):
        declared = media[:80] or "no media type"
        what = f"Image {number} of the result ({declared}, about {_decoded_size(b64):,} bytes)"
        if _decoded_size(b64) > limits.MCP_IMAGE_BYTES:
            notes.append(f"{what} was left out: it is over the limit of {limits.MCP_IMAGE_BYTES:,} bytes for one "
                         "image and was not decoded. Ask the tool for a smaller image (a region, a lower scale).")
            continue
        try:
            data = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            notes.append(f"{what} was left out: its data is not valid base64. The server sent a broken image.")
            continue
        try:
            out, out_media = images.gate(data, media)
        except images.ImageError as exc:
            notes.append(f"{what} was left out: {exc.reason}. Ask the tool for a JPEG, PNG, GIF or WebP image "
                         "of ordinary size.")
            continue
        pictures.append(Picture(out, out_media))
    if total > len(kept):
        notes.append(f"{total - len(kept):,} more images of the result were left out, not decoded: at most "
                     f"{limits.MCP_IMAGES} images of one result are given to you. Ask the tool for fewer.")
    return pictures, notes
