"""The core decides; the server only carries out (REQ-CORE-007). Effects are checked whole."""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

import pytest

from phoenix_lsp.core import machine
from phoenix_lsp.core.effects import Reject, RequestLlm, SetTitle, UserCommand
from phoenix_lsp.core.events import LlmDone, LlmFailed, SetPolicy, SetStyle, ToolDone, TriggerContinuation, UserMessage
from phoenix_lsp.core.notifications import (
    ContextUsage,
    ErrorReported,
    ModeChanged,
    Notification,
    PolicyChanged,
    StatusChanged,
    StyleChanged,
    StyleSuggested,
    UsageReported,
)
from phoenix_lsp.core.state import ConversationState, Error, Exhausted, Settings
from phoenix_lsp.core.values import Actor, Mode, Policy, Style, Text, ToolUse, Usage

transition = machine.transition


def fresh(**fields: object) -> ConversationState:
    return machine.new_conversation("c1", model="m", working_directory="/w", sandbox=True, **fields)


N = TypeVar("N")


def notes(effects: tuple[object, ...], kind: type[N]) -> list[N]:
    return [e for e in effects if isinstance(e, kind)]


def kinds(effects: tuple[object, ...]) -> list[type]:
    return [type(e) for e in effects if isinstance(e, Notification)]


@pytest.mark.req("REQ-CORE-007")
def test_busy_refusal_is_decided_by_the_core_for_any_user_event() -> None:
    state, _ = transition(fresh(), UserMessage("hi"))
    for event in (UserMessage("again"), TriggerContinuation(), ToolDone("x", "y")):
        new, effects = transition(state, event)
        assert new is state and len(effects) == 1
        [reject] = effects
        assert isinstance(reject, Reject) and reject.code == "busy"
        assert "awaiting_llm" in reject.message and "phoenix/cancel" in reject.message


@pytest.mark.req("REQ-CORE-007")
def test_an_exhausted_conversation_says_how_to_continue() -> None:
    state = replace(fresh(), status=Exhausted("sum"))
    _, [reject] = transition(state, TriggerContinuation())
    assert isinstance(reject, Reject) and reject.code == "context_exhausted" and "continueFrom" in reject.message


@pytest.mark.req("REQ-CORE-007")
def test_first_message_titles_the_conversation_and_later_ones_do_not() -> None:
    state, effects = transition(fresh(), UserMessage("x" * 100))
    assert SetTitle("x" * 80) in effects and effects[-1] == RequestLlm(1)
    state, _ = transition(state, LlmDone(1, (Text("ok"),), "end_turn", Usage(10, 5)))
    _, effects = transition(state, UserMessage("second"))
    assert not [e for e in effects if isinstance(e, SetTitle)]


@pytest.mark.req("REQ-CORE-007")
def test_commands_are_answered_by_the_core() -> None:
    state, effects = transition(fresh(), UserMessage(" /execute "))
    assert state.mode is Mode.UNRESTRICTED and effects[-1] == UserCommand("execute")
    assert notes(effects, ModeChanged) == [ModeChanged(Mode.UNRESTRICTED, Mode.RESTRICTED, Actor.USER, "/execute")]
    state, effects = transition(state, UserMessage("/plan"))
    assert state.mode is Mode.RESTRICTED and effects[-1] == UserCommand("plan")


@pytest.mark.req("REQ-CORE-007")
def test_an_error_is_told_before_the_status_that_reports_it() -> None:
    state, _ = transition(fresh(), UserMessage("hi"))
    state, effects = transition(state, LlmFailed(1, False, "HTTP 401: bad key"))
    assert isinstance(state.status, Error)
    assert kinds(effects) == [ErrorReported, StatusChanged]
    assert notes(effects, ErrorReported) == [ErrorReported("The LLM request failed: HTTP 401: bad key.", "llm")]
    assert notes(effects, StatusChanged) == [StatusChanged("error", "awaiting_llm", Mode.RESTRICTED)]


@pytest.mark.req("REQ-CORE-007")
def test_usage_follows_every_response_with_the_context_share() -> None:
    state = fresh(settings=Settings(context_window=1000))
    state, _ = transition(state, UserMessage("hi"))
    _, effects = transition(state, LlmDone(1, (Text("ok"),), "end_turn", Usage(300, 20)))
    assert notes(effects, UsageReported) == [UsageReported(ContextUsage(used_tokens=320, context_window=1000,
                                                                        fraction=0.32))]


@pytest.mark.req("REQ-CORE-007")
def test_notifications_carry_previous_values_and_the_suggestion() -> None:
    _, effects = transition(fresh(), SetPolicy(Policy.AUTO))
    assert notes(effects, PolicyChanged) == [PolicyChanged(Policy.AUTO, previous=Policy.INTERACTIVE)]
    _, effects = transition(fresh(), SetStyle(Style.DEVELOPMENT))
    assert notes(effects, StyleChanged) == [StyleChanged(Style.DEVELOPMENT, previous=Style.CHAT)]
    [suggestion] = notes(effects, StyleSuggested)
    assert suggestion.mode is Mode.UNRESTRICTED and suggestion.command == "/execute" and suggestion.text


@pytest.mark.req("REQ-CORE-007", "REQ-CACHE-005")
def test_a_responses_usage_is_told_before_the_status_it_leads_to() -> None:
    """A client that acts on the status (shows the turn's cost when it is idle) already has the usage."""
    state, _ = transition(fresh(), UserMessage("hi"))
    call = ToolUse("t1", "read_file", {"path": "a"})
    state, effects = transition(state, LlmDone(1, (call,), "tool_use", Usage(30, 5)))
    assert kinds(effects) == [UsageReported, StatusChanged]
    state, _ = transition(state, ToolDone("t1", "text", False))
    _, effects = transition(state, LlmDone(2, (Text("ok"),), "end_turn", Usage(40, 2)))
    assert kinds(effects) == [UsageReported, StatusChanged]
    assert notes(effects, StatusChanged)[0].status == "idle"
