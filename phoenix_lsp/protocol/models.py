"""Wire models of the phoenix/* methods (specs/protocol.md): camelCase JSON, validated with pydantic.

Params models ignore unknown fields and accept ``[]`` where an empty object is expected (Neovim sends an
empty Lua table so). A validation failure becomes JSON-RPC -32602 naming the field (see ``parse``).
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from ..core.values import Decision, Mode, Policy, Style


class Wire(BaseModel):
    # defer_build: schemas are built on first use, not at import (server start-up budget)
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True, defer_build=True
    )


class ConversationRef(Wire):
    conversation_id: str = Field(min_length=1, max_length=200)


class ImageIn(Wire):
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
    prompt_cache: Literal["on", "off"] | bool | None = None  # issue 16; PHOENIX_PROMPT_CACHE
    prompt_cache_ttl: Literal["5m", "1h"] | None = None  # PHOENIX_PROMPT_CACHE_TTL
    model_prices: dict[str, ModelPriceIn] | None = None  # PHOENIX_MODEL_PRICES (JSON)

    @field_validator("anthropic_api_key")
    @classmethod
    def _no_blank_key(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None


P = TypeVar("P", bound=Wire)


class InvalidParams(Exception):
    """Params failed validation; ``field`` is the JSON path of the first problem."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "params"


def parse(model: type[P], params: Any) -> P:
    """Validate raw params (a dict, ``None`` or Neovim's ``[]``) into ``model`` or raise InvalidParams."""
    if params is None or params == []:
        params = {}
    if not isinstance(params, dict):
        raise InvalidParams("params", f"Invalid params: expected an object, got {type(params).__name__}.")
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc = tuple(to_camel(p) if isinstance(p, str) else p for p in first["loc"])
        field = _path(loc)
        raise InvalidParams(field, f"Invalid params: '{field}': {first['msg']}.") from None


def dump(model: BaseModel) -> dict[str, Any]:
    """A model as camelCase JSON-ready dict (pygls would otherwise serialise ``__dict__``)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)
