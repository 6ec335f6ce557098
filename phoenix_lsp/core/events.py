"""Events: everything that can happen to a conversation, from the user, the LLM, tools or the server.

Ids and outcomes arrive inside events; the core never asks the outside world for anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .tools import ToolKind
from .values import Decision, Image, InstructionFile, Mode, Policy, Route, Style, Text, ToolUse, Usage


@dataclass(frozen=True, slots=True)
class UserMessage:
    text: str
    images: tuple[Image, ...] = ()
    #: files and diagnostics the user attached, as the labelled text the model sees once (REQ-ATTACH-003)
    attachments: tuple[str, ...] = ()
    route: Route = Route.ASK  # REQ-AGENT-001: the route this message takes


@dataclass(frozen=True, slots=True)
class LlmDone:
    """A complete LLM response (streamed deltas are shown by the server; only the whole response counts)."""

    request_id: int
    content: tuple[Text | ToolUse, ...]
    stop_reason: str
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True, slots=True)
class LlmFailed:
    """A failed LLM request. ``retry_after_ms``: how long the provider asked us to wait (REQ-BED-006)."""

    request_id: int
    retryable: bool
    message: str
    status: int | None = None
    retry_after_ms: int | None = None


@dataclass(frozen=True, slots=True)
class ToolDone:
    tool_use_id: str
    output: str
    is_error: bool = False
    refused_by_sandbox: bool = False
    #: the images the tool returned (an MCP tool's, REQ-MCP-021), already in the store
    images: tuple[Image, ...] = ()
    #: a plan's rendered answer (run_plan with ``answer``, REQ-AGENT-039): the turn's reply, no second request
    answer: str | None = None


@dataclass(frozen=True, slots=True)
class HostCall:
    """A running tool (the call ``tool_use_id``) wants to make one host call. A plan (``run_plan``): ``call``
    names the MCP tool (its id is unique to this host call; an approval node asks with the node's write tool),
    and ``kind`` is the tool's scope from the capability manifest: READ or WRITE for a call, PLAN for an
    approval node (it runs nothing: the writes it guards are each decided when made). A ``bash`` command whose
    changes were captured (REQ-BASH-032): ``call`` is named ``patch`` (its input lists the changed files) and
    ``kind`` is WRITE, so the patch tool's policy decides whether they land. Answered by an AnswerHostCall."""

    tool_use_id: str
    call: ToolUse
    kind: ToolKind


@dataclass(frozen=True, slots=True)
class Cancel:
    """The user cancels whatever is running (REQ-BED-005)."""


@dataclass(frozen=True, slots=True)
class Stop:
    """The server stops a sub-agent (time limit, parent cancelled, restart) with a reason."""

    reason: str


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    tool_use_id: str
    decision: Decision
    rule: str | None = None  # alwaysAllow: which offered scope (its ``rule`` or ``label``); None = narrowest
    #: deny: why, for the model, when the user could not be shown the call (REQ-PERM-023); None = the user said no
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class UpgradeAnswer:
    approve: bool


@dataclass(frozen=True, slots=True)
class SetMode:
    """The user sets the mode (setMode, /execute, /plan)."""

    mode: Mode


@dataclass(frozen=True, slots=True)
class SetStyle:
    style: Style


@dataclass(frozen=True, slots=True)
class SetPolicy:
    policy: Policy


@dataclass(frozen=True, slots=True)
class SetModel:
    """The user chooses the model that answers from the next turn (REQ-MODEL-003).

    ``context_window`` is the new model's, from the server's model table: the core decides with it."""

    model: str
    context_window: int


@dataclass(frozen=True, slots=True)
class WindowReported:
    """The provider reported the context window of ``model`` after the conversation chose it (Ollama's own
    report, asked in the background: REQ-MODEL-012). Taken in any status: the thresholds of the next response
    are computed from it. A report for a model the conversation no longer uses changes nothing."""

    model: str
    context_window: int


@dataclass(frozen=True, slots=True)
class SetInstructions:
    """The user asked to read the project instructions again (REQ-INSTR-002); taken between turns only."""

    text: str
    files: tuple[InstructionFile, ...]


@dataclass(frozen=True, slots=True)
class RevokeAlwaysAllow:
    tool: str
    rule: str | None = None  # one rule of the tool (its ``rule`` or ``label``); None = every rule of the tool


@dataclass(frozen=True, slots=True)
class TriggerContinuation:
    """The user asks for the continuation summary before the threshold (REQ-BED-023)."""


@dataclass(frozen=True, slots=True)
class AgentEnded:
    """One of the parent's sub-agents finished (submitted, failed, timed out, exhausted)."""

    agent_id: str
    ok: bool
    result: str


@dataclass(frozen=True, slots=True)
class AgentUsage:
    """One of the parent's sub-agents got an LLM response that used ``usage`` (its tokens count for the parent)."""

    agent_id: str
    usage: Usage


@dataclass(frozen=True, slots=True)
class UndoChanges:
    """The user asks to take back an accepted change set (REQ-BASH-041); ``change_set`` is its id, as kept."""

    change_set: str


@dataclass(frozen=True, slots=True)
class ChangesUndone:
    """The server carried out an undo the core allowed: ``restored`` and ``refused`` name its paths (a refused one
    changed since the set landed and keeps what it holds); ``failed`` says why nothing was restored."""

    change_set: str
    label: str = ""
    restored: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    failed: str = ""


@dataclass(frozen=True, slots=True)
class ReviewBackground:
    """A captured background command ended while no turn runs (REQ-BASH-044): the server asks to review its
    changes now. ``job`` names it (unique in the server's run); allowed at rest only, one review at a time."""

    job: str
    command: str


@dataclass(frozen=True, slots=True)
class BackgroundReviewed:
    """The review of ``job`` allowed by ReviewBackground is over; ``told`` is what the model learns of it (its
    bash result would have said the same), empty when the command changed nothing."""

    job: str
    told: str = ""


@dataclass(frozen=True, slots=True)
class ChangesDiscarded:
    """A background command's layer was discarded unreviewed (its conversation or the server ended, REQ-BASH-046):
    ``told`` names the command and what was thrown away, for the user and the model."""

    told: str


@dataclass(frozen=True, slots=True)
class Restore:
    """The server restarted and loaded this conversation from the store (REQ-BED-007)."""


Event = (
    UserMessage
    | LlmDone
    | LlmFailed
    | ToolDone
    | HostCall
    | Cancel
    | Stop
    | ApprovalAnswer
    | UpgradeAnswer
    | SetMode
    | SetStyle
    | SetPolicy
    | SetModel
    | WindowReported
    | SetInstructions
    | RevokeAlwaysAllow
    | TriggerContinuation
    | AgentEnded
    | AgentUsage
    | UndoChanges
    | ChangesUndone
    | ReviewBackground
    | BackgroundReviewed
    | ChangesDiscarded
    | Restore
)
