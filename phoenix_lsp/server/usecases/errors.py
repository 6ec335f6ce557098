"""What a use case raises: the input is invalid (which field, why), or the core refused the user's event."""

from __future__ import annotations

from ...core.effects import Reject


class UseCaseError(Exception):
    """A use case did not run; nothing of the user's action was kept."""


class Invalid(UseCaseError):
    """``field`` of the input is invalid; ``reason`` says why and what to do (without the field's name, which
    each adapter spells in its own protocol's way)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class Refused(UseCaseError):
    """The core refused the event (``reject``), the conversation being in ``status``."""

    def __init__(self, reject: Reject, status: str) -> None:
        super().__init__(reject.message)
        self.reject = reject
        self.status = status
