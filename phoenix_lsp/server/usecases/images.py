"""A conversation's kept images read back: for the model's request (REQ-SEC-043), and for a client
(REQ-PROTO-072, REQ-MCP-021): by their handle through phoenix/getArtifact, and in ACP's ``session/load`` replay.
The one rule every adapter and the turn call (:func:`gated`), and the one way an image is kept (:func:`keep`).

An image is gated when it is kept: an attachment's and an MCP tool's image go through ``llm/images.gate`` (decoded,
no more than ``limits.IMAGE_PIXELS`` pixels claimed, its pixels encoded again: nothing else of the file is kept)
and the store holds that form, by its sha256 (:func:`keep`, which counts it as passed for the server's life).

The store's file is on the disk, where anything may have changed it since the image was kept, so an image read
back is checked every time: it must be an image of this conversation's own history (another conversation's handle
is refused), its row is measured before its bytes are read (at most ``limits.MCP_IMAGE_BYTES``), its bytes must
still be the ones its id names (the sha256 of what was kept), and they must be in the form the gate writes
(``llm/images.in_gated_form``: a PNG or JPEG of the gate's chunks alone, read without decoding a pixel); bytes that
are not (an image kept before gating moved here, a row swapped whole with a text chunk) go through the gate again,
decoded and encoded. A refusal says what happened, why, and what to do; nothing is ever sent as it lies on the disk
unless it is in the gated form.

What passed is kept in memory for the server's life (:class:`Passed`, bounded): by the image's id, which is the
sha256 the gate checked the kept bytes against, so a kept result is exactly the bytes the image was kept with,
whatever the disk holds later, and the same image is the same bytes in every request (the prompt cache's prefix
stays byte-stable). A request after a restart checks each image's size, hash and form (a fraction of a
millisecond), where it decoded and encoded each (a screenshot about 0.15 s).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ... import limits
from ...core.state import ConversationState
from ...core.values import Image, Message, ToolResult
from ...llm.images import ImageError, gate, in_gated_form
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
    return images_in(state.history)


def images_in(history: Iterable[Message]) -> list[Image]:
    """Every image of these messages, in order (:func:`images_of`)."""
    found: list[Image] = []
    for message in history:
        for block in message.content:
            if isinstance(block, Image):
                found.append(block)
            elif isinstance(block, ToolResult):
                found.extend(block.images)
    return found


def image_id_of(state: ConversationState, handle: str) -> str:
    """The id of the image ``handle`` (``image://<id>``) names in the conversation ``state``; :class:`NotServed`
    when it is no handle, or none of this conversation's images."""
    match = _HANDLE.fullmatch(handle)
    if match is None:
        shown = handle[:80].encode("unicode_escape").decode("ascii")
        raise NotServed(f"{shown!r} is not an image handle: one is image://<64 hex digits>, as a history's image "
                        "names it in its `handle`")
    image_id = match["id"]
    if image_id not in {image.image_id for image in images_of(state)}:
        raise NotServed(f"{handle} is not an image of this conversation, so it is not served: ask with the "
                        "conversation whose history names it")
    return image_id


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
    """A stored image through the gate (the module's docstring): as it is kept when its bytes are in the form the
    gate writes (``llm/images.in_gated_form``, read without decoding), else its pixels encoded again;
    :class:`NotServed` when its bytes are not the ones kept or are no image the gate passes. It may decode: call it
    in a thread."""
    handle = IMAGE_HANDLE + image.image_id
    if hashlib.sha256(image.data).hexdigest() != image.image_id:
        raise NotServed(f"{handle} was not sent: the bytes the store holds for it are not the ones it kept (they "
                        "were changed on the disk); the image cannot be shown")
    if in_gated_form(image.data, image.media_type):  # kept through the gate already (:func:`keep`)
        return image
    try:
        out, out_media = gate(image.data, image.media_type)
    except ImageError as exc:
        raise NotServed(f"{handle} was not sent: {exc.reason}; the image cannot be shown") from None
    return KeptImage(image.image_id, out, out_media)


def keep(store: Any, gated: tuple[bytes, str], passed: Passed | None = None) -> Image:
    """An image through the gate on its way in (``llm/images.gate``'s output: an attachment's, an MCP tool's),
    kept: the store holds the gated bytes, by their sha256, and they count as passed for this server's life, so
    the model's request sends them without decoding them again (REQ-SEC-043). Raises what the store raises (a
    secret's bytes, a full disk)."""
    data, media_type = gated
    image_id = store.put_image(data, media_type)
    (PASSED if passed is None else passed).put(KeptImage(image_id, data, media_type))
    return Image(image_id, media_type)


#: how many images, and how many of their bytes in all, :class:`Passed` keeps (the least recently used go first)
PASSED_IMAGES = 256
PASSED_ROOM = 64 * 1024 * 1024


class Passed:
    """The images that passed the gate in this server's life, by id (the module's docstring), bounded by
    :data:`PASSED_IMAGES` and :data:`PASSED_ROOM`, the least recently used dropped first (a dropped one passes
    the gate again when it is next sent). Used on the event loop only."""

    def __init__(self, most: int = PASSED_IMAGES, room: int = PASSED_ROOM) -> None:
        self.most, self.room = most, room
        self._kept: OrderedDict[str, KeptImage] = OrderedDict()
        self._bytes = 0

    def get(self, image_id: str) -> KeptImage | None:
        kept = self._kept.get(image_id)
        if kept is not None:
            self._kept.move_to_end(image_id)
        return kept

    def put(self, kept: KeptImage) -> None:
        if kept.image_id in self._kept or len(kept.data) > self.room:
            return
        self._kept[kept.image_id] = kept
        self._bytes += len(kept.data)
        while len(self._kept) > self.most or self._bytes > self.room:
            _, dropped = self._kept.popitem(last=False)
            self._bytes -= len(dropped.data)

    def __len__(self) -> int:
        return len(self._kept)


#: the process's images through the gate: what passed depends only on the bytes its id names, so one for all
PASSED = Passed()


async def gated(store: Any, image_id: str, passed: Passed = PASSED) -> KeptImage:
    """The kept image ``image_id`` through the gate: the one function every reader calls (the model's request,
    getArtifact, ACP's replay). Already passed in this server's life: as it passed, without reading the store;
    else its row measured and read (:func:`stored`, on the calling loop: the store is its SQLite), then
    :func:`through_gate` in a thread (it decodes). :class:`NotServed` says why it is not sent."""
    kept = passed.get(image_id)
    if kept is None:
        kept = await asyncio.to_thread(through_gate, stored(store, image_id))
        passed.put(kept)
    return kept


def left_out(reason: str) -> str:
    """The note that stands in a model's request for an image that did not pass the gate (``reason``, from
    :class:`NotServed`, names it by its handle and says why)."""
    return f"[system] An image of this conversation is left out of this request: {reason}."


async def for_model(store: Any, pictures: Sequence[Image], passed: Passed = PASSED) -> dict[str, KeptImage | str]:
    """Each of ``pictures`` (a history's images, :func:`images_in`) for the model's request, by image id: through
    the gate (:func:`gated`, one at a time), or the note that replaces it (:func:`left_out`): the turn goes on
    without it (REQ-SEC-043)."""
    out: dict[str, KeptImage | str] = {}
    for image in pictures:
        if image.image_id in out:
            continue
        try:
            out[image.image_id] = await gated(store, image.image_id, passed)
        except NotServed as exc:
            out[image.image_id] = left_out(exc.reason)
    return out


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
            kept = await gated(store, image.image_id)
        except NotServed as exc:
            out[image.image_id] = Replayed(label, None, f"not shown: {exc.reason}")
            continue
        room, count = room - len(kept.data), count - 1
        out[image.image_id] = Replayed(label, kept)
    return out
