"""The status words of a conversation (``idle``, ``awaiting_llm``, ...) as Python clients read them.

The words are the core's: each status of ``core.state`` names itself (``kind``), ``StatusKind`` lists those
names for the wire, and ``RESTING_KINDS`` names the resting ones. Nothing here spells a status again; it only
gives clients (the terminal client, the plain-client adapter) the two groups they act on.
tests/protocol/test_statuses.py pins the words to the core's classes and to the wire schema, and fails on a
new copy of them anywhere in the package.
"""

from __future__ import annotations

from typing import get_args

from ..core.state import RESTING_KINDS, StatusKind

__all__ = ["RESTING", "STATUSES", "WORKING", "StatusKind", "is_resting"]

#: Every status, in the core's order.
STATUSES: tuple[StatusKind, ...] = get_args(StatusKind)
#: Nothing runs and nothing waits: the turn is over and the user may write (REQ-BED-002).
RESTING: frozenset[StatusKind] = RESTING_KINDS
#: The agent works on a turn or waits for an answer: a new message is refused as busy.
WORKING: frozenset[StatusKind] = frozenset(STATUSES) - RESTING


def is_resting(status: str) -> bool:
    """True when a conversation in ``status`` waits for the user (its turn is over)."""
    return status in RESTING
