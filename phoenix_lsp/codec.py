"""JSON encoding of the core's values for the store and the wire, with pydantic TypeAdapters.

The core stays free of pydantic; this module is the one place that knows how its frozen dataclasses look
as JSON. Decoding validates, so a damaged database row is reported instead of silently half-loaded.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from typing import Any

from pydantic import TypeAdapter

from . import limits
from .core.state import ConversationState
from .core.values import Message


@cache
def _state_adapter() -> TypeAdapter[ConversationState]:
    return TypeAdapter(ConversationState)


@cache
def _message_adapter() -> TypeAdapter[Message]:
    return TypeAdapter(Message)


def encode_state(state: ConversationState) -> str:
    """The state without its history (messages are stored one row each)."""
    return _state_adapter().dump_json(replace(state, history=())).decode()


def decode_state(text: str, history: tuple[Message, ...]) -> ConversationState:
    """A stored state, decoded within the bounds of one (``limits.STORED_STATE``, REQ-SEC-044): text from the
    store's file, which another program may have changed, raises ``limits.Refused`` (a ValueError) over them."""
    state = _state_adapter().validate_python(_upgrade_state(limits.decode(text, limits.STORED_STATE)), strict=False)
    return replace(state, history=history)


def decode_stored_message(text: str) -> Message:
    """A message as the store keeps it (``{"message": ...}``), decoded within the bounds of one
    (``limits.STORED_MESSAGE``, REQ-SEC-044): ``limits.Refused`` (a ValueError) over them."""
    row = limits.decode(text, limits.STORED_MESSAGE)
    if not isinstance(row, dict) or "message" not in row:
        raise ValueError("it is not a stored message (a JSON object with a member 'message')")
    return decode_message(json.dumps(row["message"]))  # as the wire's: JSON mode


def _upgrade_state(data: Any) -> Any:
    """States stored by older versions, read as today's.

    - Before rules were values, ``always_allow`` held plain tool names: whole-tool rules.
    - Before a tool call's id had one name, a pending approval kept it as ``approval_id``.
    """
    if isinstance(data, dict) and isinstance(data.get("always_allow"), list):
        data["always_allow"] = [
            {"tool": r, "prefixes": []} if isinstance(r, str) else r for r in data["always_allow"]
        ]
    status = data.get("status") if isinstance(data, dict) else None
    if isinstance(status, dict) and "approval_id" in status and "tool_use_id" not in status:
        status["tool_use_id"] = status.pop("approval_id")
    return data


def encode_message(message: Message) -> str:
    return _message_adapter().dump_json(message).decode()


def decode_message(text: str) -> Message:
    return _message_adapter().validate_json(text)
