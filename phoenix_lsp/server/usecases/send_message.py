"""Send a message (REQ-PROTO-005, REQ-ATTACH-001..003, REQ-SEC-001): the one sequence every adapter runs.

The core is asked first, with the images not stored yet, so a refused message keeps nothing; then the
attachments are read (by the adapter's reader, with the deny-read list of :func:`deny`), the images checked
and stored, the texts redacted, and the message applied on its route."""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...core import events, values
from ...llm.images import ImageError, gate
from ...protocol.params import MESSAGE_ATTACHMENTS_MAX, MESSAGE_IMAGES_MAX, MESSAGE_TEXT_MAX
from ...sandbox.denylist import DenyCheck, deny_check
from ..adapter import Conversation, Conversations
from .errors import Invalid, Refused
from .images import keep
from .route import message_route
from .warm import warm_up


@dataclass(frozen=True)
class ImageInput:
    """One image of a message: its bytes (``data``), or its base64 text when ``encoded``; ``field`` names it in
    an error (``images[0]``), after ``prefix`` in the reason."""

    data: bytes | str
    media_type: str
    field: str
    prefix: str = ""
    encoded: bool = False
    #: its bytes through the one image gate, when :func:`gate_images` made them off the event loop
    gated: tuple[bytes, str] | None = None


@dataclass(frozen=True)
class Message:
    """A user's message. ``read_attachments`` reads the attachments (``attachment_count`` of them) once the core
    accepted the message, raising :class:`Invalid` for one that may not be attached; ``route`` is the route the
    message names (None: the user's last choice)."""

    text: str
    images: Sequence[ImageInput] = ()
    attachment_count: int = 0
    read_attachments: Callable[[], Sequence[str]] = lambda: ()
    route: str | None = None


@dataclass(frozen=True)
class Sent:
    """The message was applied: its index in the history, and the outcome (a command's, when it was one)."""

    message_id: str
    outcome: Any


def deny(conversations: Conversations) -> DenyCheck:
    """The deny-read list an attachment is checked against, whatever the mode (REQ-READ-004)."""
    return deny_check(conversations.config.deny_read)


def _gated(image: ImageInput) -> tuple[bytes, str]:
    """The image through the one image gate (REQ-SEC-043): decoded and encoded again; :class:`Invalid` says why
    not. A few hundred milliseconds for a screenshot: :func:`gate_images` runs it off the event loop."""
    if image.gated is not None:
        return image.gated
    try:
        raw = base64.b64decode(image.data, validate=True) if image.encoded else image.data
        assert isinstance(raw, bytes)
        return gate(raw, image.media_type)
    except (binascii.Error, ValueError) as exc:
        reason = str(exc) if isinstance(exc, ImageError) or not image.encoded else "the data is not valid base64"
        raise Invalid(image.field, image.prefix + reason) from None


def _image(store: Any, image: ImageInput) -> values.Image:
    """The attachment kept in its gated form (``images.keep``)."""
    return keep(store, _gated(image))


async def gate_images(message: Message) -> Message:
    """``message`` with its images through the gate, each in a thread (the event loop, and every other request,
    goes on meanwhile), its limits checked first; nothing is stored (:func:`send_message` keeps them once the core
    accepted the message). Every adapter with images calls it before :func:`send_message`: :class:`Invalid` for
    an image that is no image the gate passes."""
    check_limits(message)
    if not message.images:
        return message
    gated = [replace(image, gated=await asyncio.to_thread(_gated, image)) for image in message.images]
    return replace(message, images=gated)


def check_limits(message: Message) -> None:
    """A message's limits (REQ-ACP-016: an ACP prompt is held to an LSP message's): its text, its images, its
    attachments. Checked before anything is read or stored."""
    if len(message.text) > MESSAGE_TEXT_MAX:
        raise Invalid("text", f"the message's text is too long ({len(message.text):,} characters; at most "
                              f"{MESSAGE_TEXT_MAX:,}): attach a long text as a file, or send the part that matters")
    for what, count, most in (("images", len(message.images), MESSAGE_IMAGES_MAX),
                              ("attachments", message.attachment_count, MESSAGE_ATTACHMENTS_MAX)):
        if count > most:
            raise Invalid(what, f"the message has too many {what} ({count}; at most {most}): send fewer at a time")


def send_message(conversations: Conversations, conversation: Conversation, message: Message) -> Sent:
    """Check, attach, store, apply (see the module). Raises :class:`Invalid` (the route, an attachment, an
    image) or :class:`Refused` (the core's refusal); nothing is kept then."""
    check_limits(message)
    warm_up()
    store = conversations.store
    route = message_route(message.route, conversations.data_dir, conversations.config.agent_route)
    unstored = tuple(values.Image("", image.media_type) for image in message.images)
    reject = conversation.check(events.UserMessage(message.text, unstored, ("",) * message.attachment_count))
    if reject is not None:
        raise Refused(reject, conversation.state.status.kind)
    attached = tuple(store.guard.redact(text) for text in message.read_attachments())
    images = tuple(_image(store, image) for image in message.images)
    # a pasted API key never reaches the model, the store or the events (REQ-SEC-001)
    outcome = conversation.apply(events.UserMessage(store.guard.redact(message.text), images, attached, route))
    if outcome.reject is not None:
        raise Refused(outcome.reject, conversation.state.status.kind)
    return Sent(message_id=str(len(conversation.state.history) - 1), outcome=outcome)
