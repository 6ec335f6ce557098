"""Params of the phoenix/* requests (client -> server) and the initialization options."""

from __future__ import annotations

from typing import Literal

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
    tool_use_id: str | None = None


class RespondToApprovalParams(ConversationRef):
    tool_use_id: str = Field(min_length=1)
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
    tool_name: str = Field(min_length=1)
    rule: str | None = Field(
        default=None, max_length=2000, description="one rule of the tool; absent = every rule of the tool"
    )


class ListModelsParams(Wire):
    refresh: bool = Field(default=False, description="ask the API again instead of the list kept from the last call")


class SetModelParams(ConversationRef):
    model: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@/\[\]-]*$")


class GetAuditLogParams(Wire):
    conversation_id: str | None = None
    after_id: int = Field(default=0, ge=0)
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
