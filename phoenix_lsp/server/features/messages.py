"""Messages: send one (with images and attachments), and cancel whatever runs."""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any

from ...core import events, values
from ...llm.images import ImageError, prepare_image
from ...protocol import params as p
from ...protocol import results as res
from ...sandbox.denylist import DenyCheck, current_deny_read
from .. import attachments
from ..errors import invalid, refusal
from ..lsp import PhoenixServer
from ..requests import Handler, apply, conversation, hub
from ..runtime import Runtime
from ..ui_settings import read_route
from .conversations import workspace_roots


def read_attachments(ls: PhoenixServer, runtime: Runtime, p: p.SendMessageParams) -> list[str]:
    """The message's attachments as the labelled texts the model sees (REQ-ATTACH-001..003); a refusal is
    invalidParams naming ``attachments[i]`` and the file, and nothing of the message is kept. The files are
    read by the confined reader, with the deny-read list whatever the mode (REQ-READ-004); on the event loop
    it reads in a worker thread, waited for a bounded time (REQ-READ-005)."""
    h = hub(ls)
    working_directory = Path(runtime.state.working_directory)
    # the same check as the read tools' (REQ-BASH-026): what the kernel keeps from commands is not attached
    deny = DenyCheck(h.config.deny_read if h.config.deny_read is not None else current_deny_read())
    texts = []
    try:
        for i, item in enumerate(p.attachments):
            if item.kind == "file":
                texts.append(attachments.file_text(
                    i, item, working_directory=working_directory, workspace=workspace_roots(ls),
                    deny=deny, open_documents=h.sink.open_documents(),
                ))
            else:
                texts.append(attachments.diagnostics_text(i, item, working_directory=working_directory))
    except attachments.AttachmentError as exc:
        raise invalid(f"attachments[{exc.index}]", f"Invalid params: 'attachments[{exc.index}]': {exc}") from None
    return texts


def message_route(ls: PhoenixServer, p: p.SendMessageParams) -> Any:
    """The message's route (REQ-AGENT-001): its own, else the one the user chose last (ui_settings.json). The
    agent route with invalid settings files is refused, saying which file and why (REQ-AGENT-022)."""
    h = hub(ls)
    route = p.route or read_route(h.store.path.parent)
    agent = h.config.agent_route
    if route == "agent" and agent is not None and agent.unavailable is not None:
        raise invalid("route", f"Invalid params: 'route': {agent.unavailable} Send with route 'ask' meanwhile.")
    return values.Route(route)


def send_message(ls: PhoenixServer, p: p.SendMessageParams) -> res.SendMessageResult:
    runtime = conversation(ls, p.conversation_id)
    store = hub(ls).store
    route = message_route(ls, p)
    # Ask the core first (its images not stored yet): a refused message stores nothing, not even its images.
    unstored = tuple(values.Image("", img.media_type) for img in p.images)
    reject = runtime.check(events.UserMessage(p.text, unstored, ("",) * len(p.attachments)))
    if reject is not None:
        raise refusal(reject, runtime.state.status.kind)
    attached = tuple(store.guard.redact(text) for text in read_attachments(ls, runtime, p))
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
    outcome = apply(runtime, events.UserMessage(store.guard.redact(p.text), tuple(images), attached, route))
    message_id = str(len(runtime.state.history) - 1)
    if outcome.command is not None:
        return res.SendMessageResult(
            message_id=message_id, command=outcome.command.command, mode=runtime.state.mode
        )
    return res.SendMessageResult(message_id=message_id)


def cancel(ls: PhoenixServer, p: p.ConversationRef) -> res.CancelResult:
    runtime = conversation(ls, p.conversation_id)
    was_busy = runtime.busy
    apply(runtime, events.Cancel())
    return res.CancelResult(cancelled=was_busy, status=runtime.state.status.kind)


#: the phoenix/* requests this module serves, each with its handler (installed by ``served.py``)
HANDLERS: dict[str, Handler] = {
    "phoenix/sendMessage": send_message,
    "phoenix/cancel": cancel,
}

