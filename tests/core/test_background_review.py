"""An ended background command's changes reviewed at rest (REQ-BASH-044) and told when discarded (REQ-BASH-046):
the core allows the review only while no turn runs, one at a time; its question is decided by the patch tool's
policy exactly as during a turn (interactive asks, auto goes ahead, Restricted refuses); no turn starts until it
is over; a cancel answers no; the outcome and a discard are told to the model in the history."""

from __future__ import annotations

from dataclasses import replace

import pytest

from phoenix_lsp.core import texts, transition
from phoenix_lsp.core.effects import AnswerHostCall, AskApproval, Reject
from phoenix_lsp.core.events import (
    ApprovalAnswer,
    BackgroundReviewed,
    Cancel,
    ChangesDiscarded,
    HostCall,
    Restore,
    ReviewBackground,
    UndoChanges,
    UserMessage,
)
from phoenix_lsp.core.notifications import ApprovalResolved, ErrorReported
from phoenix_lsp.core.state import AwaitingLlm, Idle
from phoenix_lsp.core.tools import PATCH, ToolKind
from phoenix_lsp.core.values import Decision, Policy, Text, ToolUse

from .test_machine import fresh, of, run, unrestricted

JOB = "background-1234-ab"
QUESTION = ToolUse(f"{JOB}.review", PATCH, {"command": "make gen", "files": ["a.txt"]})


def notes_of(state: object) -> list[str]:
    return [b.text for m in state.history for b in m.content if isinstance(b, Text)]  # type: ignore[attr-defined]


def asked(start: object = unrestricted) -> object:
    state, _ = run(start(), ReviewBackground(JOB, "make gen"))  # type: ignore[operator]
    return state


@pytest.mark.req("REQ-BASH-044")
def test_at_rest_the_review_is_allowed_and_its_question_asked_under_the_interactive_policy() -> None:
    state = asked()
    assert state.reviewing == JOB and isinstance(state.status, Idle)  # type: ignore[attr-defined]
    new, effects = transition(state, HostCall(JOB, QUESTION, ToolKind.WRITE))  # type: ignore[arg-type]
    assert [a.call for a in of(effects, AskApproval)] == [QUESTION]
    assert new.review_question == QUESTION and not of(effects, AnswerHostCall)
    # the user's yes lets it land; a no does not
    yes, effects = transition(new, ApprovalAnswer(QUESTION.id, Decision.ALLOW))
    assert of(effects, AnswerHostCall) == [AnswerHostCall(QUESTION.id, True)] and yes.review_question is None
    _, effects = transition(new, ApprovalAnswer(QUESTION.id, Decision.DENY))
    assert [a.allowed for a in of(effects, AnswerHostCall)] == [False]
    assert of(effects, ApprovalResolved)[0].decision is Decision.DENY


@pytest.mark.req("REQ-BASH-044")
def test_auto_lands_without_asking_and_restricted_refuses() -> None:
    auto = asked(lambda: replace(unrestricted(), policy=Policy.AUTO))
    _, effects = transition(auto, HostCall(JOB, QUESTION, ToolKind.WRITE))  # type: ignore[arg-type]
    assert of(effects, AnswerHostCall) == [AnswerHostCall(QUESTION.id, True)] and not of(effects, AskApproval)
    restricted = asked(fresh)
    _, effects = transition(restricted, HostCall(JOB, QUESTION, ToolKind.WRITE))  # type: ignore[arg-type]
    assert [(a.allowed, a.by) for a in of(effects, AnswerHostCall)] == [(False, "mode")]


@pytest.mark.req("REQ-BASH-044")
def test_an_answer_given_after_the_mode_went_restricted_is_refused_by_the_mode() -> None:
    state, _ = run(asked(), HostCall(JOB, QUESTION, ToolKind.WRITE), UserMessage("/plan"))  # type: ignore[arg-type]
    _, effects = transition(state, ApprovalAnswer(QUESTION.id, Decision.ALLOW))
    assert [(a.allowed, a.by) for a in of(effects, AnswerHostCall)] == [(False, "mode")]


@pytest.mark.req("REQ-BASH-044")
def test_no_review_while_a_turn_runs_and_no_turn_while_it_is_under_way() -> None:
    busy, _ = run(unrestricted(), UserMessage("go"))
    assert isinstance(busy.status, AwaitingLlm)
    new, effects = transition(busy, ReviewBackground(JOB, "make gen"))
    assert new is busy and of(effects, Reject)
    state = asked()
    for event in (UserMessage("next"), UndoChanges("0123456789ab"), ReviewBackground("other", "x")):
        new, effects = transition(state, event)  # type: ignore[arg-type]
        assert new is state and [e.code for e in of(effects, Reject)] == ["busy"], event
    # a host call of no background under review is never made
    _, effects = transition(unrestricted(), HostCall(JOB, QUESTION, ToolKind.WRITE))
    assert of(effects, Reject) and not of(effects, AnswerHostCall)


@pytest.mark.req("REQ-BASH-044")
def test_a_cancel_answers_the_question_no_and_the_outcome_tells_the_model() -> None:
    state, _ = run(asked(), HostCall(JOB, QUESTION, ToolKind.WRITE))  # type: ignore[arg-type]
    state, effects = transition(state, Cancel())
    assert [(a.allowed, a.message) for a in of(effects, AnswerHostCall)] == [(False, texts.CANCELLED)]
    state, _ = transition(state, BackgroundReviewed(JOB, "the changes were not applied"))
    assert state.reviewing is None and notes_of(state)[-1] == "[system] the changes were not applied"
    new, effects = transition(state, UserMessage("next"))
    assert isinstance(new.status, AwaitingLlm)
    # a stale outcome changes nothing
    assert transition(state, BackgroundReviewed("other", "x"))[0] is state


@pytest.mark.req("REQ-BASH-044")
def test_a_restart_ends_a_review_under_way_with_a_note() -> None:
    state, _ = run(asked(), HostCall(JOB, QUESTION, ToolKind.WRITE))  # type: ignore[arg-type]
    state, _ = transition(state, Restore())
    assert state.reviewing is None and state.review_question is None
    assert texts.REVIEW_INTERRUPTED in notes_of(state)


@pytest.mark.req("REQ-BASH-046")
def test_a_discard_is_told_to_the_user_and_written_for_the_model() -> None:
    told = "the changes of the background command `make gen` were discarded unreviewed: 2 created"
    state, effects = transition(unrestricted(), ChangesDiscarded(told))
    assert of(effects, ErrorReported) == [ErrorReported(told, "discarded")]
    assert notes_of(state)[-1] == f"[system] {told}"
    busy, _ = run(unrestricted(), UserMessage("go"))  # during a turn: at the end of its batch
    state, effects = transition(busy, ChangesDiscarded(told))
    assert state.notes == (f"[system] {told}",) and of(effects, ErrorReported)
