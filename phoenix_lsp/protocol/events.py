"""The ``phoenix/event`` notification: one model per ``kind``, one discriminated union (REQ-PROTO-020/021).

Call sites build the kind-specific part (``Status(status=..., previous=..., mode=...)``); the runtime's
``emit`` stamps the conversation id, ``seq`` and time, which are required on the wire.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from ..core.state import StatusKind
from ..core.values import Actor, Mode, Policy, Style
from .base import Wire
from .views import AgentRef, AlwaysAllowScope, CostEstimate, MessageView, TokenCounts


class EventBase(Wire):
    """Fields every event carries. The emitter stamps them; on the wire they are always present."""

    conversation_id: str = ""
    parent_conversation_id: str | None = Field(default=None, description="set on a sub-agent's events")
    seq: int = Field(default=0, description="1, 2, 3... per conversation, never reused (REQ-PROTO-020)")
    time: float = Field(default=0.0, description="seconds since the Unix epoch")


class Status(EventBase):
    kind: Literal["status"] = "status"
    status: StatusKind
    previous: StatusKind
    mode: Mode


class MessageAdded(EventBase):
    kind: Literal["message"] = "message"
    message: MessageView


class TextDelta(EventBase):
    kind: Literal["textDelta"] = "textDelta"
    text: str
    request_id: int


class ToolStart(EventBase):
    kind: Literal["toolStart"] = "toolStart"
    tool_use_id: str
    tool_name: str
    arguments: dict[str, Any]
    mode: Mode = Field(description="the mode the call runs under")
    access: Literal["read", "write"] | None = Field(
        default=None, description="an MCP tool's effective kind under the capability manifest (issue 37): read or "
        "write; absent for the other tools")


class ToolEnd(EventBase):
    kind: Literal["toolEnd"] = "toolEnd"
    tool_use_id: str
    is_error: bool
    summary: str


class ToolRefused(EventBase):
    kind: Literal["toolRefused"] = "toolRefused"
    tool_use_id: str
    tool_name: str
    by: Literal["mode"]


class Diff(EventBase):
    """A patch was applied by the editor."""

    kind: Literal["diff"] = "diff"
    tool_use_id: str
    path: str
    diff: str


class ModeChanged(EventBase):
    kind: Literal["modeChanged"] = "modeChanged"
    mode: Mode
    previous: Mode
    actor: Actor
    via: str = Field(description="setMode, /execute, /plan or upgrade_request")


class StyleChanged(EventBase):
    kind: Literal["styleChanged"] = "styleChanged"
    style: Style
    previous: Style


class StyleSuggestionEvent(EventBase):
    kind: Literal["styleSuggestion"] = "styleSuggestion"
    mode: Mode
    command: Literal["/execute", "/plan"]
    text: str


class PolicyChanged(EventBase):
    kind: Literal["policyChanged"] = "policyChanged"
    policy: Policy
    previous: Policy


class ModelChanged(EventBase):
    kind: Literal["modelChanged"] = "modelChanged"
    model: str
    previous: str
    context_window: int


class ApprovalRequested(EventBase):
    kind: Literal["approvalRequested"] = "approvalRequested"
    tool_use_id: str = Field(description="the tool call's id; phoenix/respondToApproval answers it")
    tool_name: str
    description: str
    arguments: dict[str, Any]
    diff: str | None = Field(default=None, description="the unified diff a patch would make")
    scopes: list[AlwaysAllowScope] = Field(
        default_factory=list, description="what Always Allow may add, narrowest first; the whole tool last"
    )


ApprovalOutcome = Literal["allow", "deny", "alwaysAllow", "cancelled", "superseded"]


class ApprovalResolved(EventBase):
    kind: Literal["approvalResolved"] = "approvalResolved"
    tool_use_id: str
    decision: ApprovalOutcome


class UpgradeRequested(EventBase):
    kind: Literal["upgradeRequested"] = "upgradeRequested"
    tool_use_id: str = Field(description="the upgrade_request call's id; phoenix/respondToModeUpgrade answers it")
    reason: str


class UpgradeResolved(EventBase):
    kind: Literal["upgradeResolved"] = "upgradeResolved"
    tool_use_id: str
    approved: bool
    cancelled: bool


class AlwaysAllowChanged(EventBase):
    kind: Literal["alwaysAllowChanged"] = "alwaysAllowChanged"
    tool_name: str
    allowed: bool
    rule: str = Field(default="", description="the rule granted or revoked (the tool name for the whole tool)")
    scope: Literal["prefix", "tool"] = "tool"


class Retry(EventBase):
    kind: Literal["retry"] = "retry"
    attempt: int
    max_attempts: int
    delay_ms: int = Field(description="how long the server waits before the attempt (backoff, or the provider's "
                          "retry-after up to the server's cap)")
    reason: str
    retry_after_ms: int | None = Field(
        default=None, description="the wait the provider asked for (retry-after of a 429/529), when it did"
    )


class Usage(EventBase):
    """After every model response: how full the context is, and what the requests cost (issue 16)."""

    kind: Literal["usage"] = "usage"
    used_tokens: int
    context_window: int
    fraction: float
    request: TokenCounts | None = None
    total: TokenCounts
    sub_agents: TokenCounts
    estimated_cost: CostEstimate | None = None


class ContextWarning(EventBase):
    kind: Literal["contextWarning"] = "contextWarning"
    used_tokens: int
    context_window: int
    fraction: float


class ContinuationStarted(EventBase):
    kind: Literal["continuationStarted"] = "continuationStarted"
    used_tokens: int
    context_window: int
    fraction: float


class Continuation(EventBase):
    kind: Literal["continuation"] = "continuation"
    summary: str
    fallback: bool


class SubAgentsSpawned(EventBase):
    kind: Literal["subAgentsSpawned"] = "subAgentsSpawned"
    tool_use_id: str
    agents: list[AgentRef]


class SubAgentFinished(EventBase):
    kind: Literal["subAgentFinished"] = "subAgentFinished"
    agent_id: str
    outcome: Literal["submitted", "failed"]
    reason: str | None = None


class Error(EventBase):
    kind: Literal["error"] = "error"
    message: str
    #: ``llm``: the model's request failed; ``store``: a change could not be saved and was not made;
    #: ``discarded``: a background command's changes were thrown away unreviewed (its conversation or the server
    #: ended first)
    error_kind: Literal["llm", "store", "discarded"]


class SecretWithheld(EventBase):
    """The sink check replaced secrets in a request before it left for the model (REQ-SEC-012): where they came
    from, never their values."""

    kind: Literal["secretWithheld"] = "secretWithheld"
    sources: list[str] = Field(description="what was replaced, by source: 'the value of OPENAI_API_KEY', 'a "
                               "private key block' (never the value)")
    count: int = Field(description="how many replacements, all sources together")
    message: str = Field(description="what happened, why, and what to do, for the user")


EventKinds = (
    Status
    | MessageAdded
    | TextDelta
    | ToolStart
    | ToolEnd
    | ToolRefused
    | Diff
    | ModeChanged
    | StyleChanged
    | StyleSuggestionEvent
    | PolicyChanged
    | ModelChanged
    | ApprovalRequested
    | ApprovalResolved
    | UpgradeRequested
    | UpgradeResolved
    | AlwaysAllowChanged
    | Retry
    | Usage
    | ContextWarning
    | ContinuationStarted
    | Continuation
    | SubAgentsSpawned
    | SubAgentFinished
    | Error
    | SecretWithheld
)

Event = Annotated[EventKinds, Field(discriminator="kind")]

_ADAPTER: TypeAdapter[EventKinds] | None = None


def parse_event(params: Any) -> EventKinds:
    """A received ``phoenix/event`` as its model (clients use this instead of matching strings)."""
    global _ADAPTER
    if _ADAPTER is None:
        _ADAPTER = TypeAdapter(Event)
    return _ADAPTER.validate_python(params)
