"""Params of the phoenix/* requests (client -> server) and the initialization options."""

from __future__ import annotations

from pydantic import Field, field_validator

from ..core.values import Decision, Mode, Policy, Style
from .base import Wire


class ConversationRef(Wire):
    """Names one conversation."""

    conversation_id: str = Field(min_length=1, max_length=200)


class ImageIn(Wire):
    """An image pasted or dropped into a message."""

    media_type: str = Field(min_length=1, max_length=100)
    data: str = Field(min_length=1, description="base64")


class NewConversationParams(Wire):
    working_directory: str | None = None
    model: str | None = Field(default=None, min_length=1, max_length=200)
    style: Style = Style.CHAT
    approval_policy: Policy = Policy.INTERACTIVE
    continue_from: str | None = None
    seed_with_summary: bool = True


class ListConversationsParams(Wire):
    include_sub_agents: bool = False


class GetConversationParams(ConversationRef):
    after_seq: int | None = Field(default=None, ge=0)
    limit: int = Field(default=100, ge=1, le=1000)


class SendMessageParams(ConversationRef):
    text: str = Field(max_length=1_000_000)
    images: list[ImageIn] = Field(default_factory=list, max_length=20)


class SetModeParams(ConversationRef):
    mode: Mode


class RespondToModeUpgradeParams(ConversationRef):
    approve: bool
    request_id: str | None = None


class RespondToApprovalParams(ConversationRef):
    approval_id: str = Field(min_length=1)
    decision: Decision


class SetApprovalPolicyParams(ConversationRef):
    policy: Policy


class SetStyleParams(ConversationRef):
    style: Style


class RevokeAlwaysAllowParams(ConversationRef):
    tool_name: str = Field(min_length=1)


class GetAuditLogParams(Wire):
    conversation_id: str | None = None
    after_id: int = Field(default=0, ge=0)
    limit: int = Field(default=100, ge=1, le=1000)


class InitializationOptions(Wire):
    """What a client may set in ``initializationOptions``; bad values are reported and replaced by defaults."""

    model: str | None = None
    data_dir: str | None = None
    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None
    retry_base_ms: int | None = Field(default=None, ge=0, le=60_000)
    bash_timeout_s: float | None = Field(default=None, gt=0, le=3600)

    @field_validator("anthropic_api_key")
    @classmethod
    def _no_blank_key(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None
