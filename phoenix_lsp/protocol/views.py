"""Values that several results and events share: messages, content blocks, sandbox and context facts."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ..core.state import StatusKind
from ..core.values import WireTag
from .base import Wire


class TextBlock(Wire):
    type: Literal["text"] = "text"
    text: str


#: how an image handle starts: ``image://<imageId>``, served by phoenix/getArtifact to its own conversation
IMAGE_HANDLE = "image://"


def image_label(media_type: str, size: int | None) -> str:
    """What every client shows of an image, live and in a reopened history: ``image (PNG, 12 KB)`` (REQ-MCP-021);
    ``image (PNG)`` when its size is not known (the store no longer holds it)."""
    kind = media_type.removeprefix("image/").upper()[:20] or "unknown type"
    return f"image ({kind}, {max(1, round(size / 1024)):,} KB)" if size is not None else f"image ({kind})"


class ImageBlock(Wire):
    """An image kept by the server (one the user attached, or an MCP tool's, REQ-MCP-021); the bytes are not sent
    again: phoenix/getArtifact serves them by ``handle``, through the image gate (REQ-PROTO-072)."""

    type: Literal["image"] = "image"
    image_id: str
    media_type: str
    size: int | None = Field(ge=0, description="the bytes the server keeps; null when the store no longer holds it")
    label: str = Field(description="what every client shows of it: `image (PNG, 12 KB)`")
    handle: str = Field(description="`image://<imageId>`: phoenix/getArtifact serves it to this conversation")


class ToolUseBlock(Wire):
    type: Literal["toolUse"] = "toolUse"
    tool_use_id: str
    tool_name: str
    arguments: dict[str, Any]


class ToolResultBlock(Wire):
    type: Literal["toolResult"] = "toolResult"
    tool_use_id: str
    content: str
    is_error: bool
    images: list[ImageBlock] = Field(default_factory=list, description=(
        "the images the tool returned that the model was given (an MCP tool's, REQ-MCP-021), each as its summary "
        "and handle: a client shows each label before the content, as the live `toolEnd` summary did"))


Block = Annotated[TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock, Field(discriminator="type")]


class MessageView(Wire):
    """One persisted message of the history (REQ-PROTO-006)."""

    seq: int = Field(description="the seq of the `message` event that announced it")
    message_id: str
    role: Literal["user", "assistant"]
    content: list[Block]
    created_at: float = Field(description="seconds since the Unix epoch")
    tag: WireTag | None = None


class SandboxInfo(Wire):
    """What the kernel sandbox can do on this machine (REQ-BASH-009)."""

    available: bool
    landlock_abi: int | None = Field(default=None, description="absent when the kernel has no Landlock")
    reason: str | None = None
    missing: list[str]


class ContextUsage(Wire):
    """How full the context window is (REQ-BED-012)."""

    used_tokens: int
    context_window: int
    fraction: float


class TokenCounts(Wire):
    """Billed tokens (issue 16): cache writes and reads are counted apart from plain input."""

    input_tokens: int
    output_tokens: int
    cache_write_tokens: int
    cache_read_tokens: int
    requests: int | None = Field(default=None, description="how many requests the counts sum up")


class CostEstimate(Wire):
    usd: float
    is_estimate: bool
    model: str
    note: str


class TokenUsage(Wire):
    """What the requests cost: the latest one, and the conversation's total (its sub-agents included)."""

    request: TokenCounts | None = None
    total: TokenCounts
    sub_agents: TokenCounts
    estimated_cost: CostEstimate | None = Field(default=None, description="absent for a model without a price")


class AlwaysAllowScope(Wire):
    """One scope Always Allow can add (REQ-PERM-020): a bash command prefix, or the whole tool."""

    kind: Literal["prefix", "tool"]
    rule: str = Field(
        description="`git status *` (prefixes, `; `-separated when several, then the option kinds it also covers: "
        "`sort * (with sort --output)`) or the tool name"
    )
    label: str = Field(description="the rule with its tool: `bash: git status *`, or `bash`")


class AlwaysAllowRule(AlwaysAllowScope):
    """A rule of a conversation's always-allow list (REQ-PERM-003/021)."""

    tool_name: str


class PendingApproval(Wire):
    """An approval waiting for the user (the same fields as the `approvalRequested` event)."""

    tool_use_id: str
    tool_name: str
    description: str
    arguments: dict[str, Any]
    diff: str | None = Field(default=None, description="the unified diff a patch would make")
    scopes: list[AlwaysAllowScope] = Field(
        default_factory=list, description="what Always Allow may add, narrowest first; the whole tool last"
    )


class PendingUpgrade(Wire):
    tool_use_id: str
    reason: str


class AgentRef(Wire):
    conversation_id: str
    task: str


class SubAgentView(Wire):
    conversation_id: str
    task: str
    status: StatusKind


class StyleSuggestion(Wire):
    """A hint that the style works best in the other mode: never a mode change (REQ-LAYER-006)."""

    mode: Literal["restricted", "unrestricted"]
    command: Literal["/execute", "/plan"]
    text: str
