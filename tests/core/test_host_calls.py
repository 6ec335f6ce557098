"""The agent route in the core: the route of a message, and the host calls of a running plan (REQ-AGENT-001/002/
014/015). The plan itself runs outside the core; every MCP call it makes is decided here, by the permission
function, like a tool call."""

from __future__ import annotations

import pytest

from phoenix_lsp.core import transition
from phoenix_lsp.core.effects import AnswerHostCall, AskApproval, Audit, CancelTool, Reject, RunTool
from phoenix_lsp.core.events import (
    ApprovalAnswer,
    Cancel,
    HostCall,
    Restore,
    SetMode,
    ToolDone,
    UserMessage,
)
from phoenix_lsp.core.notifications import Notification, ToolRefused
from phoenix_lsp.core.permissions import HOST_WRITE_DISABLED
from phoenix_lsp.core.rules import AllowRule
from phoenix_lsp.core.state import AwaitingApproval, ConversationState, Idle, RunningTool
from phoenix_lsp.core.tools import AGENT_TOOLS, CONVERSATION_TOOLS, RUN_PLAN, ToolKind, tools_for
from phoenix_lsp.core.values import Decision, Mode, Policy, Route, ToolUse

from .test_machine import fresh, of, reply, run, tool

pytestmark = pytest.mark.req("REQ-AGENT-014", "REQ-AGENT-015")

UPDATE = "mcp://records/update_record"


def planning(state: ConversationState) -> ConversationState:
    """``state`` with an agent-route message whose answer is a run_plan call, now running."""
    state, effects = run(state, UserMessage("triage the records", route=Route.AGENT),
                         reply(state.next_request, tool(1, RUN_PLAN, plan={"goal": "g"})))
    assert isinstance(state.status, RunningTool) and of(effects, RunTool)
    return state


def host(i: int, kind: ToolKind = ToolKind.WRITE, name: str = UPDATE) -> HostCall:
    return HostCall("t1", ToolUse(f"h{i}", name, {"id": i}), kind)


def answers(effects: tuple[object, ...]) -> list[AnswerHostCall]:
    return of(effects, AnswerHostCall)


@pytest.mark.req("REQ-AGENT-001", "REQ-AGENT-002")
def test_the_route_of_a_message_chooses_the_tools_of_its_turns() -> None:
    state = run(fresh(), UserMessage("hi"))[0]
    assert state.route is Route.ASK and tools_for(False, state.route) == CONVERSATION_TOOLS
    state = run(state, reply(1, text="hello"), UserMessage("now plan", route=Route.AGENT))[0]
    assert state.route is Route.AGENT and tools_for(False, state.route) == AGENT_TOOLS
    # the route's own tools, none of the ask route's built-in ones but the upgrade request (REQ-AGENT-040)
    assert set(AGENT_TOOLS) & set(CONVERSATION_TOOLS) == {"request_mode_upgrade"}
    assert tools_for(True, Route.AGENT) == tools_for(True, Route.ASK)  # sub-agents take the ask route


def test_run_plan_is_unknown_on_the_ask_route() -> None:
    state, effects = run(fresh(), UserMessage("hi"), reply(1, tool(1, RUN_PLAN, plan={})))
    assert not of(effects, RunTool)
    assert "Unknown tool 'run_plan'" in state.history[-1].content[0].content  # type: ignore[union-attr]


def test_reads_go_ahead_in_restricted_without_a_question() -> None:
    state = planning(fresh())
    assert state.mode is Mode.RESTRICTED
    after, effects = transition(state, host(1, ToolKind.READ, "mcp://records/list_records"))
    assert answers(effects) == [AnswerHostCall("h1", True)] and after.status == state.status
    assert not of(effects, Audit)  # reads are not audited one by one


def test_a_write_in_restricted_is_refused_with_the_patch_tools_message() -> None:
    state = planning(fresh())
    after, effects = transition(state, host(1))
    assert answers(effects) == [AnswerHostCall("h1", False, HOST_WRITE_DISABLED.format(tool=UPDATE), "mode")]
    message = answers(effects)[0].message
    assert "request_mode_upgrade" in message and "without it" not in message  # one instruction
    assert "changes data" not in message  # its kind may be only the safe default: not a claim about the tool
    assert any(isinstance(e, Audit) and e.action == "toolRefused" for e in effects)
    assert any(isinstance(e, ToolRefused) for e in effects)
    assert isinstance(after.status, RunningTool)  # the plan goes on and reports the refusal


def test_interactive_asks_per_call_and_allow_answers_only_that_call() -> None:
    state = planning(run(fresh(), UserMessage("/execute"))[0])
    asked, effects = transition(state, host(1))
    assert isinstance(asked.status, AwaitingApproval) and asked.status.host_call == host(1).call
    assert of(effects, AskApproval)[0].call.name == UPDATE and not answers(effects)
    assert of(transition(asked, host(2))[1], Reject)[0].code == "busy"  # one question at a time
    allowed, effects = transition(asked, ApprovalAnswer("h1", Decision.ALLOW))
    assert answers(effects) == [AnswerHostCall("h1", True)] and isinstance(allowed.status, RunningTool)
    again, effects = transition(allowed, host(2))  # the next call asks again: approval is per call
    assert isinstance(again.status, AwaitingApproval) and of(effects, AskApproval)


def test_deny_fails_the_call_and_the_plan_goes_on() -> None:
    state = planning(run(fresh(), UserMessage("/execute"))[0])
    state, effects = run(state, host(1), ApprovalAnswer("h1", Decision.DENY))
    assert answers(effects)[0].allowed is False and isinstance(state.status, RunningTool)
    state, effects = transition(state, ToolDone("t1", "node update failed: APPROVAL_DENIED"))
    assert state.history[-1].content[0].content == "node update failed: APPROVAL_DENIED"  # type: ignore[union-attr]


def test_always_allow_adds_the_tool_and_later_calls_go_ahead() -> None:
    state = planning(run(fresh(), UserMessage("/execute"))[0])
    state, effects = run(state, host(1), ApprovalAnswer("h1", Decision.ALWAYS_ALLOW))
    assert AllowRule(UPDATE) in state.always_allow and answers(effects)[0].allowed
    state, effects = transition(state, host(2))
    assert answers(effects) == [AnswerHostCall("h2", True)]
    assert any(isinstance(e, Audit) and e.action == "hostCallAllowed" for e in effects)


def test_auto_policy_allows_writes_with_an_audit_entry() -> None:
    state = planning(run(fresh(policy=Policy.AUTO), UserMessage("/execute"))[0])
    _, effects = transition(state, host(1))
    assert answers(effects) == [AnswerHostCall("h1", True)]
    assert [e.detail["tool"] for e in effects if isinstance(e, Audit)] == [UPDATE]


def test_plan_while_a_host_call_waits_refuses_it_and_the_plan_goes_on() -> None:
    state = planning(run(fresh(), UserMessage("/execute"))[0])
    state, effects = run(state, host(1), SetMode(Mode.RESTRICTED))
    assert answers(effects) == [AnswerHostCall("h1", False, HOST_WRITE_DISABLED.format(tool=UPDATE), "mode")]
    assert isinstance(state.status, RunningTool)


def test_cancel_while_a_host_call_waits_says_no_and_stops_the_plan() -> None:
    state = planning(run(fresh(), UserMessage("/execute"))[0])
    state, effects = run(state, host(1), Cancel())
    assert answers(effects)[0].allowed is False
    assert of(effects, CancelTool) == [CancelTool("t1")] and isinstance(state.status, Idle)


def test_restart_while_a_host_call_waits_ends_the_plan_as_interrupted() -> None:
    state = planning(run(fresh(), UserMessage("/execute"))[0])
    state, effects = run(state, host(1), Restore())
    assert isinstance(state.status, Idle) and not of(effects, AskApproval)
    assert "server restarted" in state.history[-1].content[0].content  # type: ignore[union-attr]


def test_a_host_call_for_another_tool_call_is_stale() -> None:
    state = planning(fresh())
    _, effects = transition(state, HostCall("t9", ToolUse("h1", UPDATE, {}), ToolKind.READ))
    assert of(effects, Reject)[0].code == "stale"
    describe = run(fresh(), UserMessage("hi", route=Route.AGENT),
                   reply(1, tool(1, "describe_tools", tools=["mcp://records/list_records"])))[0]
    _, effects = transition(describe, HostCall("t1", ToolUse("h1", UPDATE, {}), ToolKind.READ))
    assert of(effects, Reject)[0].code == "stale"  # only a running plan makes host calls


def test_a_host_call_of_another_kind_is_refused_without_blaming_the_mode() -> None:
    state = planning(run(fresh(policy=Policy.AUTO), UserMessage("/execute"))[0])
    _, effects = transition(state, host(1, ToolKind.EXEC))
    assert answers(effects) == [AnswerHostCall(
        "h1", False, "A host call must be a read or a write, not exec; nothing was run.", "unknown_tool")]
    assert not of(effects, Notification) and not of(effects, Audit)  # a server bug, not the user's mode


def test_an_approval_node_asks_nothing_and_is_refused_only_in_restricted() -> None:
    """REQ-AGENT-034: the question is asked once, at the write call, with its arguments; the approval node
    before it only stops a plan whose write could not run."""
    restricted = planning(fresh())
    _, effects = transition(restricted, host(1, ToolKind.PLAN))
    assert answers(effects) == [AnswerHostCall("h1", False, HOST_WRITE_DISABLED.format(tool=UPDATE), "mode")]
    interactive = planning(run(fresh(), UserMessage("/execute"))[0])
    after, effects = transition(interactive, host(1, ToolKind.PLAN))
    assert answers(effects) == [AnswerHostCall("h1", True)] and not of(effects, AskApproval)
    assert isinstance(after.status, RunningTool)
    assert [e.action for e in effects if isinstance(e, Audit)] == ["hostCallAllowed"]  # on record
    # the write call after it is still asked about
    after, effects = transition(after, host(2))
    assert of(effects, AskApproval) and not answers(effects)


@pytest.mark.req("REQ-AGENT-044")
@pytest.mark.parametrize("mode", [Mode.RESTRICTED, Mode.UNRESTRICTED])
def test_while_the_answer_streams_only_a_read_goes_ahead_and_nobody_is_asked(mode: Mode) -> None:
    """A plan's node started before the plan is complete: its read is decided as any plan's read; a write or an
    approval node is refused without a question (interactive policy), and the model's request goes on."""
    state = run(fresh(), SetMode(mode), UserMessage("triage the records", route=Route.AGENT))[0]
    assert state.policy is Policy.INTERACTIVE
    waiting = state.status
    state, effects = transition(state, host(1, ToolKind.READ, "mcp://records/list_records"))
    assert [(a.allowed, a.by) for a in answers(effects)] == [(True, "")]
    for i, kind in ((2, ToolKind.WRITE), (3, ToolKind.PLAN)):
        state, effects = transition(state, host(i, kind))
        [answer] = answers(effects)
        assert not answer.allowed and answer.by == "early" and "may only read" in answer.message
        assert not of(effects, AskApproval) and state.status == waiting
