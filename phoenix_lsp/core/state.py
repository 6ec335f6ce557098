"""The state of one conversation: its status (where it is in its lifecycle) and everything it remembers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .rules import AllowRule
from .values import (
    AgentSlot,
    InstructionFile,
    Message,
    Mode,
    Policy,
    Route,
    Style,
    ToolResult,
    ToolUse,
    Usage,
    UsageTotals,
)


@dataclass(frozen=True, slots=True)
class Batch:
    """The tool calls of one LLM response, run serially in request order (REQ-BED-004).

    ``results`` holds the answers so far; the call being worked on is ``calls[len(results)]``.
    """

    calls: tuple[ToolUse, ...]
    results: tuple[ToolResult, ...] = ()

    @property
    def current(self) -> ToolUse:
        return self.calls[len(self.results)]

    @property
    def complete(self) -> bool:
        return len(self.results) == len(self.calls)

    def answer(self, result: ToolResult) -> Batch:
        return Batch(self.calls, (*self.results, result))


@dataclass(frozen=True, slots=True)
class Idle:
    kind: Literal["idle"] = "idle"


@dataclass(frozen=True, slots=True)
class AwaitingLlm:
    """An LLM request is in flight (or waiting out its retry delay)."""

    request_id: int
    attempt: int = 0
    kind: Literal["awaiting_llm"] = "awaiting_llm"


@dataclass(frozen=True, slots=True)
class RunningTool:
    batch: Batch
    kind: Literal["running_tool"] = "running_tool"


@dataclass(frozen=True, slots=True)
class AwaitingApproval:
    """Policy interactive: the current call waits for Allow / Deny / Always Allow (REQ-PERM-002).

    ``host_call``: the call waiting is not the batch's current call but a host call of the plan it runs
    (REQ-AGENT-015); the plan keeps running once it is answered. ``tool_use_id`` is then the host call's id.
    """

    batch: Batch
    tool_use_id: str
    host_call: ToolUse | None = None
    kind: Literal["awaiting_approval"] = "awaiting_approval"


@dataclass(frozen=True, slots=True)
class AwaitingUpgrade:
    """The model asked for Unrestricted mode; paused until the user answers, with no timeout (REQ-BED-015)."""

    batch: Batch
    reason: str
    kind: Literal["awaiting_upgrade"] = "awaiting_upgrade"


@dataclass(frozen=True, slots=True)
class AwaitingAgents:
    """Sub-agents are running; the parent waits for all of them (REQ-BED-008)."""

    batch: Batch
    agents: tuple[AgentSlot, ...]
    kind: Literal["awaiting_agents"] = "awaiting_agents"


@dataclass(frozen=True, slots=True)
class Summarizing:
    """A continuation summary is being requested, without tools (REQ-BED-020)."""

    request_id: int
    attempt: int = 0
    unexecuted: tuple[str, ...] = ()
    kind: Literal["summarizing"] = "summarizing"


@dataclass(frozen=True, slots=True)
class Error:
    """The error state (REQ-BED-006): a user message continues the conversation."""

    message: str
    kind: Literal["error"] = "error"


@dataclass(frozen=True, slots=True)
class Exhausted:
    """Context exhausted (REQ-BED-021): terminal for new messages; the summary seeds a new conversation."""

    summary: str
    kind: Literal["exhausted"] = "exhausted"


@dataclass(frozen=True, slots=True)
class Finished:
    """A sub-agent is done: it submitted a result (ok) or failed (REQ-BED-008/024)."""

    ok: bool
    result: str
    kind: Literal["finished"] = "finished"


#: The wire names of the statuses (``Status.kind``).
StatusKind = Literal[
    "idle",
    "awaiting_llm",
    "running_tool",
    "awaiting_approval",
    "awaiting_upgrade",
    "awaiting_agents",
    "summarizing",
    "error",
    "exhausted",
    "finished",
]

Status = (
    Idle
    | AwaitingLlm
    | RunningTool
    | AwaitingApproval
    | AwaitingUpgrade
    | AwaitingAgents
    | Summarizing
    | Error
    | Exhausted
    | Finished
)

#: Statuses in which the agent is working; a user message is refused as busy (REQ-BED-002).
BUSY = (AwaitingLlm, RunningTool, AwaitingApproval, AwaitingUpgrade, AwaitingAgents, Summarizing)
#: Statuses in which nothing runs and nothing waits: the rest. They need nothing after a restart.
RESTING = (Idle, Error, Exhausted, Finished)
#: The same, by wire name (clients and the store see statuses by name).
RESTING_KINDS: frozenset[StatusKind] = frozenset(("idle", "error", "exhausted", "finished"))


@dataclass(frozen=True, slots=True)
class Settings:
    """Numbers the core decides with. Defaults follow the seeds; tests and users may change them."""

    max_retries: int = 3
    retry_base_ms: int = 1000
    retry_after_max_ms: int = 60_000  # the longest provider-requested wait honoured (REQ-BED-006)
    warn_ratio: float = 0.8
    continue_ratio: float = 0.9
    context_window: int = 200_000
    max_turns: int | None = None  # sub-agents: LLM responses allowed before the agent fails


@dataclass(frozen=True, slots=True)
class ConversationState:
    """Everything the core knows about one conversation. Replaced, never mutated."""

    id: str
    model: str
    working_directory: str
    sandbox: bool
    mode: Mode
    style: Style = Style.CHAT
    policy: Policy = Policy.INTERACTIVE
    status: Status = field(default_factory=Idle)
    history: tuple[Message, ...] = ()
    always_allow: tuple[AllowRule, ...] = ()  # REQ-PERM-003/019: whole tools or bash command prefixes
    notes: tuple[str, ...] = ()  # synthetic system messages waiting for the current tool batch to finish
    context_tokens: int = 0
    warned: bool = False
    next_request: int = 1
    turns: int = 0
    is_subagent: bool = False
    parent_id: str | None = None
    origin_id: str | None = None
    settings: Settings = field(default_factory=Settings)
    usage: UsageTotals = field(default_factory=UsageTotals)  # this conversation's own requests (issue 16)
    agents_usage: UsageTotals = field(default_factory=UsageTotals)  # its sub-agents' requests, as reported
    last_usage: Usage | None = None  # the usage of the latest response
    #: project instructions (REQ-INSTR-001): read when the conversation started or was last reloaded, and
    #: byte-stable in between, so the prompt cache keeps working
    instructions: str = ""
    instruction_files: tuple[InstructionFile, ...] = ()
    route: Route = Route.ASK  # the route of the latest user message (REQ-AGENT-001): its turns' tools
    #: the client announced the editor's sight when the conversation started (REQ-SIGHT-002): its tool list
    #: has the sight tools for its whole life, whichever client connects later
    editor_sight: bool = False
    #: the change set an undo is restoring (REQ-BASH-041): no turn starts until it is done
    undoing: str | None = None
    #: the ended background command whose changes are being reviewed at rest (REQ-BASH-044): no turn starts
    #: until it is done
    reviewing: str | None = None
    #: the question of that review, while it waits for the user's answer (a host call outside a turn)
    review_question: ToolUse | None = None
