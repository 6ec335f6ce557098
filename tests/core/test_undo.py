"""Undo afterwards is the core's to allow (REQ-BASH-041): an accepted change set is taken back in any mode, only while
no turn runs and no other undo does; until its outcome arrives no turn starts; the outcome tells the model what was
restored and what was kept; a restart ends an undo in progress and says so."""

from __future__ import annotations

from dataclasses import replace

import pytest

from phoenix_lsp.core import texts, transition
from phoenix_lsp.core.effects import Audit, Reject, RequestLlm, RestoreChanges
from phoenix_lsp.core.events import ChangesUndone, Restore, TriggerContinuation, UndoChanges, UserMessage
from phoenix_lsp.core.state import AwaitingLlm, Idle
from phoenix_lsp.core.values import Mode, Text

from .test_machine import fresh, of, reply, run, unrestricted

pytestmark = pytest.mark.req("REQ-BASH-041")


def notes_of(state: object) -> list[str]:
    return [b.text for m in state.history for b in m.content if isinstance(b, Text)]  # type: ignore[attr-defined]


@pytest.mark.parametrize("start", [fresh, unrestricted], ids=["restricted", "unrestricted"])
def test_an_undo_is_allowed_at_rest_in_any_mode(start: object) -> None:
    state = start()  # type: ignore[operator]
    new, effects = transition(state, UndoChanges("0123456789ab"))
    assert of(effects, RestoreChanges) == [RestoreChanges("0123456789ab")]
    assert new.undoing == "0123456789ab" and isinstance(new.status, Idle)
    assert of(effects, Audit)[0].action == "undoRequested"


def test_an_undo_is_refused_while_a_turn_runs() -> None:
    state, _ = run(unrestricted(), UserMessage("go"))
    assert isinstance(state.status, AwaitingLlm)
    new, effects = transition(state, UndoChanges("0123456789ab"))
    assert new is state and [e.code for e in of(effects, Reject)] == ["busy"]
    assert not of(effects, RestoreChanges)


def test_one_undo_at_a_time_and_no_turn_meanwhile() -> None:
    state, _ = run(unrestricted(), UndoChanges("0123456789ab"))
    for event in (UndoChanges("ba9876543210"), UserMessage("next"), TriggerContinuation()):
        new, effects = transition(state, event)
        assert new is state and [e.code for e in of(effects, Reject)] == ["busy"], event
        assert "0123456789ab" in of(effects, Reject)[0].message
    # a mode command is no turn: it is taken
    new, _ = transition(state, UserMessage("/plan"))
    assert new.mode is Mode.RESTRICTED and new.undoing == "0123456789ab"


def test_the_outcome_tells_the_model_and_frees_the_conversation() -> None:
    state, _ = run(unrestricted(), UndoChanges("0123456789ab"))
    state, effects = transition(state, ChangesUndone("0123456789ab", "bash: sed", ("a.txt", "b.bin"), ("c.txt",)))
    assert state.undoing is None and isinstance(state.status, Idle)
    [note] = [n for n in notes_of(state) if "undid" in n]
    assert "change set 0123456789ab (bash: sed)" in note and "a.txt, b.bin" in note and "c.txt" in note
    assert of(effects, Audit)[0].detail == {"changeSet": "0123456789ab", "restored": 2, "refused": 1}
    state, effects = transition(state, UserMessage("next"))
    assert of(effects, RequestLlm)


def test_an_outcome_that_restored_nothing_says_nothing_to_the_model() -> None:
    state, _ = run(unrestricted(), UndoChanges("0123456789ab"))
    before = len(state.history)
    state, effects = transition(state, ChangesUndone("0123456789ab", failed="a kept copy was altered"))
    assert state.undoing is None and len(state.history) == before
    assert of(effects, Audit)[0].detail["failed"] == "a kept copy was altered"


def test_a_stale_outcome_changes_nothing() -> None:
    state, _ = run(unrestricted(), UndoChanges("0123456789ab"))
    new, effects = transition(state, ChangesUndone("ba9876543210", restored=("a.txt",)))
    assert new is state and effects == ()
    idle = unrestricted()
    assert transition(idle, ChangesUndone("0123456789ab", restored=("a.txt",))) == (idle, ())


def test_many_paths_are_counted_not_all_named() -> None:
    state, _ = run(unrestricted(), UndoChanges("0123456789ab"))
    paths = tuple(f"f{i}.txt" for i in range(40))
    state, _ = transition(state, ChangesUndone("0123456789ab", "x", paths))
    [note] = [n for n in notes_of(state) if "undid" in n]
    assert "f29.txt" in note and "f30.txt" not in note and "and 10 more" in note


def test_a_restart_ends_an_undo_in_progress_and_says_so() -> None:
    state, _ = run(unrestricted(), UndoChanges("0123456789ab"))
    state, _ = transition(state, Restore())
    assert state.undoing is None
    assert texts.UNDO_INTERRUPTED.format(change_set="0123456789ab") in notes_of(state)
    state, effects = transition(state, UserMessage("next"))
    assert of(effects, RequestLlm)


def test_a_note_waits_for_a_running_turn() -> None:
    """An outcome that arrives while a turn runs (the undo was allowed before it) is told with the next results."""
    state, _ = run(unrestricted(), UndoChanges("0123456789ab"))
    state = replace(state, status=AwaitingLlm(1))
    state, _ = transition(state, ChangesUndone("0123456789ab", "x", ("a.txt",)))
    assert state.undoing is None and any("undid" in n for n in state.notes)
    state, _ = transition(state, reply(1, text="ok"))
    assert any("undid" in n for n in notes_of(state))
