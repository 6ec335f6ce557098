"""The rule for catching up after a gap in event numbers (REQ-PROTO-007, REQ-PROTO-020), for Python clients.

Each conversation numbers its ``phoenix/event`` notifications 1, 2, 3... without a hole, in the order they are
sent. A client remembers the last number it processed; an event numbered beyond the next one means some were
missed, and the client restores its view with ``phoenix/getConversation`` and ``afterSeq`` set to that last
number. Before the first event nothing was processed, so there is nothing to catch up from.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EventSeq"]


@dataclass
class EventSeq:
    """The last event number processed for one conversation (0: none yet)."""

    last: int = 0

    def arrive(self, seq: int) -> int | None:
        """Record event ``seq``. Returns the ``afterSeq`` to catch up from when events were missed before it,
        else None. An event that comes again or late never moves ``last`` back."""
        missed = self.last if self.last and seq > self.last + 1 else None
        self.last = max(self.last, seq)
        return missed
