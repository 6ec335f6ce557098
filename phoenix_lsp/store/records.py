"""Value types that go into and come out of the store.

All are frozen dataclasses. JSON fields are opaque text: the store never parses conversation state or
messages; it only keeps them and hands them back byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.values import Actor as Actor

ACTORS: tuple[Actor, ...] = tuple(Actor)


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    """The fixed facts of a conversation, written once by ``Store.create_conversation``.

    ``parent_id`` is the conversation that spawned a sub-agent (REQ-BED-008/009); ``origin_id`` is the
    conversation a new one was seeded from with a continuation summary (REQ-BED-021). ``created_at`` is
    in seconds since the epoch.
    """

    id: str
    parent_id: str | None
    origin_id: str | None
    is_subagent: bool
    working_directory: str
    model: str
    title: str
    created_at: float


@dataclass(frozen=True, slots=True)
class LoadedConversation:
    """Everything needed to restore one conversation after a restart (REQ-BED-007).

    ``state_json``, ``status`` and ``updated_at`` are ``None`` when ``save_state`` was never called.
    ``messages`` holds the message JSON texts in index order, starting at index 0.
    """

    record: ConversationRecord
    state_json: str | None
    messages: list[str]
    status: str | None = None
    updated_at: float | None = None


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """One row of ``Store.list_conversations``.

    ``status`` is ``None`` until the first ``save_state``; ``updated_at`` is the time given to the last
    ``save_state`` (``created_at`` before that).
    """

    id: str
    title: str
    status: str | None
    model: str
    created_at: float
    updated_at: float
    message_count: int
    parent_id: str | None
    origin_id: str | None
    working_directory: str


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One audit event to append (seed 002: mode and style are recorded separately).

    ``conversation_id`` may be ``None`` for events that belong to no conversation. ``detail`` must be a
    JSON text (an object is customary), e.g. the tool name and arguments of an approval request.
    """

    time: float
    conversation_id: str | None
    actor: Actor
    action: str
    mode: str | None
    style: str | None
    detail: str = "{}"


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """A stored audit entry with its id; ids increase in insertion order."""

    id: int
    time: float
    conversation_id: str | None
    actor: Actor
    action: str
    mode: str | None
    style: str | None
    detail: str
