"""Change a conversation's mode, approval policy or style, or decide an approval: the user's own choices, the same
on every surface."""

from __future__ import annotations

from dataclasses import dataclass

from ...core import events
from ...core.values import Decision, Mode, Policy, Style
from ...protocol.views import StyleSuggestion
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


def set_policy(conversation: Conversation, policy: Policy) -> Policy:
    """The approval policy from the next tool call (REQ-PERM-007); the one in effect is returned. The core may
    refuse it (:class:`Refused`)."""
    outcome = conversation.apply(events.SetPolicy(policy))
    if outcome.reject is not None:
        raise Refused(outcome.reject, conversation.state.status.kind)
    return conversation.state.policy


@dataclass(frozen=True)
class StyleSet:
    """The style in effect, the mode (a style never changes it, REQ-LAYER-006), and the core's suggestion of a
    mode to switch to, if any (REQ-PROTO-014)."""

    style: Style
    mode: Mode
    suggestion: StyleSuggestion | None


def set_style(conversation: Conversation, style: Style) -> StyleSet:
    """The conversation's style; the core may refuse it (:class:`Refused`)."""
    outcome = conversation.apply(events.SetStyle(style))
    if outcome.reject is not None:
        raise Refused(outcome.reject, conversation.state.status.kind)
    state = conversation.state
    return StyleSet(style=state.style, mode=state.mode, suggestion=outcome.suggestion)
