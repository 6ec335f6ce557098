"""Errors raised by the store.

Every error carries a message that says what happened, why, and what the caller can do next. Errors
that mean "no such thing" also derive from ``KeyError`` and errors that mean "bad argument" from
``ValueError``, so callers may catch either the precise class or the builtin family.
"""

from __future__ import annotations


class StoreError(Exception):
    """Base class of every error the store raises on purpose."""

    def __str__(self) -> str:
        # KeyError.__str__ would wrap the message in quotes; every subclass wants the plain message.
        return str(self.args[0]) if self.args else self.__class__.__name__


class UnknownConversationError(StoreError, KeyError):
    """The conversation id names no conversation in this database."""

    def __init__(self, conversation_id: str, role: str = "conversation") -> None:
        super().__init__(
            f"{role} {conversation_id!r} does not exist in the store: it was never created here "
            "(or belongs to another data directory); call create_conversation first or list the known "
            "ids with conversation_ids()"
        )
        self.conversation_id = conversation_id


class DuplicateConversationError(StoreError, ValueError):
    """A conversation with this id already exists."""

    def __init__(self, conversation_id: str) -> None:
        super().__init__(
            f"conversation {conversation_id!r} already exists in the store; conversation ids must be unique "
            "- generate a fresh id, or use save_state/append_messages to update the existing conversation"
        )
        self.conversation_id = conversation_id


class MessageIndexError(StoreError, ValueError):
    """Message indexes passed to append_messages are not contiguous with what is stored."""


class EventSeqError(StoreError, ValueError):
    """An event sequence number does not increase."""


class ImageNotFoundError(StoreError, KeyError):
    """No image with this id is stored."""

    def __init__(self, image_id: str) -> None:
        super().__init__(
            f"image {image_id!r} is not in the store: images are stored by put_image, which returns the id; "
            "the reference may come from another data directory or a damaged message"
        )
        self.image_id = image_id


class SecretLeakError(StoreError, ValueError):
    """A text about to be written contains a secret (for example the Anthropic API key)."""


class SchemaError(StoreError):
    """The database schema cannot be used by this version of phoenix-lsp."""


class InvalidRecordError(StoreError, ValueError):
    """A record passed to the store breaks one of its rules (empty id, unknown actor, bad limit...)."""


class DamagedRowError(StoreError, ValueError):
    """A conversation's stored row cannot be read back as the server wrote it: over the size any row of its kind
    has, nested too deep, or no JSON (the store's file was changed outside phoenix-lsp). Its message says which
    conversation and row, what is wrong and what to do; ``conversation_id`` names the conversation."""

    def __init__(self, conversation_id: str, row: str, why: str) -> None:
        super().__init__(
            f"The conversation {conversation_id[:80]!r} could not be read back from the store: {row}: {why}. The "
            "server never writes such a row, so the database file was changed outside phoenix-lsp (another "
            "program, or a damaged disk); nothing was changed. Start a new conversation (the others are "
            "intact), or restore the data directory from a copy"
        )
        self.conversation_id = conversation_id
