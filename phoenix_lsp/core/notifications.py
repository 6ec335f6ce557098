"""Notifications: what the core tells connected clients that is not a persisted message.

One frozen dataclass per kind, with Python field names and precise types; together they are the union
``Notification``, one of the core's effects. Each says everything its client event says, previous values
included: the server only translates it to the wire (``server/wire.py``: ``notification_event``), and the
wire's camelCase names are written there, never here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .rules import AllowRule
from .state import StatusKind
from .values import Actor, Decision, Mode, Policy, Style


@dataclass(frozen=True, slots=True)
class ContextUsage:
    """How full the context window is (REQ-BED-012): ``fraction`` is ``used_tokens / context_window``, rounded
    to four places, or 0 when the window is unknown (0)."""

    used_tokens: int
    context_window: int
    fraction: float


@dataclass(frozen=True, slots=True)
class StatusChanged:
    """The conversation entered another status, or its mode changed (the status event carries both)."""

    status: StatusKind
    previous: StatusKind
    mode: Mode


@dataclass(frozen=True, slots=True)
class ModeChanged:
    """``via``: ``setMode``, ``/execute``, ``/plan`` or ``upgrade_request`` (REQ-BED-017)."""

    mode: Mode
    previous: Mode
    actor: Actor
    via: str


@dataclass(frozen=True, slots=True)
class StyleChanged:
    style: Style
    previous: Style


@dataclass(frozen=True, slots=True)
class StyleSuggested:
    """The new style suits the other mode: the user may switch with ``command`` (REQ-LAYER-001)."""

    text: str
    mode: Mode
    command: Literal["/execute", "/plan"]


@dataclass(frozen=True, slots=True)
class PolicyChanged:
    policy: Policy
    previous: Policy


@dataclass(frozen=True, slots=True)
class ModelChanged:
    """Another model answers from the next turn; ``context_window`` is its window (REQ-MODEL-003)."""

    model: str
    previous: str
    context_window: int


@dataclass(frozen=True, slots=True)
class RetryScheduled:
    """A failed LLM request is tried again after ``delay_ms`` (REQ-BED-006); ``retry_after_ms`` is the wait the
    provider asked for, when it did."""

    attempt: int
    max_attempts: int
    delay_ms: int
    reason: str
    retry_after_ms: int | None = None


@dataclass(frozen=True, slots=True)
class ErrorReported:
    """The turn ended in an error the user must see (the LLM request failed for good)."""

    message: str
    #: ``llm``: the model's request failed for good; ``discarded``: a background command's changes were thrown
    #: away unreviewed (REQ-BASH-046)
    error_kind: Literal["llm", "discarded"] = "llm"


@dataclass(frozen=True, slots=True)
class UsageReported:
    """After a model response, or when the window's size became known: how full the context is."""

    usage: ContextUsage


@dataclass(frozen=True, slots=True)
class ContextWarning:
    """The context passed the warning share of its window (REQ-BED-012/023)."""

    usage: ContextUsage


@dataclass(frozen=True, slots=True)
class ContinuationStarted:
    """A continuation summary is being requested (REQ-BED-019/020); ``manual`` when the user asked for it."""

    usage: ContextUsage
    manual: bool = False


@dataclass(frozen=True, slots=True)
class ContextExhausted:
    """The conversation is exhausted; ``summary`` goes on in a new one (``fallback``: not the model's own)."""

    summary: str
    fallback: bool


@dataclass(frozen=True, slots=True)
class ApprovalResolved:
    """An approval was answered by the user, cancelled, or superseded by a mode change."""

    tool_use_id: str
    decision: Decision | Literal["cancelled", "superseded"]


@dataclass(frozen=True, slots=True)
class UpgradeResolved:
    """An upgrade request was approved or denied by the user, or cancelled."""

    tool_use_id: str
    decision: Literal["approve", "deny", "cancelled"]


@dataclass(frozen=True, slots=True)
class ToolRefused:
    """A tool call was refused without running because the mode does not allow it (REQ-PATCH-009)."""

    tool_use_id: str
    tool_name: str
    by: Literal["mode"] = "mode"


@dataclass(frozen=True, slots=True)
class AlwaysAllowChanged:
    """``rule`` was added to (``allowed``) or removed from the conversation's always-allow list (REQ-PROTO-021)."""

    rule: AllowRule
    allowed: bool


Notification = (
    StatusChanged
    | ModeChanged
    | StyleChanged
    | StyleSuggested
    | PolicyChanged
    | ModelChanged
    | RetryScheduled
    | ErrorReported
    | UsageReported
    | ContextWarning
    | ContinuationStarted
    | ContextExhausted
    | ApprovalResolved
    | UpgradeResolved
    | ToolRefused
    | AlwaysAllowChanged
)

#: Notifications of what already happened, told before the status change of the same transition.
TOLD_BEFORE_STATUS = (ErrorReported, UsageReported)
