"""Stateful property tests of the pure core: random event sequences, invariants checked after every step.

Each invariant names the requirement it guards. ``PHOENIX_PROPERTY_EXAMPLES`` changes the number of examples
(default 1000 per machine, as CI demands).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from phoenix_lsp import codec
from phoenix_lsp.core import machine
from phoenix_lsp.core import notifications as n
from phoenix_lsp.core.effects import (
    AnswerHostCall,
    AskApproval,
    AskUpgrade,
    Audit,
    Effect,
    PersistMessage,
    PersistState,
    Reject,
    RejectCode,
    ReportToParent,
    RunTool,
    SpawnAgents,
)
from phoenix_lsp.core.events import (
    AgentEnded,
    AgentUsage,
    ApprovalAnswer,
    Cancel,
    Event,
    HostCall,
    LlmDone,
    LlmFailed,
    Restore,
    RevokeAlwaysAllow,
    SetInstructions,
    SetMode,
    SetModel,
    SetPolicy,
    SetStyle,
    Stop,
    ToolDone,
    TriggerContinuation,
    UpgradeAnswer,
    UserMessage,
    WindowReported,
)
from phoenix_lsp.core.notifications import Notification
from phoenix_lsp.core.rules import covers
from phoenix_lsp.core.state import (
    BUSY,
    AwaitingAgents,
    AwaitingApproval,
    AwaitingLlm,
    AwaitingUpgrade,
    ConversationState,
    Idle,
    RunningTool,
    Settings,
    Summarizing,
)
from phoenix_lsp.core.tools import TOOL_KINDS, ToolKind
from phoenix_lsp.core.values import Decision, Mode, Policy, Route, Style, Text, ToolUse, Usage
from phoenix_lsp.protocol import events as ev
from phoenix_lsp.protocol.base import Wire, to_wire
from phoenix_lsp.protocol.views import AgentRef, TokenCounts
from phoenix_lsp.server import wire
from tests.core.test_table import assert_declared

#: a gate that lets the events that end a run's progress through one time in four
RARE = st.integers(0, 3)
EXAMPLES = int(os.environ.get("PHOENIX_PROPERTY_EXAMPLES", "1000"))

# weighted towards the tools whose permissions matter
TOOL_NAMES = [*TOOL_KINDS, "invented_tool", "bash", "bash", "patch", "patch", "patch", "request_mode_upgrade",
              "request_mode_upgrade", "spawn_agents", "submit_result", "run_plan", "run_plan"]
#: the MCP tools a plan's scripts call (their kind comes from the capability manifest, outside the core)
HOST_TOOLS = ["mcp://records/update_record", "mcp://records/list_records", "mcp://other/delete"]
INPUTS = {
    "bash": [{"command": "ls"}, {"command": 3}, {}],
    "patch": [{"path": "a.py", "patches": []}, {}],
    "request_mode_upgrade": [{"reason": "need to edit"}] * 4 + [{"reason": ""}, {}],
    "spawn_agents": [{"tasks": ["look at a", "look at b"]}] * 3 + [{"tasks": []}, {"tasks": "x"}],
    "submit_result": [{"result": "done"}, {"result": 1}],
}
USAGES = [0, *([1_000] * 12), 165_000, 185_000, 199_999]


# ------------------------------------------------------------------------------- effects on the wire
# Each effect as the server puts it on the wire (phoenix_lsp/server/runtime/effects.py: ``HANDLERS``; a notification
# through phoenix_lsp/server/wire.py: ``notification_event``): the core's effect must give the protocol model it
# becomes every field that model needs.

ZERO_TOKENS = TokenCounts(input_tokens=0, output_tokens=0, cache_write_tokens=0, cache_read_tokens=0)
NOTIFY_MODELS: dict[type[Notification], type[Wire]] = {
    n.StatusChanged: ev.Status,
    n.ModeChanged: ev.ModeChanged,
    n.ModelChanged: ev.ModelChanged,
    n.StyleChanged: ev.StyleChanged,
    n.PolicyChanged: ev.PolicyChanged,
    n.RetryScheduled: ev.Retry,
    n.StyleSuggested: ev.StyleSuggestionEvent,
    n.ToolRefused: ev.ToolRefused,
    n.ErrorReported: ev.Error,
    n.AlwaysAllowChanged: ev.AlwaysAllowChanged,
    n.UsageReported: ev.Usage,
    n.ContextWarning: ev.ContextWarning,
    n.ContinuationStarted: ev.ContinuationStarted,
    n.ContextExhausted: ev.Continuation,
    n.ApprovalResolved: ev.ApprovalResolved,
    n.UpgradeResolved: ev.UpgradeResolved,
}


def billed() -> dict[str, Any]:
    """What the server adds to a usage notification: the billed tokens (zero here)."""
    return {"total": ZERO_TOKENS, "subAgents": ZERO_TOKENS}


def check_wire(effect: Effect) -> None:
    """``effect`` holds what the protocol model it becomes needs (issue 18)."""
    if isinstance(effect, Notification):
        event = wire.notification_event(effect, billed)  # raises on a missing or mistyped field
        assert type(event) is NOTIFY_MODELS[type(effect)], (effect, event)
        to_wire(event)
    elif isinstance(effect, AskApproval):
        ev.ApprovalRequested(tool_use_id=effect.call.id, tool_name=effect.call.name, description="d",
                             arguments=dict(effect.call.input), scopes=[wire.scope_to_wire(s) for s in effect.scopes])
        assert effect.scopes, "Always Allow always offers at least the narrowest scope"
    elif isinstance(effect, AskUpgrade):
        ev.UpgradeRequested(tool_use_id=effect.tool_use_id, reason=effect.reason)
        assert effect.reason.strip()
    elif isinstance(effect, RunTool):
        ev.ToolStart(tool_use_id=effect.call.id, tool_name=effect.call.name, arguments=dict(effect.call.input),
                     mode=effect.mode)
    elif isinstance(effect, SpawnAgents):
        assert effect.agents
        ev.SubAgentsSpawned(tool_use_id=effect.tool_use_id,
                            agents=[AgentRef(conversation_id=a.agent_id, task=a.task) for a in effect.agents])
    elif isinstance(effect, ReportToParent):
        ev.SubAgentFinished(agent_id=effect.agent_id, outcome="submitted" if effect.ok else "failed",
                            reason=None if effect.ok else effect.result)
        assert effect.ok or effect.result.strip(), "a failure says why"
    elif isinstance(effect, PersistMessage):
        ev.MessageAdded(message=wire.message_to_wire(effect.message, 1, effect.index, 0.0, lambda _: 1024))
    elif isinstance(effect, Reject):
        assert effect.code in get_args(RejectCode) and effect.message.strip()
    elif isinstance(effect, Audit):
        assert effect.action and all(isinstance(k, str) for k in effect.detail)


@dataclass
class Step:
    before: ConversationState
    event: Event
    after: ConversationState
    effects: tuple[Effect, ...]


def _request_id(state: ConversationState) -> int | None:
    status = state.status
    return status.request_id if isinstance(status, AwaitingLlm | Summarizing) else None


class ConversationMachine(RuleBasedStateMachine):
    """Drives one conversation (a user conversation or a sub-agent) through random events."""

    def __init__(self) -> None:
        super().__init__()
        self.state: ConversationState
        self.tool_counter = 0
        self.last: Step | None = None
        self.host_kinds: dict[str, ToolKind] = {}  # host call id -> the kind it was asked with

    @initialize(
        sandbox=st.sampled_from([True, True, False]),
        subagent=st.sampled_from([False, False, False, False, True]),
        policy=st.sampled_from(Policy),
        execute=st.booleans(),
    )
    def start(self, sandbox: bool, subagent: bool, policy: Policy, execute: bool) -> None:
        extra: dict[str, object] = {"policy": policy, "settings": Settings(max_turns=6 if subagent else None)}
        if subagent:
            extra.update(is_subagent=True, parent_id="parent")
        self.state = machine.new_conversation("c", model="m", working_directory="/w", sandbox=sandbox, **extra)
        assert self.state.mode is (Mode.RESTRICTED if sandbox else Mode.UNRESTRICTED)  # REQ-BED-014
        if execute:  # half of the runs begin with the user's /execute, so Unrestricted paths get deep
            self.step(UserMessage("/execute"))

    # ------------------------------------------------------------------ the step and its invariants

    def step(self, event: Event) -> None:
        before = self.state
        after, effects = machine.transition(before, event)
        again = machine.transition(before, event)
        assert again == (after, effects), "REQ-BED-001: same state and event must give the same result"
        self.last = Step(before, event, after, effects)
        self.check_step(self.last)
        self.state = after

    def check_step(self, s: Step) -> None:
        before, event, after, effects = s.before, s.event, s.after, s.effects
        assert_declared(before, event, after)  # REQ-CORE-003: to a status the table declares
        # an illegal or refused event changes nothing
        if any(isinstance(e, Reject) for e in effects):
            assert after is before and len(effects) == 1
        # REQ-BED-007: persistence first, history append-only and contiguous
        kinds = [isinstance(e, PersistMessage | PersistState) for e in effects]
        if True in kinds:
            last_persist = max(i for i, k in enumerate(kinds) if k)
            assert all(kinds[: last_persist + 1]), f"persist effects must come first: {effects}"
        assert after.history[: len(before.history)] == before.history, "history is append-only"
        appended = [e for e in effects if isinstance(e, PersistMessage)]
        assert [e.index for e in appended] == list(range(len(before.history), len(after.history)))
        assert tuple(e.message for e in appended) == after.history[len(before.history) :]
        if after is not before:
            assert any(isinstance(e, PersistState) for e in effects), "a changed state is persisted"
        # seed 000 invariant 6: without the sandbox the mode is always Unrestricted
        if not after.sandbox:
            assert after.mode is Mode.UNRESTRICTED
        # seed 000 invariant 5 / REQ-LAYER-002: no escalation without a user approval or user command
        if before.mode is Mode.RESTRICTED and after.mode is Mode.UNRESTRICTED:
            by_approval = (
                isinstance(event, UpgradeAnswer) and event.approve and isinstance(before.status, AwaitingUpgrade)
            )
            by_command = (isinstance(event, SetMode) and event.mode is Mode.UNRESTRICTED) or (
                isinstance(event, UserMessage) and event.text.strip() == "/execute"
            )
            assert by_approval or by_command, f"escalation by {event}"
        # REQ-BED-018 (001's form): a sub-agent's mode never changes
        if before.is_subagent:
            assert after.mode is before.mode
        # seed 000 invariant 3 / REQ-PATCH-009: no write-capable effect while Restricted
        for e in effects:
            check_wire(e)
            if isinstance(e, RunTool):
                assert e.mode is after.mode, "a tool runs under the current mode"
                if TOOL_KINDS.get(e.call.name) is ToolKind.WRITE:
                    assert e.mode is Mode.UNRESTRICTED, "patch never runs Restricted"
                if TOOL_KINDS.get(e.call.name) in (ToolKind.WRITE, ToolKind.EXEC) and e.mode is Mode.UNRESTRICTED:
                    # REQ-PERM-001/002: without asking only under auto or always-allow, or right after an Allow
                    asked_now = isinstance(event, ApprovalAnswer) and event.decision is not Decision.DENY
                    assert (
                        after.policy is Policy.AUTO or covers(after.always_allow, e.call) or asked_now
                    ), "interactive policy must ask first"
                assert TOOL_KINDS.get(e.call.name) is not None, "an invented tool never runs"
            if isinstance(e, AskApproval):
                kind = TOOL_KINDS.get(e.call.name) or self.host_kinds[e.call.id]
                assert after.mode is Mode.UNRESTRICTED and kind in (ToolKind.WRITE, ToolKind.EXEC)
            # REQ-AGENT-014/015: a plan's write goes ahead only Unrestricted, and only under auto, an always-allow
            # rule or the user's Allow of that very call; every answer is to a call that was asked about
            if isinstance(e, AnswerHostCall):
                kind = self.host_kinds[e.call_id]
                if e.allowed and kind is ToolKind.WRITE:
                    answered = (isinstance(event, ApprovalAnswer) and event.tool_use_id == e.call_id
                                and event.decision is not Decision.DENY)
                    assert before.mode is Mode.UNRESTRICTED and after.mode is Mode.UNRESTRICTED
                    call = ToolUse(e.call_id, HOST_TOOLS[0], {})
                    assert answered or after.policy is Policy.AUTO or any(
                        r.tool in HOST_TOOLS for r in after.always_allow) or covers(after.always_allow, call), (
                        "a write host call needs auto, always-allow or the user's Allow")
                if e.allowed and kind is ToolKind.PLAN:  # an approval node passes only where writes may run
                    assert before.mode is Mode.UNRESTRICTED and after.mode is Mode.UNRESTRICTED
                if not e.allowed and e.by == "mode":
                    assert after.mode is Mode.RESTRICTED, "only Restricted refuses for the mode"
                if isinstance(event, Cancel):
                    assert not e.allowed
            # REQ-BED-018: sub-agents start Restricted whenever the sandbox exists
            if isinstance(e, SpawnAgents):
                assert e.mode is (Mode.RESTRICTED if after.sandbox else Mode.UNRESTRICTED)
        # seed 000 invariant 1: only the user's answer (or the user's cancel) leaves AwaitingUpgrade
        if isinstance(before.status, AwaitingUpgrade) and not isinstance(after.status, AwaitingUpgrade):
            by_command = isinstance(event, SetMode) or (
                isinstance(event, UserMessage) and event.text.strip() in ("/execute", "/plan")
            )
            assert isinstance(event, UpgradeAnswer | Cancel) or by_command, f"left AwaitingUpgrade by {event}"
        # REQ-LAYER-001: a style change changes nothing but the style
        if isinstance(event, SetStyle):
            assert (after.mode, after.policy, after.always_allow, after.status) == (
                before.mode,
                before.policy,
                before.always_allow,
                before.status,
            )
        # seed 000 invariant 4: a downgrade from idle always succeeds at once
        if (
            isinstance(event, SetMode)
            and event.mode is Mode.RESTRICTED
            and isinstance(before.status, Idle)
            and before.sandbox
            and not before.is_subagent
        ):
            assert after.mode is Mode.RESTRICTED
        # REQ-BED-005: cancellation from any busy status reaches idle
        if isinstance(event, Cancel) and isinstance(before.status, BUSY):
            assert isinstance(after.status, Idle)
        # synthetic notes are never left behind once no batch is open
        if not isinstance(after.status, BUSY):
            assert after.notes == ()
        # the state survives the store
        assert codec.decode_state(codec.encode_state(after), after.history) == after

    @invariant()
    def message_chain_integrity(self) -> None:
        """Every tool_use gets exactly one tool_result, in the next message, in order (REQ-BED-004/005)."""
        if not hasattr(self, "state"):
            return
        history = self.state.history
        open_batch = hasattr(self.state.status, "batch")  # a status that holds a tool batch
        seen_results: set[str] = set()
        for i, message in enumerate(history):
            results = message.tool_results()
            for r in results:
                assert r.tool_use_id not in seen_results
                seen_results.add(r.tool_use_id)
            if results:
                assert message.role == "user"
                previous = history[i - 1]
                assert previous.role == "assistant"
                assert [r.tool_use_id for r in results] == [c.id for c in previous.tool_uses()]
            uses = message.tool_uses()
            if uses:
                if i + 1 < len(history):
                    assert [r.tool_use_id for r in history[i + 1].tool_results()] == [c.id for c in uses]
                else:
                    assert open_batch, "a tool_use without results outside a running batch"
                    assert self.state.status.batch.calls == uses  # type: ignore[union-attr]

    # ------------------------------------------------------------------------------------- rules
    # Progress rules carry preconditions so that runs get deep (approvals, upgrades, sub-agents); the
    # ``junk`` rule sends any event at any time with stale or bogus ids.

    @rule(data=st.data())
    def advance(self, data: st.DataObject) -> None:
        """The natural next event for the current status, so that runs reach every status."""
        status = self.state.status
        if isinstance(status, AwaitingLlm | Summarizing):
            if data.draw(st.integers(0, 4)) == 0:
                self.step(LlmFailed(status.request_id, data.draw(st.booleans()), "boom"))
                return
            content: list[Text | ToolUse] = [Text("thinking aloud")] if data.draw(st.booleans()) else []
            for _ in range(data.draw(st.sampled_from([0, 1, 1, 2, 3]))):
                name = data.draw(st.sampled_from(TOOL_NAMES))
                self.tool_counter += 1
                tool_input = data.draw(st.sampled_from(INPUTS.get(name, [{"path": "."}])))
                content.append(ToolUse(f"t{self.tool_counter}", name, tool_input))
            stop = data.draw(st.sampled_from(["end_turn", "tool_use", "max_tokens"]))
            tokens = data.draw(st.sampled_from(USAGES))
            self.step(LlmDone(status.request_id, tuple(content), stop, Usage(input_tokens=tokens)))
        elif isinstance(status, RunningTool):
            current = status.batch.current
            if current.name == "run_plan" and data.draw(st.integers(0, 2)) != 0:
                self.tool_counter += 1
                call = ToolUse(f"h{self.tool_counter}", data.draw(st.sampled_from(HOST_TOOLS)), {"id": 1})
                kind = data.draw(st.sampled_from([ToolKind.WRITE, ToolKind.WRITE, ToolKind.READ, ToolKind.PLAN]))
                self.host_kinds[call.id] = kind
                self.step(HostCall(current.id, call, kind))
                return
            self.step(ToolDone(current.id, "output", data.draw(st.booleans()), data.draw(st.booleans())))
        elif isinstance(status, AwaitingApproval):
            self.step(ApprovalAnswer(status.tool_use_id, data.draw(st.sampled_from(Decision))))
        elif isinstance(status, AwaitingUpgrade):
            self.step(UpgradeAnswer(data.draw(st.booleans())))
        elif isinstance(status, AwaitingAgents):
            waiting = [a.agent_id for a in status.agents if not a.done]
            self.step(AgentEnded(waiting[0], data.draw(st.booleans()), "result"))
        else:
            text = data.draw(st.sampled_from(["hello", "hello", "fix it", "/execute", "/plan", ""]))
            self.step(UserMessage(text, route=data.draw(st.sampled_from(Route))))

    @precondition(lambda self: isinstance(self.state.status, BUSY))
    @rule(command=st.sampled_from(["/plan", "setMode"]))
    def downgrade_while_busy(self, command: str) -> None:
        """REQ-PATCH-009: a downgrade during a turn applies to every call that has not started."""
        self.step(UserMessage("/plan") if command == "/plan" else SetMode(Mode.RESTRICTED))

    @rule(
        event=st.one_of(
            st.builds(SetMode, st.sampled_from(Mode)),
            st.builds(SetStyle, st.sampled_from(Style)),
            st.builds(SetPolicy, st.sampled_from(Policy)),
            st.builds(RevokeAlwaysAllow, st.sampled_from(["bash", "patch", "nope"])),
        )
    )
    def user_setting(self, event: Event) -> None:
        self.step(event)

    @rule(
        gate=RARE,
        event=st.one_of(
            st.builds(SetModel, st.sampled_from(["m", "n"]), st.sampled_from([1_000, 200_000, 1_000_000])),
            st.builds(WindowReported, st.sampled_from(["m", "n"]), st.sampled_from([0, 8_192, 200_000])),
            st.builds(SetInstructions, st.sampled_from(["", "be brief"]), st.just(())),
            st.builds(AgentUsage, st.just("c.t1.0"), st.builds(Usage, st.integers(0, 5_000))),
        ),
    )
    def rare_setting(self, gate: int, event: Event) -> None:
        """The model, its window, the project instructions, a sub-agent's tokens: the events of the table the
        other rules never send (REQ-CORE-003 checks them too)."""
        if gate == 0:
            self.step(event)

    @rule(
        gate=RARE,
        event=st.sampled_from([Cancel(), Cancel(), Stop("timed out"), Restore(), Restore(), TriggerContinuation()]),
    )
    def interruption(self, gate: int, event: Event) -> None:
        if gate != 0:
            return
        before = self.state
        self.step(event)
        if isinstance(event, Restore):
            # REQ-BED-007: after a restart nothing is running; only requests waiting for the user survive
            kind = self.state.status.kind
            assert kind not in ("awaiting_llm", "running_tool", "awaiting_agents", "summarizing")
            waiting = isinstance(before.status, AwaitingUpgrade) or (
                isinstance(before.status, AwaitingApproval) and before.status.host_call is None)
            if waiting and not before.is_subagent:
                assert self.state.status == before.status

    @rule(
        event=st.one_of(
            st.builds(UserMessage, st.sampled_from(["hi", "/execute", "/plan"])),
            st.builds(LlmDone, st.integers(900, 999), st.just((Text("late"),)), st.just("end_turn")),
            st.builds(LlmFailed, st.integers(900, 999), st.booleans(), st.just("late")),
            st.builds(ToolDone, st.sampled_from(["t-stale", "t1"]), st.just("late")),
            st.builds(ApprovalAnswer, st.sampled_from(["bogus", "t1"]), st.sampled_from(Decision)),
            st.builds(UpgradeAnswer, st.booleans()),
            st.builds(AgentEnded, st.sampled_from(["nobody", "c.t1.0"]), st.booleans(), st.just("r")),
            st.builds(HostCall, st.sampled_from(["t1", "t-stale"]),
                      st.builds(ToolUse, st.sampled_from(["h-junk"]), st.sampled_from(HOST_TOOLS), st.just({})),
                      st.sampled_from([ToolKind.WRITE, ToolKind.READ, ToolKind.EXEC])),
        )
    )
    def junk(self, event: Event) -> None:
        if isinstance(event, HostCall):
            self.host_kinds[event.call.id] = event.kind
        self.step(event)


ConversationMachine.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

TestConversationMachine = pytest.mark.req(
    "REQ-BED-001",
    "REQ-CORE-003",
    "REQ-CORE-004",
    "REQ-CORE-005",
    "REQ-CORE-006",
    "REQ-BED-004",
    "REQ-BED-005",
    "REQ-BED-007",
    "REQ-BED-014",
    "REQ-BED-015",
    "REQ-BED-016",
    "REQ-BED-018",
    "REQ-PATCH-009",
    "REQ-LAYER-001",
    "REQ-LAYER-002",
    "REQ-PERM-001",
    "REQ-PERM-002",
    "REQ-SEC-003",
)(ConversationMachine.TestCase)
