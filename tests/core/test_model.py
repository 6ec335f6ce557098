"""The model a conversation uses is the user's to choose between turns, within the context in use (REQ-MODEL-003)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phoenix_lsp.core import machine, transition
from phoenix_lsp.core.effects import Audit, PersistState, Reject
from phoenix_lsp.core.events import SetModel, UserMessage, WindowReported
from phoenix_lsp.core.notifications import ContextUsage, ContextWarning, ModelChanged, UsageReported
from phoenix_lsp.core.state import AwaitingLlm, ConversationState, Exhausted, Settings
from phoenix_lsp.core.values import Actor

WIDE, NARROW = 1_000_000, 200_000


def fresh(**fields: object) -> ConversationState:
    settings = Settings(context_window=WIDE)
    return machine.new_conversation("c1", model="wide", working_directory="/w", sandbox=True, settings=settings,
                                    **fields)


def rejects(effects: tuple[object, ...]) -> list[Reject]:
    return [e for e in effects if isinstance(e, Reject)]


@pytest.mark.req("REQ-MODEL-003")
def test_a_switch_between_turns_takes_the_new_model_and_its_window_and_is_told_and_audited() -> None:
    state, effects = transition(fresh(context_tokens=50_000), SetModel("narrow", NARROW))
    assert state.model == "narrow" and state.settings.context_window == NARROW
    assert ModelChanged("narrow", "wide", NARROW) in effects
    assert Audit(Actor.USER, "modelChanged", {"model": "narrow", "previous": "wide"}) in effects
    assert any(isinstance(e, PersistState) for e in effects)
    # the next request goes to the new model: the core's request carries no model, the state does
    state, _ = transition(state, UserMessage("hi"))
    assert isinstance(state.status, AwaitingLlm) and state.model == "narrow"


@pytest.mark.req("REQ-MODEL-003")
def test_the_same_model_changes_nothing() -> None:
    state = fresh()
    assert transition(state, SetModel("wide", WIDE)) == (state, ())


@pytest.mark.req("REQ-MODEL-003")
def test_a_window_too_small_for_the_context_in_use_is_refused_with_the_way_on() -> None:
    state = fresh(context_tokens=185_000)  # 92.5% of the narrow window: past the 90% continuation threshold
    after, effects = transition(state, SetModel("narrow", NARROW))
    assert after is state
    [reject] = rejects(effects)
    assert reject.code == "context_too_large"
    assert "185,000" in reject.message and "200,000" in reject.message
    assert "phoenix/triggerContinuation" in reject.message and "wide still answers" in reject.message


@pytest.mark.req("REQ-MODEL-003")
def test_the_context_warning_follows_the_new_window() -> None:
    state = fresh(context_tokens=170_000)  # 17% of the wide window, 85% of the narrow one
    state, _ = transition(state, SetModel("narrow", NARROW))
    assert state.warned is True
    state, _ = transition(state, SetModel("wide", WIDE))
    assert state.warned is False


@pytest.mark.req("REQ-MODEL-003", "REQ-BED-002")
def test_busy_exhausted_and_sub_agent_conversations_keep_their_model() -> None:
    busy, _ = transition(fresh(), UserMessage("hi"))
    _, effects = transition(busy, SetModel("narrow", NARROW))
    assert [r.code for r in rejects(effects)] == ["busy"]
    exhausted = replace(fresh(), status=Exhausted("the summary"))
    _, effects = transition(exhausted, SetModel("narrow", NARROW))
    assert [r.code for r in rejects(effects)] == ["context_exhausted"]
    agent = fresh(is_subagent=True, parent_id="p")
    _, effects = transition(agent, SetModel("narrow", NARROW))
    assert [r.code for r in rejects(effects)] == ["subagent"]


@pytest.mark.req("REQ-MODEL-003")
@given(used=st.integers(0, 2_000_000), window=st.integers(1_000, 2_000_000))
def test_a_switch_is_taken_exactly_when_the_context_fits_under_the_continuation_threshold(used: int,
                                                                                           window: int) -> None:
    state = fresh(context_tokens=used)
    after, effects = transition(state, SetModel("other", window))
    fits = used < int(window * state.settings.continue_ratio)
    assert (after.model == "other") is fits
    assert bool(rejects(effects)) is not fits
    if not fits:
        assert after is state


# ------------------------------------------------ a window reported later (Ollama's /api/show, issue 27)

UNKNOWN, REPORTED = 32_768, 8_192


def _usage(used: int, window: int) -> ContextUsage:
    return ContextUsage(used_tokens=used, context_window=window, fraction=round(used / window, 4))


@pytest.mark.req("REQ-MODEL-012")
@pytest.mark.parametrize(("used", "warned", "event", "window", "effects"), [
    # the conversation's model: the window is taken, the client told the size in use
    (0, False, WindowReported("wide", REPORTED), REPORTED, (PersistState(), UsageReported(_usage(0, REPORTED)))),
    # already 80 % of the reported window, not yet warned: the warning now (REQ-BED-023)
    (7_000, False, WindowReported("wide", REPORTED), REPORTED,
     (PersistState(), UsageReported(_usage(7_000, REPORTED)),
      ContextWarning(_usage(7_000, REPORTED)))),
    # exactly 80 %: warned as a response would be
    (6_554, False, WindowReported("wide", REPORTED), REPORTED,
     (PersistState(), UsageReported(_usage(6_554, REPORTED)),
      ContextWarning(_usage(6_554, REPORTED)))),
    # just under 80 %: no warning
    (6_553, False, WindowReported("wide", REPORTED), REPORTED,
     (PersistState(), UsageReported(_usage(6_553, REPORTED)))),
    # warned before: not twice
    (7_000, True, WindowReported("wide", REPORTED), REPORTED,
     (PersistState(), UsageReported(_usage(7_000, REPORTED)))),
    # a report of another model (the user switched meanwhile), the window in use, or nonsense: nothing
    (0, False, WindowReported("other", REPORTED), UNKNOWN, ()),
    (0, False, WindowReported("wide", UNKNOWN), UNKNOWN, ()),
    (0, False, WindowReported("wide", 0), UNKNOWN, ()),
])
def test_a_window_reported_later_is_taken_for_the_conversations_model_only(
    used: int, warned: bool, event: WindowReported, window: int, effects: tuple[object, ...]
) -> None:
    state = replace(fresh(context_tokens=used, warned=warned), settings=Settings(context_window=UNKNOWN))
    after, got = transition(state, event)
    assert got == effects
    assert after.settings.context_window == window
    assert after.warned is (warned or any(isinstance(e, ContextWarning) for e in effects))
    if not effects:
        assert after is state


@pytest.mark.req("REQ-MODEL-012")
def test_a_reported_window_is_taken_while_the_first_request_runs_and_measures_its_answer() -> None:
    from phoenix_lsp.core.events import LlmDone
    from phoenix_lsp.core.values import Text, Usage

    state = replace(fresh(), settings=Settings(context_window=UNKNOWN))
    state, _ = transition(state, UserMessage("hi"))
    state, _ = transition(state, WindowReported("wide", REPORTED))
    assert isinstance(state.status, AwaitingLlm) and state.settings.context_window == REPORTED
    state, effects = transition(state, LlmDone(state.status.request_id, (Text("x"),), "end_turn",
                                               Usage(input_tokens=7_000, output_tokens=10)))
    assert ContextWarning(_usage(7_010, REPORTED)) in effects
