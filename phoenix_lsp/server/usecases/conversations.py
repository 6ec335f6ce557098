"""Start a conversation (an LSP conversation, an ACP session), resume a stored one, cancel what it runs, and list
the conversations: the same on every surface.

Starting holds the client's folder to the one session-folder rule (REQ-URI-002: the tools are confined to it),
warms the model SDK up, reads the project instructions with the deny-read list (REQ-INSTR-001, REQ-READ-004) and
creates the conversation. Resuming (:func:`resume`) goes on with a stored conversation only in its own folder and
never with a sub-agent on its own (REQ-RUN-008, REQ-TERM-001, REQ-ACP-012)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ... import uris
from ...core import events
from ...core.state import StatusKind
from ...core.values import InstructionFile, Message, Policy, Style
from ...sandbox.denylist import deny_check
from ...store import DamagedRowError
from ...store.records import ConversationSummary
from .. import instructions
from ..adapter import Conversation, Conversations
from ..runtime.base import NotFound
from . import models
from .errors import Invalid, UseCaseError
from .warm import warm_up

Instructions = tuple[str, tuple[InstructionFile, ...]]

log = logging.getLogger(__name__)


class Unknown(UseCaseError):
    """No conversation has this id on this server."""

    def __init__(self, conversation_id: str, message: str) -> None:
        super().__init__(message)
        self.conversation_id = conversation_id


class Unreadable(UseCaseError):
    """The conversation is stored but could not be read back; the server's log says why."""

    def __init__(self, conversation_id: str, reason: str = "") -> None:
        super().__init__(reason or f"The conversation {conversation_id[:80]!r} is stored but could not be read back "
                         "(its stored state is damaged, or the database failed): nothing was changed; the server's "
                         "log says what went wrong. Start a new conversation, or restore the database from a copy.")
        self.conversation_id = conversation_id


def find(conversations: Conversations, conversation_id: str) -> Conversation:
    """The conversation named ``conversation_id``: :class:`Unknown` when there is none, :class:`Unreadable` when
    it is stored but cannot be loaded (never said to be missing: the work is still on the disk)."""
    try:
        return conversations.get(conversation_id)
    except NotFound as exc:
        raise Unknown(conversation_id, str(exc)) from None
    except DamagedRowError as exc:  # a row changed on the disk (REQ-SEC-044): its own words, which row and why
        reason = conversations.store.guard.redact(str(exc))
        log.error("%s", reason)
        raise Unreadable(conversation_id, reason) from None
    except Exception as exc:  # a damaged row, a database error: logged by type and redacted message
        what = conversations.store.guard.redact(str(exc))[:300]
        log.error("conversation %r could not be loaded: %s: %s", conversation_id[:80], type(exc).__name__, what)
        raise Unreadable(conversation_id) from None


class SubAgent(UseCaseError):
    """The id names a sub-agent, which answers to its parent only (REQ-BED-018): it is not resumed on its own.
    ``parent_id``: the conversation to resume instead."""

    def __init__(self, conversation_id: str, parent_id: str) -> None:
        super().__init__(f"{conversation_id[:80]!r} is a sub-agent of the conversation {parent_id[:80]!r}, not a "
                         "conversation of its own")
        self.conversation_id, self.parent_id = conversation_id, parent_id


class OtherFolder(UseCaseError):
    """The conversation belongs to another folder than the one the client goes on in: its edits and commands
    belong to its own folder, ``folder``, where it goes on (each adapter says how to go there: ``--cwd``, a
    session's ``cwd``)."""

    def __init__(self, conversation_id: str, folder: str, asked: str) -> None:
        super().__init__(f"the conversation {conversation_id[:8]} belongs to {folder}, not to {asked} (its edits and "
                         "commands belong to its own folder)")
        self.conversation_id, self.folder, self.asked = conversation_id, folder, asked


def resume(conversations: Conversations, conversation_id: str, folder: str) -> Conversation:
    """The stored conversation ``conversation_id``, to go on with in ``folder`` (held to :func:`session_folder`):
    the one rule of every adapter that takes a conversation up again (``phoenix-lsp run --resume``, the terminal
    chat's ``--resume`` and ``/conversations`` through ``phoenix/getConversation``'s ``workingDirectory``, ACP's
    ``session/load``). :class:`Unknown` or :class:`Unreadable` as :func:`find`; :class:`SubAgent` for a
    sub-agent; :class:`OtherFolder` when it belongs to another folder: it is refused, never moved to ``folder``
    nor taken up in its own while the client works in another."""
    conversation = find(conversations, conversation_id)
    parent = conversation.state.parent_id
    if parent:
        raise SubAgent(conversation.id, parent)
    if conversation.state.working_directory != folder:
        raise OtherFolder(conversation.id, conversation.state.working_directory, folder)
    return conversation


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


def folder_instructions(conversations: Conversations, working_directory: str) -> Instructions:
    """:func:`project_instructions` for a client that names a folder but no workspace roots (an ACP session, a
    headless run): the repository around the folder (the nearest directory above it, itself included, with a
    ``.git``) stands for the workspace root, else the folder itself. It reads files: an adapter on the event loop
    calls it in a thread."""
    here = Path(working_directory)
    roots = [d for d in (here, *here.parents) if (d / ".git").exists()][:1] or [here]
    return project_instructions(conversations, working_directory, roots)


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
    """Create the conversation; the model SDK and the sandbox's probes warm up in the background, and the
    Models API is asked for the default model when the user chose none (this conversation moves to it if it
    has sent nothing by then; the next ones start on it)."""
    warm_up()
    conversation = conversations.create(working_directory=given.working_directory, model=given.model,
                                        style=given.style, policy=given.policy, origin_id=given.origin_id,
                                        seed=given.seed, instructions=given.instructions)
    # the Models API's default, for this conversation too while it has sent nothing (REQ-MODEL-004)
    models.prefetch(conversations, conversation if given.model is None and given.seed is None else None)
    return conversation


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


def list_conversations(conversations: Conversations, include_subagents: bool = False,
                       folder: str | None = None) -> list[ConversationSummary]:
    """The stored conversations, most recently updated first (REQ-PROTO-005); sub-agents only when asked
    (REQ-BED-009); only those of ``folder`` (held to :func:`session_folder`) when it is given. The one listing an
    LSP client's phoenix/listConversations and an ACP session/list (:func:`page`) both translate."""
    rows = conversations.store.list_conversations(include_subagents=include_subagents, working_directory=folder)
    # the store orders by creation; sorted() is stable, so equal times keep that order
    return sorted(rows, key=lambda row: row.updated_at, reverse=True)


def latest_in(conversations: Conversations, folder: str) -> Conversation | None:
    """This folder's most recently updated conversation (not a sub-agent): what ``--continue`` goes on with
    (issue 38); ``folder`` held by :func:`session_folder`. None when there is none. It reads the store, on the
    thread that opened it."""
    for row in list_conversations(conversations, folder=folder):
        try:
            conversation = find(conversations, row.id)
        except UseCaseError:
            continue  # a damaged one is skipped here; --resume ID says why it cannot be read
        return conversation
    return None


#: where a page of a listing starts: after the conversation with this (updated_at, id)
After = tuple[float, str]


@dataclass(frozen=True)
class Page:
    """One page of a folder's conversations; ``after``: where the next one starts (None: this is the last)."""

    rows: list[ConversationSummary]
    after: After | None


def page(conversations: Conversations, folder: str, after: After | None, size: int) -> Page:
    """Up to ``size`` of ``folder``'s conversations (not sub-agents), most recently updated first, from just
    after ``after`` (an ACP session/list, REQ-ACP-026). The order is by (updated_at, id), so a conversation
    updated meanwhile moves to the front rather than being listed twice or shifting the pages."""
    rows = conversations.store.list_conversations(working_directory=folder)
    rows.sort(key=lambda row: (row.updated_at, row.id), reverse=True)
    if after is not None:
        rows = [row for row in rows if (row.updated_at, row.id) < after]
    taken = rows[:size]
    more = len(rows) > size
    return Page(taken, (taken[-1].updated_at, taken[-1].id) if more and taken else None)
