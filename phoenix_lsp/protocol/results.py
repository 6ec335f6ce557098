"""Results of the phoenix/* requests (server -> client)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..core.state import StatusKind
from ..core.values import Actor, Decision, Mode, Policy, Style
from .base import Wire
from .params import Route
from .views import (
    AlwaysAllowRule,
    ContextUsage,
    MessageView,
    PendingApproval,
    PendingUpgrade,
    SandboxInfo,
    StyleSuggestion,
    SubAgentView,
    TokenUsage,
)


class NewConversationResult(Wire):
    conversation_id: str
    mode: Mode
    style: Style
    policy: Policy
    working_directory: str
    model: str
    sandbox: SandboxInfo
    continued_from: str | None = None


class ConversationSummary(Wire):
    conversation_id: str
    title: str
    status: StatusKind
    model: str
    created_at: float
    updated_at: float
    message_count: int
    working_directory: str = Field(description="the conversation's folder, as newConversation held it")
    continued_from: str | None = None
    parent_conversation_id: str | None = None


class ListConversationsResult(Wire):
    conversations: list[ConversationSummary] = Field(description="most recently updated first")


class InstructionFileView(Wire):
    """A project instructions file (REQ-INSTR-001)."""

    path: str
    size: int = Field(description="bytes")
    kept: int = Field(description="bytes in the prompt; less than size when the cap cut it, 0 when skipped")
    problem: str | None = Field(default=None, description="why the file was skipped")


class GetConversationResult(Wire):
    conversation_id: str
    is_sub_agent: bool
    status: StatusKind
    mode: Mode
    style: Style
    policy: Policy
    working_directory: str
    model: str
    always_allowed: list[str] = Field(description="the always-allow rules' labels (`patch`, `bash: git status *`)")
    always_allow_rules: list[AlwaysAllowRule] = Field(default_factory=list)
    context_usage: ContextUsage
    usage: TokenUsage
    sub_agents: list[SubAgentView]
    messages: list[MessageView]
    last_seq: int
    has_more: bool
    sandbox: SandboxInfo
    pending_approval: PendingApproval | None = None
    pending_upgrade: PendingUpgrade | None = None
    parent_conversation_id: str | None = None
    continued_from: str | None = None
    continuation_summary: str | None = None
    error: str | None = None
    instructions: list[InstructionFileView] = Field(
        default_factory=list, description="the project instructions files in effect, farthest first"
    )


class SendMessageResult(Wire):
    accepted: Literal[True] = True
    message_id: str
    command: Literal["execute", "plan"] | None = Field(
        default=None, description="set when the text was the user command /execute or /plan"
    )
    mode: Mode | None = Field(default=None, description="the mode after a command")


class CancelResult(Wire):
    cancelled: bool = Field(description="whether anything was running")
    status: StatusKind


class SetModeResult(Wire):
    mode: Mode
    changed: bool


class RespondToModeUpgradeResult(Wire):
    mode: Mode


class RespondToApprovalResult(Wire):
    tool_use_id: str
    decision: Decision


class SetApprovalPolicyResult(Wire):
    policy: Policy


class SetStyleResult(Wire):
    style: Style
    mode: Mode
    suggestion: StyleSuggestion | None = None


class ModelView(Wire):
    """A model a conversation can use (REQ-MODEL-001)."""

    id: str
    name: str
    context_window: int = Field(description="tokens; the continuation thresholds are computed from it")
    provider: str | None = Field(
        default=None, description="who answers, when not Anthropic: the id's prefix (absent: anthropic)"
    )
    context_window_known: bool | None = Field(
        default=None, description="false: nobody reported the window; contextWindow is a small assumed one (set "
        "it in the providers file); absent: known",
    )
    lifecycle: Literal["active", "deprecated", "retired"] | None = Field(
        default=None, description="the provider's lifecycle stage (active; deprecated: still answers, retires on "
        "retiresAt); absent: the provider does not say. Retired models are not listed",
    )
    deprecated_at: str | None = Field(default=None, description="YYYY-MM-DD, when a deprecated model was deprecated")
    retires_at: str | None = Field(
        default=None, description="YYYY-MM-DD, the scheduled retirement of a deprecated model (it may be revised)"
    )


class ProviderListing(Wire):
    """How one OpenAI-compatible provider's models were listed (issue 27)."""

    provider: str
    listed: bool = Field(description="whether the provider's own list (GET /v1/models) was read")
    reason: str | None = Field(default=None, description="why it was not, and what to do")


class ListModelsResult(Wire):
    models: list[ModelView]
    default_model: str = Field(description="what a new conversation uses unless it names a model")
    source: Literal["api", "builtin"] = Field(description="the API's model list, or the built-in one")
    reason: str | None = Field(default=None, description="why the built-in list is given (source builtin)")
    providers: list[ProviderListing] | None = Field(
        default=None, description="the other configured providers, whose models follow Anthropic's (absent: none)"
    )


class ReloadInstructionsResult(Wire):
    instructions: list[InstructionFileView]
    changed: bool = Field(description="whether the text the model gets changed")


class SetModelResult(Wire):
    model: str
    previous: str
    changed: bool
    context_window: int


class GetRouteResult(Wire):
    route: Route = Field(description="the route persisted in the data directory (`ask` when none is)")


class GetArtifactResult(Wire):
    handle: str
    type: str = Field(description="`json`, `table` (a list of objects), `text`, or `image` (REQ-PROTO-072)")
    size: int = Field(ge=0, description="bytes of the artifact")
    media_type: str = Field(description="`application/json`, `text/plain; charset=utf-8`, or an image's (`image/png`): "
                            "an image is sent as its pixels encoded again, never as the store's file holds it")
    data: str = Field(description="the artifact's bytes, base64")


class RefusedPath(Wire):
    path: str = Field(description="relative to the conversation's folder")
    why: str


class UndoChangesResult(Wire):
    change_set_id: str
    label: str = Field(description="what made the change set: `bash: <command>` or `patch <path>`")
    undone: bool = Field(description="something was restored (false: nothing changed on disk or in the editor)")
    restored: list[str] = Field(description="the paths that hold again what they held before the change set")
    refused: list[RefusedPath] = Field(description="paths changed since the change set landed: kept as they are")
    message: str = Field(description="what happened, for the user")


class BackgroundChanges(Wire):
    pid: int
    command: str
    running: bool = Field(description="false: it ended while its changes were read")
    files: list[str] = Field(description="the paths it changed so far, relative to the conversation's folder")
    summary: str = Field(description="counts, sizes and the changes that are no editor edit")
    diff: str = Field(description="the unified diff of its text files so far (redacted), the summary's lines first")


class ReviewBackgroundResult(Wire):
    commands: list[BackgroundChanges] = Field(description="what each command changed so far, read-only")
    stopped: list[int] = Field(description="the PIDs stopped by this request (their review follows)")
    message: str = Field(description="what happened, for the user")


class SetRouteResult(Wire):
    route: Route
    previous: Route = Field(description="the route persisted before this call")


class TriggerContinuationResult(Wire):
    status: StatusKind


class AuditEntryView(Wire):
    id: int
    time: float
    conversation_id: str | None = None
    actor: Actor
    kind: str
    mode: Mode | None = None
    style: Style | None = None
    details: dict[str, Any]


class GetAuditLogResult(Wire):
    entries: list[AuditEntryView]
    next_after_id: int | None = Field(default=None, description="set when more entries may follow")


class ListAlwaysAllowedResult(Wire):
    tools: list[AlwaysAllowRule] = Field(description="every rule: `toolName`, `kind`, `rule`, `label`")


class RevokeAlwaysAllowResult(Wire):
    revoked: bool
