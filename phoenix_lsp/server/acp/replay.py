"""A conversation's history as the updates a client shows on ``session/load`` (REQ-ACP-012)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import acp

from ...core.values import Message, ToolResult, ToolUse
from .updates import start, status, text_content


def history(history: tuple[Message, ...], root: str) -> Iterator[Any]:
    """The history as the updates a client shows (REQ-ACP-012): the user's messages, the agent's, and each tool
    call with its arguments, final status and output. Notes and commands the model never sees are left out."""
    results: dict[str, ToolResult] = {}
    for message in history:
        for result in message.tool_results():
            results[result.tool_use_id] = result
    for message in history:
        if message.tag in ("note", "command"):
            continue
        text = message.text()
        if message.role == "user" and text.strip():
            yield acp.update_user_message_text(text)
        elif message.role == "assistant":
            if text:
                yield acp.update_agent_message_text(text)
            for call in message.tool_uses():
                yield from _replayed_call(call, results.get(call.id), root)


def _replayed_call(call: ToolUse, result: ToolResult | None, root: str) -> Iterator[Any]:
    yield start(call.id, call.name, call.input, root)
    if result is not None:
        yield status(call.id, "failed" if result.is_error else "completed", text_content(result.content))
