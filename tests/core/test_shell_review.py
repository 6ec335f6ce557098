"""A bash command's captured changes are reviewed by the core (REQ-BASH-032): the running bash call asks with a
host call named like the patch tool, and only the permission function's yes lets the changes land: the policy
of the patch tool (interactive asks, auto goes ahead, Always Allow of patch), never Restricted, never after a
cancel. The property at the end drives random sequences of events and finds no yes the core did not give."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phoenix_lsp.core import transition
from phoenix_lsp.core.effects import AnswerHostCall, AskApproval, Audit, CancelTool, Effect, Reject
from phoenix_lsp.core.events import (
    ApprovalAnswer,
    Cancel,
    Event,
    HostCall,
    RevokeAlwaysAllow,
    SetMode,
    SetPolicy,
    ToolDone,
    UserMessage,
)
from phoenix_lsp.core.rules import AllowRule, covers
from phoenix_lsp.core.state import AwaitingApproval, ConversationState, RunningTool
from phoenix_lsp.core.tools import BASH, PATCH, ToolKind
from phoenix_lsp.core.values import Decision, Mode, Policy, ToolUse

from .test_machine import fresh, of, reply, run, tool

pytestmark = pytest.mark.req("REQ-BASH-032")


def running_bash(state: ConversationState, command: str = "sed -i s/a/b/ x") -> ConversationState:
    """``state`` with a turn whose answer is one bash call (t1), now running (allowed by the policy or the user)."""
    state, _ = run(state, UserMessage("edit it"), reply(state.next_request, tool(1, BASH, command=command)))
    if isinstance(state.status, AwaitingApproval):
        state, _ = transition(state, ApprovalAnswer("t1", Decision.ALLOW))
    assert isinstance(state.status, RunningTool) and state.status.batch.current.name == BASH
    return state


def review(i: int = 1, bash_id: str = "t1") -> HostCall:
    return HostCall(bash_id, ToolUse(f"t1.review{i}", PATCH, {"files": ["x"]}), ToolKind.WRITE)


def unrestricted(policy: Policy = Policy.INTERACTIVE) -> ConversationState:
    return run(fresh(policy=policy), UserMessage("/execute"))[0]


def answers(effects: tuple[Effect, ...]) -> list[AnswerHostCall]:
    return of(effects, AnswerHostCall)


def test_interactive_asks_with_the_patch_tool_and_allow_lets_the_changes_land() -> None:
    state = running_bash(unrestricted())
    asked, effects = transition(state, review())
    assert isinstance(asked.status, AwaitingApproval) and asked.status.host_call == review().call
    (ask,) = of(effects, AskApproval)
    assert ask.call.name == PATCH and [s.rule for s in ask.scopes] == ["patch"]  # the patch tool's scope
    assert [e.detail.get("bash") for e in effects if isinstance(e, Audit)] == ["t1"]
    assert not answers(effects)
    allowed, effects = transition(asked, ApprovalAnswer("t1.review1", Decision.ALLOW))
    assert answers(effects) == [AnswerHostCall("t1.review1", True)] and isinstance(allowed.status, RunningTool)


def test_deny_says_no_and_the_bash_call_goes_on_to_its_result() -> None:
    state = running_bash(unrestricted())
    state, effects = run(state, review(), ApprovalAnswer("t1.review1", Decision.DENY))
    (answer,) = answers(effects)
    assert answer.allowed is False and answer.by == "user"
    state, _ = transition(state, ToolDone("t1", "changes discarded"))
    assert not isinstance(state.status, RunningTool)


def test_auto_applies_at_once_with_an_audit_entry() -> None:
    state = running_bash(unrestricted(Policy.AUTO))
    _, effects = transition(state, review())
    assert answers(effects) == [AnswerHostCall("t1.review1", True)] and not of(effects, AskApproval)
    assert any(isinstance(e, Audit) and e.action == "hostCallAllowed" for e in effects)


def test_always_allow_adds_the_patch_tool_and_later_reviews_and_patches_go_ahead() -> None:
    state = running_bash(unrestricted())
    state, effects = run(state, review(), ApprovalAnswer("t1.review1", Decision.ALWAYS_ALLOW))
    assert AllowRule(PATCH) in state.always_allow and answers(effects)[0].allowed
    _, effects = transition(state, review(2))
    assert answers(effects) == [AnswerHostCall("t1.review2", True)]


def test_an_always_allowed_bash_does_not_allow_its_changes() -> None:
    # the user allowed bash as a whole: its commands run without a question, their changes are still reviewed
    state = running_bash(replace(unrestricted(), always_allow=(AllowRule(BASH),)))
    asked, effects = transition(state, review())
    assert isinstance(asked.status, AwaitingApproval) and of(effects, AskApproval)


def test_cancel_while_the_review_waits_says_no_and_stops_the_command() -> None:
    state = running_bash(unrestricted())
    state, effects = run(state, review(), Cancel())
    assert answers(effects)[0].allowed is False and of(effects, CancelTool)


def test_restricted_while_the_review_waits_refuses_the_changes() -> None:
    state = running_bash(unrestricted())
    state, effects = run(state, review(), SetMode(Mode.RESTRICTED))
    assert answers(effects)[0].allowed is False and answers(effects)[0].by == "mode"


def test_only_a_running_bash_may_ask_and_only_for_a_write_named_patch() -> None:
    state = running_bash(unrestricted(Policy.AUTO))
    for event in (HostCall("t1", ToolUse("h", "mcp://x/y", {}), ToolKind.WRITE),  # not a review
                  HostCall("t1", ToolUse("h", PATCH, {}), ToolKind.READ),  # a review is a write
                  review(bash_id="t9")):  # not the running call
        after, effects = transition(state, event)
        assert of(effects, Reject) and not answers(effects) and after == state


# ------------------------------------------------------------------------------------------------ property


EVENTS = st.one_of(
    st.builds(review, st.integers(1, 3)),
    st.builds(lambda i: review(i, "t2"), st.integers(1, 2)),
    st.builds(ApprovalAnswer, st.sampled_from(["t1.review1", "t1.review2", "t1.review3", "t1", "t2"]),
              st.sampled_from(list(Decision))),
    st.just(Cancel()),
    st.builds(SetMode, st.sampled_from(list(Mode))),
    st.builds(SetPolicy, st.sampled_from(list(Policy))),
    st.just(RevokeAlwaysAllow(PATCH)),
    st.builds(lambda i: ToolDone(f"t{i}", "out"), st.integers(1, 2)),
    st.builds(lambda: UserMessage("again")),
    st.builds(lambda n: reply(n, tool(1, BASH, command="make"), tool(2, BASH, command="make install")),
              st.integers(1, 6)),
)


@given(policy=st.sampled_from(list(Policy)), events=st.lists(EVENTS, max_size=25))
@settings(max_examples=300, deadline=None)
def test_no_sequence_of_events_lets_changes_land_without_the_cores_yes(policy: Policy, events: list[Event]) -> None:
    """Every yes to a review is the permission function's: given when the review was asked under a policy or
    rule that needs no question, or when the user allowed that very review; never in Restricted."""
    state = running_bash(unrestricted(policy))
    for event in events:
        before = state
        state, effects = transition(state, event)
        for answer in answers(effects):
            if not answer.allowed or ".review" not in answer.call_id:
                continue
            assert state.mode is Mode.UNRESTRICTED, "a review allowed in Restricted"
            call = ToolUse(answer.call_id, PATCH, {"files": ["x"]})
            if isinstance(event, HostCall):
                assert event.call.id == answer.call_id
                assert before.mode is Mode.UNRESTRICTED and (
                    before.policy is Policy.AUTO or covers(before.always_allow, call)), "allowed unasked"
            elif isinstance(event, ApprovalAnswer):
                assert event.decision in (Decision.ALLOW, Decision.ALWAYS_ALLOW) and event.tool_use_id == answer.call_id
                assert isinstance(before.status, AwaitingApproval) and before.status.tool_use_id == answer.call_id
            else:  # a setting that makes the waiting question moot (auto, or a mode change) decides it again
                assert isinstance(before.status, AwaitingApproval) and before.status.tool_use_id == answer.call_id
                assert state.policy is Policy.AUTO or covers(state.always_allow, call)
