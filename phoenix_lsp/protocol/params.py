"""Params of the phoenix/* requests (client -> server) and the initialization options."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AliasChoices, Field, field_validator

from ..core.values import Decision, Mode, Policy, Style
from .base import Wire

#: the largest number the store keeps (SQLite's INTEGER): a larger afterSeq / afterId is refused (REQ-PROTO-046)
STORE_INT_MAX = 2**63 - 1
#: LSP's uinteger, for line numbers
UINTEGER_MAX = 2**31 - 1
#: a path the OS takes (PATH_MAX, in characters; each component is checked by the OS itself)
PATH_MAX = 4096
#: a user message's limits, on every surface (the send-message use case holds an ACP prompt to them too)
MESSAGE_TEXT_MAX = 1_000_000
MESSAGE_IMAGES_MAX = 20
MESSAGE_ATTACHMENTS_MAX = 20

#: how a user message is processed (specs/modes.md): ``ask``, the conversation loop where the model calls tools
#: directly, or ``agent``, the orchestrator of specs/agent-mode.md
Route = Literal["ask", "agent"]


class ConversationRef(Wire):
    """Names one conversation."""

    conversation_id: str = Field(min_length=1, max_length=200)


class ImageIn(Wire):
    """An image pasted or dropped into a message."""

    media_type: str = Field(min_length=1, max_length=100)
    data: str = Field(min_length=1, description="base64")


class NewConversationParams(Wire):
    working_directory: str | None = Field(
        default=None, min_length=1, max_length=PATH_MAX,
        description="an existing absolute directory; absent = the workspace root (empty is refused)",
    )
    model: str | None = Field(default=None, min_length=1, max_length=200)
    style: Style = Style.CHAT
    policy: Policy = Field(
        default=Policy.INTERACTIVE, validation_alias=AliasChoices("policy", "approvalPolicy"),
        description="the approval policy (the old name approvalPolicy is still accepted)",
    )
    continue_from: str | None = Field(default=None, min_length=1, max_length=200)
    seed_with_summary: bool = True


class ListConversationsParams(Wire):
    include_sub_agents: bool = False
    working_directory: str | None = Field(
        default=None, min_length=1, max_length=PATH_MAX,
        description="only the conversations of this folder (an absolute directory, as newConversation takes it)",
    )


class GetConversationParams(ConversationRef):
    after_seq: int | None = Field(default=None, ge=0, le=STORE_INT_MAX)
    limit: int = Field(default=100, ge=1, le=1000)
    working_directory: str | None = Field(
        default=None, min_length=1, max_length=PATH_MAX,
        description="the folder the client goes on with the conversation in (the terminal chat's --cwd): given, a "
                    "conversation of another folder, or a sub-agent, is refused (the resume rule, REQ-TERM-001)",
    )


class LineRange(Wire):
    """Lines of a file, 0-based and inclusive, as LSP numbers them."""

    start_line: int = Field(ge=0, le=UINTEGER_MAX)
    end_line: int = Field(ge=0, le=UINTEGER_MAX)


class FileAttachment(Wire):
    """A file, or some of its lines, handed to the model (REQ-ATTACH-001)."""

    kind: Literal["file"] = "file"
    uri: str = Field(min_length=1, max_length=4096)
    range: LineRange | None = None


class DiagnosticIn(Wire):
    line: int = Field(ge=0, le=UINTEGER_MAX, description="0-based")
    severity: Literal["error", "warning", "information", "hint"] | None = None
    message: str = Field(max_length=4000)
    source: str | None = Field(default=None, max_length=200)


class DiagnosticsAttachment(Wire):
    """The problems the editor shows for a file (REQ-ATTACH-002)."""

    kind: Literal["diagnostics"] = "diagnostics"
    uri: str = Field(min_length=1, max_length=4096)
    diagnostics: list[DiagnosticIn] = Field(max_length=500)


class SendMessageParams(ConversationRef):
    text: str = Field(max_length=MESSAGE_TEXT_MAX)
    images: list[ImageIn] = Field(default_factory=list, max_length=MESSAGE_IMAGES_MAX)
    attachments: list[Annotated[FileAttachment | DiagnosticsAttachment, Field(discriminator="kind")]] = Field(
        default_factory=list, max_length=MESSAGE_ATTACHMENTS_MAX
    )
    route: Route | None = Field(
        default=None, description="how this message is processed; absent = the route persisted by phoenix/setRoute"
    )


class SetModeParams(ConversationRef):
    mode: Mode


class RespondToModeUpgradeParams(ConversationRef):
    approve: bool
    tool_use_id: str | None = Field(default=None, min_length=1, max_length=200)


class RespondToApprovalParams(ConversationRef):
    tool_use_id: str = Field(min_length=1, max_length=200)
    decision: Decision
    rule: str | None = Field(
        default=None, max_length=2000,
        description="alwaysAllow: the offered scope to add (its `rule` or `label`); absent = the narrowest",
    )


class SetApprovalPolicyParams(ConversationRef):
    policy: Policy


class SetStyleParams(ConversationRef):
    style: Style


class RevokeAlwaysAllowParams(ConversationRef):
    tool_name: str = Field(min_length=1, max_length=200)
    rule: str | None = Field(
        default=None, max_length=2000, description="one rule of the tool; absent = every rule of the tool"
    )


class ListModelsParams(Wire):
    refresh: bool = Field(default=False, description="ask the API again instead of the list kept from the last call")


class SetModelParams(ConversationRef):
    model: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@/\[\]-]*$")


class GetRouteParams(Wire):
    """phoenix/getRoute takes no params (an empty object)."""


class SetRouteParams(Wire):
    route: Route = Field(description="the route every client of this machine uses from now on")


class GetArtifactParams(Wire):
    conversation_id: str = Field(min_length=1, max_length=200, description=(
        "the conversation whose plan made the artifact: a handle is served only to its own conversation"))
    handle: str = Field(min_length=1, max_length=200, description=(
        "an `artifact://` handle from a plan's result, or an `image://` handle of an image of the conversation's "
        "history (REQ-PROTO-072)"))


class UndoChangesParams(Wire):
    conversation_id: str = Field(min_length=1, max_length=200)
    change_set_id: str = Field(default="latest", min_length=1, max_length=64, description=(
        "the accepted change set to take back (its id, as the tool's result named it), or `latest`"))


class ReviewBackgroundParams(Wire):
    conversation_id: str = Field(min_length=1, max_length=200)
    pid: int | None = Field(default=None, ge=1, le=2**31 - 1, description=(
        "the running background command (its PID, as its result named it); none: every one of the conversation"))
    stop: bool = Field(default=False, description=(
        "stop the command(s), whose changes are then reviewed as an ended command's; false: only show what they "
        "changed so far, read-only"))


class GetAuditLogParams(Wire):
    conversation_id: str | None = Field(default=None, min_length=1, max_length=200)
    after_id: int = Field(default=0, ge=0, le=STORE_INT_MAX)
    limit: int = Field(default=100, ge=1, le=1000)


class ModelPriceIn(Wire):
    """A model's price in USD per million tokens (issue 16); cache prices default to the API's multipliers."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write_5m: float | None = Field(default=None, ge=0, alias="cacheWrite5m")  # not to_camel's "5M"
    cache_write_1h: float | None = Field(default=None, ge=0, alias="cacheWrite1h")
    cache_read: float | None = Field(default=None, ge=0)


class InitializationOptions(Wire):
    """What a client may set in ``initializationOptions``; bad values are reported and replaced by defaults."""

    model: str | None = None
    data_dir: str | None = None
    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None
    retry_base_ms: int | None = Field(default=None, ge=0, le=60_000)
    bash_timeout_s: float | None = Field(default=None, gt=0, le=3600)
    background_timeout_s: float | None = Field(default=None, gt=0, le=7 * 24 * 3600)
    deny_read: list[str] | None = None  # more paths Restricted commands may not read (issue 12)
    prompt_cache: Literal["on", "off"] | bool | None = None  # issue 16; PHOENIX_PROMPT_CACHE
    prompt_cache_ttl: Literal["5m", "1h"] | None = None  # PHOENIX_PROMPT_CACHE_TTL
    model_prices: dict[str, ModelPriceIn] | None = None  # PHOENIX_MODEL_PRICES (JSON)

    @field_validator("anthropic_api_key")
    @classmethod
    def _no_blank_key(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None
