"""Messages: send one (with images), and cancel whatever runs."""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING

from ..errors import invalid, refusal
from ..lazy import LazyModule
from ..lsp import PhoenixServer
from ..requests import apply, conversation, hub, request

if TYPE_CHECKING:
    from ...protocol import params as p
    from ...protocol import results as r

res = LazyModule("phoenix_lsp.protocol.results")
events = LazyModule("phoenix_lsp.core.events")
values = LazyModule("phoenix_lsp.core.values")


def setup(server: PhoenixServer) -> None:
    @request(server, "phoenix/sendMessage")
    def send_message(ls: PhoenixServer, p: p.SendMessageParams) -> r.SendMessageResult:
        from ...llm.images import ImageError, prepare_image

        runtime = conversation(ls, p.conversation_id)
        store = hub(ls).store
        # Ask the core first (its images not stored yet): a refused message stores nothing, not even its images.
        unstored = tuple(values.Image("", img.media_type) for img in p.images)
        reject = runtime.check(events.UserMessage(p.text, unstored))
        if reject is not None:
            raise refusal(reject, runtime.state.status.kind)
        images = []
        for i, img in enumerate(p.images):
            try:
                raw = base64.b64decode(img.data, validate=True)
                data, media_type = prepare_image(raw, img.media_type)
            except (binascii.Error, ValueError) as exc:
                reason = str(exc) if isinstance(exc, ImageError) else "the data is not valid base64"
                raise invalid(f"images[{i}]", f"Invalid params: 'images[{i}]': {reason}") from None
            images.append(values.Image(store.put_image(data, media_type), media_type))
        # a pasted API key never reaches the model, the store or the events (REQ-SEC-001)
        outcome = apply(runtime, events.UserMessage(store.guard.redact(p.text), tuple(images)))
        message_id = str(len(runtime.state.history) - 1)
        if outcome.command is not None:
            return res.SendMessageResult(  # type: ignore[no-any-return]
                message_id=message_id, command=outcome.command.command, mode=runtime.state.mode
            )
        return res.SendMessageResult(message_id=message_id)  # type: ignore[no-any-return]

    @request(server, "phoenix/cancel")
    def cancel(ls: PhoenixServer, p: p.ConversationRef) -> r.CancelResult:
        runtime = conversation(ls, p.conversation_id)
        was_busy = runtime.busy
        apply(runtime, events.Cancel())
        return res.CancelResult(cancelled=was_busy, status=runtime.state.status.kind)  # type: ignore[no-any-return]
