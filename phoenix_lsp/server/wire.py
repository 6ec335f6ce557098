"""Conversions between the core's values and JSON: Anthropic request messages and protocol views."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from typing import Any

from ..core.state import AwaitingApproval, AwaitingUpgrade, ConversationState
from ..core.values import Block, Image, Message, Text, ToolResult, ToolUse


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


def block_to_wire(block: Block) -> dict[str, Any]:
    """A content block for phoenix/event and phoenix/getConversation (images as references)."""
    if isinstance(block, Text):
        return {"type": "text", "text": block.text}
    if isinstance(block, Image):
        return {"type": "image", "imageId": block.image_id, "mediaType": block.media_type}
    if isinstance(block, ToolUse):
        return {"type": "toolUse", "toolUseId": block.id, "toolName": block.name, "arguments": dict(block.input)}
    assert isinstance(block, ToolResult)
    return {"type": "toolResult", "toolUseId": block.tool_use_id, "content": block.content, "isError": block.is_error}


def message_to_wire(message: Message, seq: int, index: int, time: float) -> dict[str, Any]:
    out: dict[str, Any] = {
        "seq": seq,
        "messageId": str(index),
        "role": message.role,
        "content": [block_to_wire(b) for b in message.content],
        "createdAt": time,
    }
    if message.tag:
        out["tag"] = message.tag
    return out


def pending_request(state: ConversationState, describe: Callable[[str], str]) -> dict[str, Any]:
    """The open approval or upgrade request of a conversation, as getConversation shows it."""
    status = state.status
    if isinstance(status, AwaitingApproval):
        call = status.batch.current
        return {
            "pendingApproval": {
                "approvalId": status.approval_id,
                "toolUseId": call.id,
                "toolName": call.name,
                "description": describe(call.name),
                "arguments": dict(call.input),
            }
        }
    if isinstance(status, AwaitingUpgrade):
        call = status.batch.current
        return {"pendingUpgrade": {"requestId": call.id, "toolUseId": call.id, "reason": status.reason}}
    return {}
