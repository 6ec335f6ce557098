"""Conversions between the core's values and JSON: Anthropic request messages and protocol views."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from typing import Any

from ..core.rules import AllowRule
from ..core.state import AwaitingUpgrade, ConversationState
from ..core.values import Block, Image, Message, Text, ToolUse
from ..protocol import views


def block_to_api(block: Block, image: Callable[[str], tuple[bytes, str]]) -> dict[str, Any] | None:
    """One content block in the Messages API format (None for blocks the API would refuse, e.g. empty text)."""
    if isinstance(block, Text):
        return {"type": "text", "text": block.text} if block.text.strip() else None
    if isinstance(block, Image):
        data, media_type = image(block.image_id)
        source = {"type": "base64", "media_type": media_type, "data": base64.b64encode(data).decode()}
        return {"type": "image", "source": source}
    if isinstance(block, ToolUse):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)}
    return {
        "type": "tool_result",
        "tool_use_id": block.tool_use_id,
        "content": block.content or "(no output)",
        "is_error": block.is_error,
    }


def history_to_api(
    history: Iterable[Message], image: Callable[[str], tuple[bytes, str]], instruction: str | None = None
) -> list[dict[str, Any]]:
    """The history as API messages: consecutive messages of one role are merged (synthetic notes and
    commands sit between turns), tool results stay first in their message, and an optional final
    instruction is appended as user text."""
    out: list[dict[str, Any]] = []
    for message in history:
        blocks = [b for b in (block_to_api(x, image) for x in message.content) if b is not None]
        if not blocks:
            continue
        if out and out[-1]["role"] == message.role:
            merged = out[-1]["content"] + blocks
            merged.sort(key=lambda b: 0 if b["type"] == "tool_result" else 1)  # results first (API rule)
            out[-1]["content"] = merged
        else:
            out.append({"role": message.role, "content": blocks})
    if instruction:
        if out and out[-1]["role"] == "user":
            out[-1]["content"] = [*out[-1]["content"], {"type": "text", "text": instruction}]
        else:
            out.append({"role": "user", "content": [{"type": "text", "text": instruction}]})
    return out


def block_to_wire(block: Block) -> views.Block:
    """A content block for phoenix/event and phoenix/getConversation (images as references)."""
    if isinstance(block, Text):
        return views.TextBlock(text=block.text)
    if isinstance(block, Image):
        return views.ImageBlock(image_id=block.image_id, media_type=block.media_type)
    if isinstance(block, ToolUse):
        return views.ToolUseBlock(tool_use_id=block.id, tool_name=block.name, arguments=dict(block.input))
    return views.ToolResultBlock(tool_use_id=block.tool_use_id, content=block.content, is_error=block.is_error)


def message_to_wire(message: Message, seq: int, index: int, time: float) -> views.MessageView:
    return views.MessageView(
        seq=seq,
        message_id=str(index),
        role=message.role,
        content=[block_to_wire(b) for b in message.content],
        created_at=time,
        tag=message.tag,
    )


def pending_upgrade(state: ConversationState) -> views.PendingUpgrade | None:
    """The open upgrade request of a conversation, as getConversation shows it."""
    status = state.status
    if isinstance(status, AwaitingUpgrade):
        call = status.batch.current
        return views.PendingUpgrade(tool_use_id=call.id, reason=status.reason)
    return None


def scope_to_wire(rule: AllowRule) -> views.AlwaysAllowScope:
    """A scope Always Allow offers (REQ-PERM-020)."""
    return views.AlwaysAllowScope(kind="tool" if rule.whole_tool else "prefix", rule=rule.rule, label=rule.label)


def rule_to_wire(rule: AllowRule) -> views.AlwaysAllowRule:
    """One rule of the always-allow list (REQ-PERM-021)."""
    return views.AlwaysAllowRule(
        tool_name=rule.tool, kind="tool" if rule.whole_tool else "prefix", rule=rule.rule, label=rule.label
    )
