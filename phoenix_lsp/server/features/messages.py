"""Messages: send one (with images and attachments), and cancel whatever runs."""

from __future__ import annotations

from pathlib import Path

from ...protocol import params as p
from ...protocol import results as res
from .. import attachments
from ..errors import PhoenixError, invalid, refusal
from ..lsp import PhoenixServer
from ..requests import Handler, conversation, hub
from ..runtime import Runtime
from ..usecases import conversations
from ..usecases import send_message as usecase
from ..usecases.errors import Invalid, Refused, UseCaseError
from .conversations import workspace_roots


def read_attachments(ls: PhoenixServer, runtime: Runtime, p: p.SendMessageParams) -> list[str]:
    """The message's attachments as the labelled texts the model sees (REQ-ATTACH-001..003); a refusal is
    ``Invalid`` about ``attachments[i]``, naming the file, and nothing of the message is kept. The files are
    read by the confined reader, with the deny-read list whatever the mode (REQ-READ-004); on the event loop
    it reads in a worker thread, waited for a bounded time (REQ-READ-005)."""
    h = hub(ls)
    working_directory = Path(runtime.state.working_directory)
    # the same check as the read tools' (REQ-BASH-026): what the kernel keeps from commands is not attached
    deny = usecase.deny(h)
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
        raise Invalid(f"attachments[{exc.index}]", str(exc)) from None
    return texts


def translated(exc: UseCaseError) -> PhoenixError:
    """A use case's error as the phoenix protocol's."""
    if isinstance(exc, Refused):
        return refusal(exc.reject, exc.status)
    assert isinstance(exc, Invalid)
    return invalid(exc.field, f"Invalid params: '{exc.field}': {exc.reason}")


def _message(ls: PhoenixServer, runtime: Runtime, p: p.SendMessageParams) -> usecase.Message:
    return usecase.Message(
        text=p.text,
        images=[usecase.ImageInput(img.data, img.media_type, f"images[{i}]", encoded=True)
                for i, img in enumerate(p.images)],
        attachment_count=len(p.attachments),
        read_attachments=lambda: read_attachments(ls, runtime, p),
        route=p.route,
    )


def _sent(ls: PhoenixServer, runtime: Runtime, message: usecase.Message) -> res.SendMessageResult:
    try:
        sent = usecase.send_message(hub(ls), runtime, message)
    except UseCaseError as exc:
        raise translated(exc) from None
    if sent.outcome.command is not None:
        return res.SendMessageResult(
            message_id=sent.message_id, command=sent.outcome.command.command, mode=runtime.state.mode
        )
    return res.SendMessageResult(message_id=sent.message_id)


async def send_message(ls: PhoenixServer, p: p.SendMessageParams) -> res.SendMessageResult:
    runtime = conversation(ls, p.conversation_id)
    try:
        message = await usecase.gate_images(_message(ls, runtime, p))  # decoded and encoded off the event loop
    except UseCaseError as exc:
        raise translated(exc) from None
    return _sent(ls, runtime, message)


def send_text(ls: PhoenixServer, p: p.SendMessageParams) -> res.SendMessageResult:
    """``phoenix/sendMessage`` as a plain editor's command sends it (REQ-PROTO-038), from a synchronous handler:
    text only, so there is no image to gate off the event loop; the same use case and limits otherwise."""
    if p.images:
        raise invalid("images", "Invalid params: 'images': a command sends text only; send images with "
                                "phoenix/sendMessage")
    runtime = conversation(ls, p.conversation_id)
    message = _message(ls, runtime, p)
    try:
        usecase.check_limits(message)
    except UseCaseError as exc:
        raise translated(exc) from None
    return _sent(ls, runtime, message)


def cancel(ls: PhoenixServer, p: p.ConversationRef) -> res.CancelResult:
    done = conversations.cancel(conversation(ls, p.conversation_id))
    return res.CancelResult(cancelled=done.cancelled, status=done.status)


#: the phoenix/* requests this module serves, each with its handler (installed by ``served.py``)
HANDLERS: dict[str, Handler] = {
    "phoenix/sendMessage": send_message,
    "phoenix/cancel": cancel,
}

