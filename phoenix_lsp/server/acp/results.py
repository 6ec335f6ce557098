"""A tool call's result as the model got it, read when the call's one final update is sent (REQ-ACP-028): the
runtime tells the adapter a call ended (``toolEnd``, with a short summary) just before the conversation stores its
whole output, so the update is made at its turn to be sent (``Later``), from the conversation's state then."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from ...core.state import ConversationState
from ...core.values import ToolResult

#: how many of the latest messages a call's result is looked for in
RECENT_MESSAGES = 8


@dataclass(frozen=True)
class Later:
    """An update made when its turn to be sent comes (``client.update``), from what is known then: a call's final
    update, whose output the conversation holds only once its ``toolEnd`` event has been told."""

    make: Callable[[], Any]


def result_of(state: ConversationState, call_id: str) -> ToolResult | None:
    """A call's result as the model got it: in the batch still being worked on, or in the latest messages."""
    batch = getattr(state.status, "batch", None)
    for result in getattr(batch, "results", ()):
        if result.tool_use_id == call_id:
            return cast(ToolResult, result)
    for message in reversed(state.history[-RECENT_MESSAGES:]):
        for result in message.tool_results():
            if result.tool_use_id == call_id:
                return result
    return None
