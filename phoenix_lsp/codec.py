"""JSON encoding of the core's values for the store and the wire, with pydantic TypeAdapters.

The core stays free of pydantic; this module is the one place that knows how its frozen dataclasses look
as JSON. Decoding validates, so a damaged database row is reported instead of silently half-loaded.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from pydantic import TypeAdapter

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
    state = _state_adapter().validate_json(text)
    return replace(state, history=history)


def encode_message(message: Message) -> str:
    return _message_adapter().dump_json(message).decode()


def decode_message(text: str) -> Message:
    return _message_adapter().validate_json(text)
