"""Billed-token totals in the pure core (issue 16): per conversation, sub-agents included, restart-proof."""

from __future__ import annotations

import pytest

from phoenix_lsp import codec
from phoenix_lsp.core import machine, transition
from phoenix_lsp.core.effects import PersistState, ReportToParent, ReportUsage
from phoenix_lsp.core.events import AgentUsage, LlmDone, SetMode, ToolDone, TriggerContinuation, UserMessage
from phoenix_lsp.core.state import ConversationState, Exhausted, Idle
from phoenix_lsp.core.tools import SUBMIT_RESULT
from phoenix_lsp.core.values import Mode, Text, ToolUse, Usage, UsageTotals

COLD = Usage(input_tokens=1200, output_tokens=40)
WARM = Usage(input_tokens=30, output_tokens=50, cache_creation_input_tokens=400, cache_read_input_tokens=1000,
             cache_write_5m_tokens=100, cache_write_1h_tokens=300)


def fresh(**fields: object) -> ConversationState:
    return machine.new_conversation("p", model="m", working_directory="/w", sandbox=True, **fields)


@pytest.mark.req("REQ-CACHE-005")
def test_every_response_adds_to_the_conversations_totals() -> None:
    state, _ = transition(fresh(), UserMessage("hi"))
    state, _ = transition(state, LlmDone(1, (Text("hello"),), "end_turn", COLD))
    state, _ = transition(state, UserMessage("again"))
    state, effects = transition(state, LlmDone(2, (Text("hello again"),), "end_turn", WARM))
    assert state.usage == UsageTotals(2, 1230, 90, 400, 1000, cache_write_5m_tokens=100, cache_write_1h_tokens=300)
    assert state.context_tokens == WARM.total == 1480  # the TTL split is part of the cache writes, not added
    assert state.last_usage == WARM
    assert state.agents_usage == UsageTotals()
    assert any(isinstance(e, PersistState) for e in effects)  # stored with the state: survives restarts
    restored = codec.decode_state(codec.encode_state(state), state.history)
    assert restored.usage == state.usage and restored.last_usage == WARM
    old = codec.encode_state(state).replace('"usage"', '"_gone"')  # a state stored before issue 16
    assert codec.decode_state(old, ()).usage == UsageTotals()
    unsplit = codec.encode_state(state).replace('"cache_write_5m_tokens":100,', "")  # stored before the split
    assert codec.decode_state(unsplit, ()).usage.cache_write_5m_tokens == 0


@pytest.mark.req("REQ-CACHE-005")
def test_the_summary_request_counts_too() -> None:
    state, _ = transition(fresh(), UserMessage("hi"))
    state, _ = transition(state, LlmDone(1, (Text("hello"),), "end_turn", COLD))
    state, _ = transition(state, TriggerContinuation())
    state, _ = transition(state, LlmDone(2, (Text("summary"),), "end_turn", WARM))
    assert isinstance(state.status, Exhausted) and state.usage.requests == 2


@pytest.mark.req("REQ-CACHE-005")
def test_a_sub_agent_reports_each_responses_usage_to_its_parent() -> None:
    agent = machine.new_conversation("p.t1.0", model="m", working_directory="/w", sandbox=True, is_subagent=True,
                                     parent_id="p")
    agent, _ = transition(agent, UserMessage("task"))
    agent, effects = transition(agent, LlmDone(1, (ToolUse("t9", "read_file", {"path": "a"}),), "tool_use", COLD))
    assert [e for e in effects if isinstance(e, ReportUsage)] == [ReportUsage("p", "p.t1.0", COLD)]
    agent, _ = transition(agent, ToolDone("t9", "contents"))
    submit = ToolUse("t10", SUBMIT_RESULT, {"result": "done"})
    agent, effects = transition(agent, LlmDone(2, (submit,), "tool_use", WARM))
    kinds = [type(e) for e in effects if isinstance(e, ReportUsage | ReportToParent)]
    assert kinds == [ReportUsage, ReportToParent]  # the tokens reach the parent before the result
    assert agent.usage.requests == 2


@pytest.mark.req("REQ-CACHE-005")
def test_the_parent_adds_sub_agent_usage_whatever_it_is_doing() -> None:
    idle = fresh()
    busy, _ = transition(idle, UserMessage("hi"))
    exhausted = fresh(status=Exhausted("s"))
    for state in (idle, busy, exhausted, transition(idle, SetMode(Mode.UNRESTRICTED))[0]):
        after, effects = transition(state, AgentUsage("p.t1.0", WARM))
        assert after.agents_usage == UsageTotals(1, 30, 50, 400, 1000, 100, 300), state.status
        assert after.status == state.status and after.usage == state.usage
        assert any(isinstance(e, PersistState) for e in effects)
    assert isinstance(idle.status, Idle)


@pytest.mark.req("REQ-CACHE-007", "REQ-BED-012")
def test_context_counts_cached_tokens_like_any_input() -> None:
    """The same request, billed cold or from the cache, fills the context window alike."""
    cold = Usage(input_tokens=1430, output_tokens=50)
    cached = Usage(input_tokens=30, output_tokens=50, cache_creation_input_tokens=400, cache_read_input_tokens=1000)
    ends = []
    for usage in (cold, cached):
        state, _ = transition(fresh(), UserMessage("hi"))
        state, _ = transition(state, LlmDone(1, (Text("hello"),), "end_turn", usage))
        ends.append(state.context_tokens)
    assert ends == [1480, 1480]
