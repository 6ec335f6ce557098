"""A conversation's kept images read back for a client (REQ-PROTO-072, REQ-MCP-021): by their handle through
phoenix/getArtifact, and in ACP's ``session/load`` replay. The one rule every adapter calls.

The store's file is on the disk, where anything may have changed it since the image was kept, so an image read
back goes through the gate it passed on its way in, every time: it must be an image of this conversation's own
history (another conversation's handle is refused), its row is measured before its bytes are read (at most
``limits.MCP_IMAGE_BYTES``), its bytes must still be the ones its id names (the sha256 of what was kept), and
then ``llm/images.prepare_image`` decodes it (no more than ``limits.IMAGE_PIXELS`` pixels claimed) and encodes
its pixels again, so nothing else a file on the disk may hold (metadata, text chunks) is sent. A refusal says
what happened, why, and what to do; nothing is ever sent as it lies on the disk.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from ... import limits
from ...core.state import ConversationState
from ...core.values import Image, ToolResult
from ...llm.images import ImageError, prepare_image
from ...protocol.views import IMAGE_HANDLE, image_label
from .errors import Invalid

_HANDLE = re.compile(r"image://(?P<id>[0-9a-f]{64})")


@dataclass(frozen=True)
class KeptImage:
    """A kept image: as the store holds it (:func:`stored`), or through the gate (:func:`through_gate`)."""

    image_id: str
    data: bytes
    media_type: str

    def encoded(self) -> str:
        """Its bytes as base64 text, as JSON protocols carry an image."""
        return base64.b64encode(self.data).decode("ascii")


class NotServed(Invalid):
    """An image that is not sent: ``reason`` says why and what to do (about the field ``handle``)."""

    def __init__(self, reason: str) -> None:
        super().__init__("handle", reason)


def is_image_handle(handle: str) -> bool:
    return handle.startswith(IMAGE_HANDLE)


def images_of(state: ConversationState) -> list[Image]:
    """Every image of a conversation's history, in order: those the user attached and those tools returned."""
    found: list[Image] = []
    for message in state.history:
        for block in message.content:
            if isinstance(block, Image):
                found.append(block)
            elif isinstance(block, ToolResult):
                found.extend(block.images)
    return found


def read(store: Any, state: ConversationState, handle: str) -> KeptImage:
    """The image ``handle`` (``image://<id>``) of the conversation ``state`` as the store holds it, measured and
    bounded, not yet through the gate (:func:`through_gate`, in a thread: it decodes); :class:`NotServed` says why
    none is sent. The store is the event loop's (SQLite): an adapter calls this on the loop."""
    match = _HANDLE.fullmatch(handle)
    if match is None:
        shown = handle[:80].encode("unicode_escape").decode("ascii")
        raise NotServed(f"{shown!r} is not an image handle: one is image://<64 hex digits>, as a history's image "
                        "names it in its `handle`")
    image_id = match["id"]
    if image_id not in {image.image_id for image in images_of(state)}:
        raise NotServed(f"{handle} is not an image of this conversation, so it is not served: ask with the "
                        "conversation whose history names it")
    return stored(store, image_id)


def stored(store: Any, image_id: str) -> KeptImage:
    """A kept image's bytes as the store holds them, once its row is measured (:class:`NotServed` when it is
    gone or over the bound); never sent before :func:`through_gate`."""
    handle = IMAGE_HANDLE + image_id
    size = store.image_size(image_id)
    if size is None:
        raise NotServed(f"{handle} is no longer in the server's store (its data directory was changed or "
                        "replaced); the conversation's text is intact, only this image cannot be shown")
    if size > limits.MCP_IMAGE_BYTES:
        raise NotServed(f"{handle} was not read: the store holds {size:,} bytes for it, over the limit of "
                        f"{limits.MCP_IMAGE_BYTES:,} for one image, so it was changed on the disk after it was "
                        "kept; the image cannot be shown")
    data, media_type = store.get_image(image_id)
    return KeptImage(image_id, data, media_type)


def through_gate(image: KeptImage) -> KeptImage:
    """A stored image through the gate (the module's docstring): its pixels encoded again; :class:`NotServed` when
    its bytes are not the ones kept or are no image the gate passes. It decodes: call it in a thread."""
    handle = IMAGE_HANDLE + image.image_id
    if hashlib.sha256(image.data).hexdigest() != image.image_id:
        raise NotServed(f"{handle} was not sent: the bytes the store holds for it are not the ones it kept (they "
                        "were changed on the disk); the image cannot be shown")
    try:
        out, out_media = prepare_image(image.data, image.media_type, reencode=True, max_pixels=limits.IMAGE_PIXELS)
    except ImageError as exc:
        raise NotServed(f"{handle} was not sent: {exc.reason}; the image cannot be shown") from None
    return KeptImage(image.image_id, out, out_media)


#: the most bytes of images, and the most images, one replay of a history sends (ACP's session/load,
#: REQ-ACP-031), the newest first; the older ones are replayed as their labels, with a note
REPLAY_ROOM = 16 * 1024 * 1024
REPLAY_IMAGES = 20


@dataclass(frozen=True)
class Replayed:
    """An image of a history as a replay shows it: its label (the live words), and its pixels through the gate,
    or why they are not sent (``missing``)."""

    label: str
    image: KeptImage | None
    missing: str = ""


async def for_replay(store: Any, state: ConversationState) -> dict[str, Replayed]:
    """Every image of a conversation's history, by image id, for a replay: the newest first, each through the gate
    (decoded in a thread, one at a time), at most :data:`REPLAY_IMAGES` of them and :data:`REPLAY_ROOM` bytes in
    all; an image that does not pass, or past those bounds, keeps its label and says why it is not shown. The store
    is read on the calling (the event) loop."""
    out: dict[str, Replayed] = {}
    room, count = REPLAY_ROOM, REPLAY_IMAGES
    for image in reversed(images_of(state)):
        if image.image_id in out:
            continue
        size = store.image_size(image.image_id)
        label = image_label(image.media_type, size)
        if count <= 0 or (size is not None and size > room):
            out[image.image_id] = Replayed(label, None, f"not replayed: one replay sends at most {REPLAY_IMAGES} "
                                                        f"images and {REPLAY_ROOM:,} bytes of them, the newest first")
            continue
        try:
            kept = await asyncio.to_thread(through_gate, stored(store, image.image_id))
        except NotServed as exc:
            out[image.image_id] = Replayed(label, None, f"not shown: {exc.reason}")
            continue
        room, count = room - len(kept.data), count - 1
        out[image.image_id] = Replayed(label, kept)
    return out
