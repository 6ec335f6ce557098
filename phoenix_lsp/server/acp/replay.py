"""A conversation's history as the updates a client shows on ``session/load`` (REQ-ACP-012), its images with it
(REQ-ACP-031): each as the live call named it (``image (PNG, 12 KB)``) and as an image content block, after the
one image gate (``server/usecases/images.py``, which ``agent.py`` runs before the replay)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import acp

from ...core.values import Image, Message, ToolResult, ToolUse
from ..usecases.images import Replayed
from .updates import start, status, text_content


def history(history: tuple[Message, ...], root: str, images: Mapping[str, Replayed]) -> Iterator[Any]:
    """The history as the updates a client shows (REQ-ACP-012): the user's messages (their images too), the
    agent's, and each tool call with its arguments, final status and output, with the images the model got.
    Notes and commands the model never sees are left out. ``images``: the history's, through the gate, by id."""
    results: dict[str, ToolResult] = {}
    for message in history:
        for result in message.tool_results():
            results[result.tool_use_id] = result
    for message in history:
        if message.tag in ("note", "command"):
            continue
        text = message.text()
        if message.role == "user":
            if text.strip():
                yield acp.update_user_message_text(text)
            for block in message.content:
                if isinstance(block, Image):
                    yield from (acp.update_user_message(part) for part in _picture(images.get(block.image_id)))
        elif message.role == "assistant":
            if text:
                yield acp.update_agent_message_text(text)
            for call in message.tool_uses():
                yield from _replayed_call(call, results.get(call.id), root, images)


def _picture(replayed: Replayed | None) -> list[Any]:
    """An image as content blocks: the image through the gate, or its label and why it is not shown."""
    if replayed is None:
        return [acp.text_block("image (not shown: the store no longer holds it)")]
    if replayed.image is None:
        return [acp.text_block(f"{replayed.label} ({replayed.missing})")]
    return [acp.image_block(replayed.image.encoded(), replayed.image.media_type)]


def _replayed_call(call: ToolUse, result: ToolResult | None, root: str,
                   images: Mapping[str, Replayed]) -> Iterator[Any]:
    yield start(call.id, call.name, call.input, root)
    if result is not None:
        shown = [images.get(image.image_id) for image in result.images]
        named = [r.label if r is not None else "image" for r in shown]  # as the live call named them
        content = text_content("\n".join([*named, result.content]))
        content += [acp.tool_content(part) for r in shown for part in _picture(r)]
        yield status(call.id, "failed" if result.is_error else "completed", content)
