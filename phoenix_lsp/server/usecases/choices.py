"""Change a conversation's mode, or decide an approval: the user's own choices, the same on every surface."""

from __future__ import annotations

from dataclasses import dataclass

from ...core import events
from ...core.values import Decision, Mode
from ..adapter import Conversation
from .errors import Refused


@dataclass(frozen=True)
class ModeSet:
    mode: Mode
    changed: bool


def set_mode(conversation: Conversation, mode: Mode) -> ModeSet:
    """The user's own choice of mode, like ``/execute`` (REQ-PROTO-005, REQ-ACP-003); the core may refuse it
    (:class:`Refused`)."""
    before = conversation.state.mode
    outcome = conversation.apply(events.SetMode(mode))
    if outcome.reject is not None:
        raise Refused(outcome.reject, conversation.state.status.kind)
    return ModeSet(mode=conversation.state.mode, changed=conversation.state.mode is not before)


def decide_approval(conversation: Conversation, tool_use_id: str, decision: Decision, rule: str | None = None,
                    reason: str | None = None) -> None:
    """The user's answer to an approval (REQ-PERM-*); a request that is not open is :class:`Refused`."""
    reject = conversation.answer_approval(tool_use_id, decision, rule, reason)
    if reject is not None:
        raise Refused(reject, conversation.state.status.kind)
