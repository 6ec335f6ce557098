"""A plan's rendered answer in the pure core (REQ-AGENT-039): the turn ends with it as the assistant's reply,
without another model request, only when the plan's call was the response's last and it succeeded."""

from __future__ import annotations

import pytest

from phoenix_lsp.core import machine, transition
from phoenix_lsp.core.effects import PersistMessage, RequestLlm, ShowAnswer
from phoenix_lsp.core.events import LlmDone, SetMode, ToolDone, UserMessage
from phoenix_lsp.core.notifications import StatusChanged
from phoenix_lsp.core.state import ConversationState, Idle, RunningTool
from phoenix_lsp.core.values import Mode, Route, Text, ToolUse, Usage

USE = Usage(input_tokens=100, output_tokens=10)


def planning(*calls: ToolUse) -> ConversationState:
    state = machine.new_conversation("c", model="m", working_directory="/w", sandbox=True)
    state, _ = transition(state, SetMode(Mode.UNRESTRICTED))
    state, _ = transition(state, UserMessage("how many?", route=Route.AGENT))
    state, _ = transition(state, LlmDone(1, calls, "tool_use", USE))
    assert isinstance(state.status, RunningTool)
    return state


PLAN = ToolUse("p1", "run_plan", {"goal": "count", "answer": True, "nodes": []})


@pytest.mark.req("REQ-AGENT-039")
def test_the_answer_ends_the_turn_shown_before_the_idle_status_and_kept_in_the_history() -> None:
    state, effects = transition(planning(PLAN), ToolDone("p1", "n: ok {answer: 3}", answer="3 open issues."))
    assert isinstance(state.status, Idle)
    assert not any(isinstance(e, RequestLlm) for e in effects)
    assert state.history[-1].role == "assistant" and state.history[-1].content == (Text("3 open issues."),)
    assert state.history[-2].role == "user"  # the plan's result, as the model will see it next turn
    kinds = [type(e) for e in effects]
    assert kinds.index(PersistMessage) < kinds.index(ShowAnswer) < kinds.index(StatusChanged)
    [shown] = [e for e in effects if isinstance(e, ShowAnswer)]
    assert shown.text == "3 open issues." and state.next_request == shown.request_id + 1


@pytest.mark.req("REQ-AGENT-039")
def test_an_error_or_a_call_still_to_run_sends_the_results_to_the_model() -> None:
    _, effects = transition(planning(PLAN), ToolDone("p1", "failed", is_error=True, answer="3"))
    assert any(isinstance(e, RequestLlm) for e in effects)
    read = ToolUse("r1", "describe_tools", {"tools": ["mcp://issues/get_issue"]})
    state, effects = transition(planning(PLAN, read), ToolDone("p1", "ok", answer="3"))
    assert isinstance(state.status, RunningTool) and not any(isinstance(e, ShowAnswer) for e in effects)
