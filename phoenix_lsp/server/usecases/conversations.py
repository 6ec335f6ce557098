"""Start a conversation (an LSP conversation, an ACP session) and cancel what it runs: the same on every surface.

Starting holds the client's folder to the one session-folder rule (REQ-URI-002: the tools are confined to it),
warms the model SDK up, reads the project instructions with the deny-read list (REQ-INSTR-001, REQ-READ-004) and
creates the conversation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ... import uris
from ...core import events
from ...core.state import StatusKind
from ...core.values import InstructionFile, Message, Policy, Style
from ...sandbox.denylist import deny_check
from .. import instructions
from ..adapter import Conversation, Conversations
from .errors import Invalid
from .warm import warm_up

Instructions = tuple[str, tuple[InstructionFile, ...]]


def session_folder(folder: str, field: str) -> str:
    """The folder a client names for a conversation, held to the one rule (REQ-URI-002); ``Invalid`` about
    ``field`` says why not. It touches the disk: an adapter on the event loop calls it in a thread."""
    try:
        return uris.session_folder(folder)
    except uris.UriError as exc:
        raise Invalid(field, str(exc)) from None


def project_instructions(conversations: Conversations, working_directory: str, roots: Sequence[Path]) -> Instructions:
    """The instructions in effect for ``working_directory`` (REQ-INSTR-001): the project's, from the root among
    ``roots`` that holds it down to it, and the user's; read by the confined reader with the deny-read list
    whatever the mode (REQ-READ-004), redacted. It reads files: an adapter on the event loop calls it in a thread."""
    found = instructions.read(Path(working_directory), list(roots),
                              user_dir=instructions.config_dir(conversations.config.config_dir),
                              redact=conversations.store.guard.redact,
                              deny=deny_check(conversations.config.deny_read))
    return found.text, found.files


@dataclass(frozen=True)
class Start:
    """A conversation to start in ``working_directory`` (already held to :func:`session_folder`), with its
    instructions (:func:`project_instructions`)."""

    working_directory: str
    instructions: Instructions = ("", ())
    model: str | None = None
    style: Style = Style.CHAT
    policy: Policy = Policy.INTERACTIVE
    origin_id: str | None = None
    seed: Message | None = None


def start(conversations: Conversations, given: Start) -> Conversation:
    """Create the conversation; the model SDK and the sandbox's probes warm up in the background."""
    warm_up()
    return conversations.create(working_directory=given.working_directory, model=given.model, style=given.style,
                                policy=given.policy, origin_id=given.origin_id, seed=given.seed,
                                instructions=given.instructions)


@dataclass(frozen=True)
class Cancelled:
    """``cancelled``: something was running; ``status``: the conversation's status now."""

    cancelled: bool
    status: StatusKind


def cancel(conversation: Conversation) -> Cancelled:
    """Stop whatever the conversation runs (REQ-PROTO-005, REQ-ACP-011): an open question is withdrawn and runs
    nothing; an idle conversation is left as it is."""
    was_busy = conversation.busy
    conversation.apply(events.Cancel())
    return Cancelled(cancelled=was_busy, status=conversation.state.status.kind)
