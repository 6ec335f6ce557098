"""The transition table declares, for every status and event it takes, the statuses the handler may lead to
(REQ-CORE-003). Every transition the core's tests make is checked against it: the table rows of
test_transitions.py through ``check`` and the random event sequences of test_properties.py through
``check_step`` (``assert_declared``). Here: the declarations themselves; tests/test_transition_table.py
checks the spec that shows them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import get_args

import pytest

from phoenix_lsp.core import machine
from phoenix_lsp.core.events import Event, ToolDone, UserMessage
from phoenix_lsp.core.state import RESTING, ConversationState, Error, Idle, Status
from phoenix_lsp.core.table import TABLE, kind_of


def assert_declared(before: ConversationState, event: Event, after: ConversationState) -> None:
    """``event`` took ``before`` to ``after`` as the table declares: to one of the entry's statuses, or (an event
    the status does not take) nowhere."""
    entry = TABLE[type(before.status)].get(type(event))
    if entry is None:
        assert after is before, f"{type(event).__name__} is not in the table for {before.status.kind}"
        return
    assert type(after.status) in entry.to, (
        f"{type(event).__name__} took {before.status.kind} to {after.status.kind}, which the table does not "
        f"declare ({', '.join(sorted(kind_of(s) for s in entry.to))})")


@pytest.mark.req("REQ-CORE-003")
def test_every_status_has_a_row_and_every_declared_next_status_is_a_status() -> None:
    statuses = set(get_args(Status))
    assert set(TABLE) == statuses
    for status, entries in TABLE.items():
        for event, entry in entries.items():
            assert entry.to, f"{status.__name__} / {event.__name__} leads nowhere"
            assert entry.to <= statuses, f"{status.__name__} / {event.__name__}: {entry.to - statuses}"


def _reachable(start: type) -> set[type]:
    seen, todo = {start}, deque([start])
    while todo:
        for entry in TABLE[todo.popleft()].values():
            for status in entry.to - seen:
                seen.add(status)
                todo.append(status)
    return seen


@pytest.mark.req("REQ-CORE-003")
def test_every_status_is_reachable_from_a_new_conversation_and_every_one_can_come_to_rest() -> None:
    """A declared status no transition reaches would be a row nobody tests; one with no way to a resting status
    would trap a conversation."""
    assert _reachable(Idle) == set(TABLE)
    for status in TABLE:
        assert _reachable(status) & set(RESTING), f"{status.__name__} can never come to rest"


@pytest.mark.req("REQ-CORE-003")
def test_a_transition_the_table_does_not_declare_is_caught() -> None:
    """The check the other tests run: a handler that leads somewhere undeclared fails it."""
    state = machine.new_conversation("c", model="m", working_directory="/w", sandbox=True)
    event = UserMessage("hi")
    after, _ = machine.transition(state, event)
    assert_declared(state, event, after)  # idle -> awaiting_llm, declared
    with pytest.raises(AssertionError, match="took idle to error, which the table does not declare"):
        assert_declared(state, event, replace(after, status=Error("boom")))
    with pytest.raises(AssertionError, match="not in the table for idle"):
        assert_declared(state, ToolDone("t1", "x"), after)
