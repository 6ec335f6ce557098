"""Effects: what the core asks the server to do. The server carries them out in order and feeds the
outcomes back as events. Persistence effects always come first (REQ-BED-007). What the core tells clients
is a ``Notification`` (``notifications.py``), one effect type per kind."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from .notifications import Notification
from .rules import AllowRule
from .values import Actor, AgentSpec, Message, Mode, ToolUse, Usage


@dataclass(frozen=True, slots=True)
class PersistMessage:
    """Append ``message`` at ``index`` of the stored history."""

    index: int
    message: Message


@dataclass(frozen=True, slots=True)
class PersistState:
    """Store the conversation state (everything but the history, which PersistMessage appends)."""


@dataclass(frozen=True, slots=True)
class RequestLlm:
    """Send the history to the model after ``delay_ms``. ``purpose`` summary means: no tools, and append
    ``instruction`` as a final user message that is not kept in the history (REQ-BED-020)."""

    request_id: int
    attempt: int = 0
    delay_ms: int = 0
    purpose: Literal["turn", "summary"] = "turn"
    instruction: str | None = None


@dataclass(frozen=True, slots=True)
class CancelLlm:
    request_id: int


@dataclass(frozen=True, slots=True)
class RunTool:
    """Run one tool call. ``mode`` is the mode the call was allowed under: the sandbox follows it."""

    call: ToolUse
    mode: Mode


@dataclass(frozen=True, slots=True)
class AnswerHostCall:
    """The answer to a HostCall: it may go ahead, or not (``message`` says why, for the script's error;
    ``by`` why: ``"mode"`` (Restricted refuses writes), ``"user"`` (the user's Deny), ``"unknown_tool"``,
    ``"early"`` (not a read, from a node started before its plan was complete: REQ-AGENT-044), or ``""``
    (allowed, or the plan was cancelled))."""

    call_id: str
    allowed: bool
    message: str = ""
    by: str = ""


@dataclass(frozen=True, slots=True)
class CancelTool:
    tool_use_id: str


@dataclass(frozen=True, slots=True)
class AskApproval:
    call: ToolUse  # its id is the approval's id: phoenix/respondToApproval names it
    scopes: tuple[AllowRule, ...] = ()  # what Always Allow may add, narrowest first (REQ-PERM-020)


@dataclass(frozen=True, slots=True)
class AskUpgrade:
    tool_use_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class SpawnAgents:
    tool_use_id: str
    agents: tuple[AgentSpec, ...]
    mode: Mode


@dataclass(frozen=True, slots=True)
class StopAgents:
    agent_ids: tuple[str, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class ReportToParent:
    """A sub-agent finished: the server delivers this to the parent as an AgentEnded event."""

    parent_id: str
    agent_id: str
    ok: bool
    result: str


@dataclass(frozen=True, slots=True)
class ReportUsage:
    """A sub-agent's LLM response used ``usage``: the server delivers it to the parent as an AgentUsage event."""

    parent_id: str
    agent_id: str
    usage: Usage


@dataclass(frozen=True, slots=True)
class Audit:
    """Record an entry in the audit log; the server adds the time, mode and style (REQ-LAYER-004)."""

    actor: Actor
    action: str
    detail: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SetTitle:
    """The conversation's title, taken from its first user message."""

    title: str


@dataclass(frozen=True, slots=True)
class UserCommand:
    """The user's message was the command /execute or /plan: handled here, never sent to the model."""

    command: Literal["execute", "plan"]


@dataclass(frozen=True, slots=True)
class RestoreChanges:
    """The undo of ``change_set`` is allowed: the request that asked carries it out, then reports ChangesUndone."""

    change_set: str


#: Why an event was refused. Stable: the server maps each to its JSON-RPC error (specs/protocol.md).
RejectCode = Literal[
    "busy",
    "context_exhausted",
    "context_too_large",
    "empty_message",
    "finished",
    "illegal_event",
    "no_pending_upgrade",
    "no_such_approval",
    "no_such_rule",
    "not_always_allowed",
    "not_subagent",
    "sandbox_unavailable",
    "stale",
    "subagent",
    "subagent_mode",
]


@dataclass(frozen=True, slots=True)
class ShowAnswer:
    """Show ``text`` to the clients as the reply to the turn, as if the model had streamed it in answer to
    ``request_id`` (a plan's rendered answer, REQ-AGENT-039: no model request was sent for it)."""

    request_id: int
    text: str


@dataclass(frozen=True, slots=True)
class Reject:
    """The event was refused; the state did not change. ``code`` is stable, ``message`` says what/why/next."""

    code: RejectCode
    message: str


Effect = (
    PersistMessage
    | PersistState
    | RequestLlm
    | CancelLlm
    | RunTool
    | AnswerHostCall
    | CancelTool
    | AskApproval
    | AskUpgrade
    | SpawnAgents
    | StopAgents
    | ReportToParent
    | ReportUsage
    | Notification
    | Audit
    | SetTitle
    | UserCommand
    | ShowAnswer
    | RestoreChanges
    | Reject
)
