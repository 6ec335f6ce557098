"""Example-based tests of the pure core, one behaviour each, named by the requirement they prove."""

from __future__ import annotations

import ast
import pathlib
from collections.abc import Iterable

import pytest

from phoenix_lsp.core import machine, transition
from phoenix_lsp.core.effects import (
    AskApproval,
    AskUpgrade,
    Audit,
    CancelLlm,
    CancelTool,
    Effect,
    PersistMessage,
    Reject,
    ReportToParent,
    RequestLlm,
    RunTool,
    SpawnAgents,
    StopAgents,
)
from phoenix_lsp.core.events import (
    AgentEnded,
    ApprovalAnswer,
    Cancel,
    Event,
    LlmDone,
    LlmFailed,
    Restore,
    RevokeAlwaysAllow,
    SetMode,
    SetPolicy,
    SetStyle,
    Stop,
    ToolDone,
    TriggerContinuation,
    UpgradeAnswer,
    UserMessage,
)
from phoenix_lsp.core.notifications import (
    ContextExhausted,
    ContextWarning,
    ContinuationStarted,
    ModeChanged,
    Notification,
    RetryScheduled,
    StyleSuggested,
)
from phoenix_lsp.core.permissions import PATCH_DISABLED
from phoenix_lsp.core.rules import AllowRule
from phoenix_lsp.core.state import (
    AwaitingAgents,
    AwaitingApproval,
    AwaitingLlm,
    AwaitingUpgrade,
    ConversationState,
    Error,
    Exhausted,
    Finished,
    Idle,
    RunningTool,
    Settings,
    Summarizing,
)
from phoenix_lsp.core.tools import CONVERSATION_TOOLS, SUBAGENT_TOOLS
from phoenix_lsp.core.values import Decision, Image, Mode, Policy, Style, Text, ToolUse, Usage

Effects = tuple[Effect, ...]


def fresh(sandbox: bool = True, **fields: object) -> ConversationState:
    return machine.new_conversation("c1", model="m", working_directory="/w", sandbox=sandbox, **fields)


def run(state: ConversationState, *events: Event) -> tuple[ConversationState, Effects]:
    effects: Effects = ()
    for event in events:
        state, effects = transition(state, event)
    return state, effects


#: what the context notifications of a response may say: a warning, a continuation, the end
CONTEXT = (ContextWarning, ContinuationStarted, ContextExhausted)


def of(effects: Iterable[Effect], kind: object) -> list:  # type: ignore[type-arg]
    return [e for e in effects if isinstance(e, kind)]


def tool(i: int, name: str, **tool_input: object) -> ToolUse:
    return ToolUse(f"t{i}", name, tool_input)


def reply(rid: int, *calls: ToolUse, text: str = "", stop: str = "tool_use", tokens: int = 1000) -> LlmDone:
    content: tuple[Text | ToolUse, ...] = ((Text(text),) if text else ()) + calls
    return LlmDone(rid, content, stop if calls else "end_turn", Usage(input_tokens=tokens))


def unrestricted(**fields: object) -> ConversationState:
    return run(fresh(**fields), UserMessage("/execute"))[0]


# --------------------------------------------------------------------------------------------- purity


@pytest.mark.req("REQ-BED-001", "REQ-CORE-001")
def test_core_imports_no_io() -> None:
    forbidden = {
        "asyncio",
        "pygls",
        "lsprotocol",
        "subprocess",
        "sqlite3",
        "time",
        "random",
        "socket",
        "os",
        "threading",
        "anthropic",
        "pydantic",
        "datetime",
        "uuid",
    }
    core = pathlib.Path(machine.__file__).parent
    for path in core.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in forbidden, f"{path.name} imports {name}"


@pytest.mark.req("REQ-BED-001", "REQ-CORE-002")
def test_values_are_frozen() -> None:
    state = fresh()
    with pytest.raises(AttributeError):
        state.mode = Mode.UNRESTRICTED  # type: ignore[misc]
    with pytest.raises(AttributeError):
        UserMessage("x").text = "y"  # type: ignore[misc]


@pytest.mark.req("REQ-CORE-003", "REQ-CORE-004")
def test_illegal_event_is_refused_and_changes_nothing() -> None:
    state = fresh()
    new, effects = transition(state, ToolDone("t1", "out"))
    assert new is state
    assert len(effects) == 1 and isinstance(effects[0], Reject)
    assert "ToolDone is not accepted while the conversation is idle" in effects[0].message
    # the table is data: every status has an entry
    assert {s.__name__ for s in machine.TABLE} >= {"Idle", "AwaitingLlm", "RunningTool", "AwaitingUpgrade"}


# ------------------------------------------------------------------------------------ messages, turns


@pytest.mark.req("REQ-BED-002")
def test_user_message_when_idle_requests_llm() -> None:
    state, effects = run(fresh(), UserMessage("hello"))
    assert isinstance(state.status, AwaitingLlm)
    assert state.history[-1].text() == "hello"
    assert of(effects, RequestLlm) == [RequestLlm(1)]


@pytest.mark.req("REQ-BED-002")
def test_user_message_when_busy_is_rejected_with_cancel_hint() -> None:
    state, _ = run(fresh(), UserMessage("hello"))
    new, effects = transition(state, UserMessage("again"))
    assert new is state
    assert isinstance(effects[0], Reject) and effects[0].code == "busy"
    assert "busy" in effects[0].message and "cancel" in effects[0].message


@pytest.mark.req("REQ-BED-013")
def test_images_go_into_the_user_message_as_references() -> None:
    state, _ = run(fresh(), UserMessage("look", (Image("sha256:ab", "image/png"),)))
    assert state.history[-1].content == (Text("look"), Image("sha256:ab", "image/png"))


@pytest.mark.req("REQ-BED-003")
def test_text_end_turn_goes_idle_and_persists() -> None:
    state, effects = run(fresh(), UserMessage("hi"), reply(1, text="hello there"))
    assert isinstance(state.status, Idle)
    assert [e.message.text() for e in of(effects, PersistMessage)] == ["hello there"]


@pytest.mark.req("REQ-BED-003")
def test_text_without_end_turn_keeps_awaiting() -> None:
    state, effects = run(fresh(), UserMessage("hi"), LlmDone(1, (Text("part"),), "max_tokens"))
    assert isinstance(state.status, AwaitingLlm)
    assert of(effects, RequestLlm) == [RequestLlm(2)]


@pytest.mark.req("REQ-BED-003", "REQ-BED-004")
def test_tools_run_serially_in_order_and_results_go_together() -> None:
    state, effects = run(
        fresh(), UserMessage("hi"), reply(1, tool(1, "read_file", path="a"), tool(2, "list_directory"))
    )
    assert [e.call.id for e in of(effects, RunTool)] == ["t1"]  # only the first starts
    state, effects = transition(state, ToolDone("t1", "A"))
    assert [e.call.id for e in of(effects, RunTool)] == ["t2"]
    assert not of(effects, PersistMessage)  # results are not sent one by one
    state, effects = transition(state, ToolDone("t2", "boom", is_error=True))
    results = state.history[-1].tool_results()
    assert [(r.tool_use_id, r.content, r.is_error) for r in results] == [("t1", "A", False), ("t2", "boom", True)]
    assert isinstance(state.status, AwaitingLlm) and of(effects, RequestLlm)


# --------------------------------------------------------------------------------------- cancellation


@pytest.mark.req("REQ-BED-005")
def test_cancel_during_llm_aborts_and_persists_nothing_partial() -> None:
    state, _ = run(fresh(), UserMessage("hi"))
    state, effects = transition(state, Cancel())
    assert isinstance(state.status, Idle)
    assert of(effects, CancelLlm) == [CancelLlm(1)]
    assert not of(effects, PersistMessage)
    late, effects = transition(state, reply(1, text="too late"))  # completion after cancel loses
    assert late is state and isinstance(effects[0], Reject)


@pytest.mark.req("REQ-BED-005")
def test_cancel_during_tool_kills_it_and_fills_synthetic_results() -> None:
    state, _ = run(
        fresh(), UserMessage("hi"), reply(1, tool(1, "bash", command="sleep 9"), tool(2, "read_file", path="a"))
    )
    state, effects = transition(state, Cancel())
    assert of(effects, CancelTool) == [CancelTool("t1")]
    assert isinstance(state.status, Idle)
    results = state.history[-1].tool_results()
    assert [r.tool_use_id for r in results] == ["t1", "t2"] and all(r.is_error for r in results)
    assert "Cancelled" in results[0].content and "Not executed" in results[1].content
    assert transition(state, ToolDone("t1", "late"))[0] is state


# ---------------------------------------------------------------------------------------------- retries


@pytest.mark.req("REQ-BED-006")
def test_retries_three_times_with_backoff_then_error() -> None:
    state, _ = run(fresh(settings=Settings(retry_base_ms=100)), UserMessage("hi"))
    delays = []
    for rid in (1, 2, 3):
        state, effects = transition(state, LlmFailed(rid, True, "overloaded", 529))
        assert isinstance(state.status, AwaitingLlm)
        (request,) = of(effects, RequestLlm)
        delays.append(request.delay_ms)
        assert isinstance(of(effects, Notification)[0], RetryScheduled)
    assert delays == [100, 200, 400]
    state, _ = transition(state, LlmFailed(4, True, "overloaded", 529))
    assert isinstance(state.status, Error) and "after 3 retries" in state.status.message
    state, effects = transition(state, UserMessage("try again"))  # error state accepts a message
    assert isinstance(state.status, AwaitingLlm)


@pytest.mark.req("REQ-BED-006")
def test_retry_after_is_honoured_up_to_the_cap_and_shown() -> None:
    state, _ = run(fresh(settings=Settings(retry_base_ms=100, retry_after_max_ms=30_000)), UserMessage("hi"))
    # longer than the backoff: waited; shorter: the backoff wins; beyond the cap: the cap
    asked = [(5_000, 5_000), (50, 200), (3_600_000, 30_000)]
    for rid, (retry_after, waited) in enumerate(asked, start=1):
        state, effects = transition(state, LlmFailed(rid, True, "rate limited (HTTP 429)", 429, retry_after))
        (request,) = of(effects, RequestLlm)
        assert request.delay_ms == waited
        (notice,) = of(effects, Notification)
        assert isinstance(notice, RetryScheduled)
        assert notice.delay_ms == waited and notice.retry_after_ms == retry_after
    state, effects = transition(state, LlmFailed(4, True, "rate limited (HTTP 429)", 429, 1_000))
    assert isinstance(state.status, Error) and not of(effects, RequestLlm)


@pytest.mark.req("REQ-BED-006")
def test_exhausted_retries_say_so_once() -> None:
    state, _ = run(fresh(settings=Settings(retry_base_ms=1)), UserMessage("hi"))
    for rid in (1, 2, 3, 4):
        state, _ = transition(state, LlmFailed(rid, True, "The API is overloaded (HTTP 529).", 529))
    assert isinstance(state.status, Error)
    assert state.status.message == (
        "The LLM request failed after 3 retries: The API is overloaded (HTTP 529). Send a message to try again."
    )


@pytest.mark.req("REQ-BED-006")
def test_auth_error_goes_to_error_at_once() -> None:
    state, _ = run(fresh(), UserMessage("hi"))
    state, effects = transition(state, LlmFailed(1, False, "authentication failed: check ANTHROPIC_API_KEY", 401))
    assert isinstance(state.status, Error) and "ANTHROPIC_API_KEY" in state.status.message
    assert not of(effects, RequestLlm)


# ---------------------------------------------------------------------------------------- persistence


@pytest.mark.req("REQ-BED-007")
def test_restore_returns_to_idle_but_keeps_open_requests() -> None:
    state, _ = run(fresh(), UserMessage("hi"), reply(1, tool(1, "bash", command="ls")))
    restored, _ = transition(state, Restore())
    assert isinstance(restored.status, Idle)
    assert "server restarted" in restored.history[-1].tool_results()[0].content
    waiting, _ = run(fresh(), UserMessage("hi"), reply(1, tool(1, "request_mode_upgrade", reason="edit")))
    restored, effects = transition(waiting, Restore())
    assert restored.status == waiting.status
    assert of(effects, AskUpgrade) == [AskUpgrade("t1", "edit")]


# -------------------------------------------------------------------------------------------- modes


@pytest.mark.req("REQ-BED-014")
def test_starts_restricted_with_sandbox_else_unrestricted_only() -> None:
    assert fresh(sandbox=True).mode is Mode.RESTRICTED
    state = fresh(sandbox=False)
    assert state.mode is Mode.UNRESTRICTED
    new, effects = transition(state, SetMode(Mode.RESTRICTED))
    assert new is state and effects[0].code == "sandbox_unavailable"  # type: ignore[union-attr]
    assert "Landlock" in effects[0].message  # type: ignore[union-attr]


@pytest.mark.req("REQ-BED-014", "REQ-PATCH-009", "REQ-BED-017")
def test_patch_refused_in_restricted_with_exact_message_bash_runs_sandboxed() -> None:
    state, effects = run(
        fresh(), UserMessage("hi"), reply(1, tool(1, "patch", path="a", patches=[]), tool(2, "bash", command="ls"))
    )
    assert of(effects, RunTool) == [RunTool(tool(2, "bash", command="ls"), Mode.RESTRICTED)]
    assert isinstance(state.status, RunningTool)
    assert state.status.batch.results[0].content == PATCH_DISABLED
    assert any(a.action == "toolRefused" for a in of(effects, Audit))


@pytest.mark.req("REQ-BED-015", "REQ-BED-017")
def test_upgrade_request_waits_then_approval_switches_mode_with_note() -> None:
    state, effects = run(fresh(), UserMessage("hi"), reply(1, tool(1, "request_mode_upgrade", reason="fix bug")))
    assert isinstance(state.status, AwaitingUpgrade) and of(effects, AskUpgrade) == [AskUpgrade("t1", "fix bug")]
    # nothing but the user's answer moves it on: the model, tools and time have no say
    for event in (reply(1, text="x"), ToolDone("t1", "x"), LlmFailed(1, True, "x")):
        assert transition(state, event)[0] is state
    state, effects = transition(state, UpgradeAnswer(True))
    assert state.mode is Mode.UNRESTRICTED and isinstance(state.status, AwaitingLlm)
    last = state.history[-1]
    assert last.tool_results()[0].content.startswith("The user approved")
    assert "now in Unrestricted mode" in last.text()  # the synthetic system message
    assert any(isinstance(e, ModeChanged) for e in effects)


@pytest.mark.req("REQ-BED-015")
def test_upgrade_denied_stays_restricted_and_turn_goes_on() -> None:
    state, _ = run(fresh(), UserMessage("hi"), reply(1, tool(1, "request_mode_upgrade", reason="x")))
    state, _effects = transition(state, UpgradeAnswer(False))
    assert state.mode is Mode.RESTRICTED and isinstance(state.status, AwaitingLlm)
    assert "denied" in state.history[-1].tool_results()[0].content


@pytest.mark.req("REQ-BED-015")
def test_upgrade_in_unrestricted_says_already() -> None:
    state, _ = run(unrestricted(), UserMessage("hi"), reply(1, tool(1, "request_mode_upgrade", reason="x")))
    assert state.history[-1].tool_results()[0].content.startswith("Already in Unrestricted mode")


@pytest.mark.req("REQ-BED-016", "REQ-BED-017")
def test_downgrade_is_immediate_and_noted() -> None:
    state = unrestricted()
    state, effects = transition(state, SetMode(Mode.RESTRICTED))
    assert state.mode is Mode.RESTRICTED
    assert state.history[-1].tag == "note" and "Restricted mode" in state.history[-1].text()
    assert any(isinstance(e, Audit) and e.action == "modeChanged" for e in effects)


@pytest.mark.req("REQ-BED-016", "REQ-PATCH-009")
def test_downgrade_during_tool_applies_to_the_next_call_only() -> None:
    state, _ = run(
        unrestricted(policy=Policy.AUTO),
        UserMessage("hi"),
        reply(1, tool(1, "patch", path="a", patches=[]), tool(2, "patch", path="b", patches=[])),
    )
    assert isinstance(state.status, RunningTool)  # t1 is in flight, Unrestricted
    state, effects = transition(state, UserMessage("/plan"))
    assert not of(effects, CancelTool)  # the edit in flight is not cut
    state, effects = transition(state, ToolDone("t1", "applied"))
    results = (
        state.history[-2].tool_results() if state.history[-1].role == "assistant" else state.history[-1].tool_results()
    )
    assert results[0].content == "applied" and results[1].content == PATCH_DISABLED
    assert not of(effects, RunTool)


@pytest.mark.req("REQ-LAYER-002")
def test_user_commands_do_not_reach_the_model() -> None:
    state, effects = run(fresh(), UserMessage("/execute"))
    assert state.mode is Mode.UNRESTRICTED and not of(effects, RequestLlm)
    state, effects = transition(state, UserMessage(" /plan "))
    assert state.mode is Mode.RESTRICTED and not of(effects, RequestLlm)


# --------------------------------------------------------------------------------- seed 002 mandatory


@pytest.mark.req("REQ-LAYER-001", "REQ-LAYER-002")
def test_mode_cannot_bypass_phase() -> None:
    """Seed 002: changing style in planning (Restricted) must not grant execution capabilities."""
    state, _ = run(fresh(), SetStyle(Style.DEVELOPMENT))
    assert state.mode is Mode.RESTRICTED
    state, _ = run(state, UserMessage("hi"), reply(1, tool(1, "patch", path="a", patches=[])))
    assert state.history[-1].tool_results()[0].content == PATCH_DISABLED


@pytest.mark.req("REQ-LAYER-001")
def test_mode_change_preserves_phase() -> None:
    """Seed 002: style changes preserve the current mode, policy and approvals."""
    state = unrestricted()
    for style in Style:
        new, _ = transition(state, SetStyle(style))
        assert (new.mode, new.policy, new.always_allow) == (state.mode, state.policy, state.always_allow)


@pytest.mark.req("REQ-LAYER-002", "REQ-LAYER-006")
def test_phase_transition_requires_explicit_command() -> None:
    """Seed 002: a style may suggest a mode but only an explicit command changes it."""
    state, effects = run(fresh(), SetStyle(Style.DEVELOPMENT))
    assert state.mode is Mode.RESTRICTED
    suggestion = [e for e in effects if isinstance(e, StyleSuggested)]
    assert suggestion and "/execute" in str(suggestion[0].text)
    state, _ = transition(state, UserMessage("/execute"))
    assert state.mode is Mode.UNRESTRICTED


# ------------------------------------------------------------------------------------------- approvals


@pytest.mark.req("REQ-PERM-002", "REQ-PERM-004")
def test_interactive_asks_denied_goes_back_approved_still_run() -> None:
    state, effects = run(
        unrestricted(), UserMessage("hi"), reply(1, tool(1, "bash", command="make"), tool(2, "patch", path="a"))
    )
    assert of(effects, AskApproval) == [AskApproval(tool(1, "bash", command="make"), (AllowRule("bash"),))]
    assert isinstance(state.status, AwaitingApproval)
    state, effects = transition(state, ApprovalAnswer("t1", Decision.DENY))
    assert isinstance(state.status, AwaitingApproval) and state.status.tool_use_id == "t2"
    state, effects = transition(state, ApprovalAnswer("t2", Decision.ALLOW))
    assert [e.call.id for e in of(effects, RunTool)] == ["t2"]
    state, _ = transition(state, ToolDone("t2", "applied"))
    results = state.history[-1].tool_results()
    assert "denied" in results[0].content and results[0].is_error and results[1].content == "applied"


@pytest.mark.req("REQ-PERM-001")
def test_auto_policy_runs_without_asking() -> None:
    _state, effects = run(unrestricted(policy=Policy.AUTO), UserMessage("hi"), reply(1, tool(1, "bash", command="x")))
    assert of(effects, RunTool) and not of(effects, AskApproval)


@pytest.mark.req("REQ-PERM-003")
def test_always_allow_is_remembered_and_revocable() -> None:
    state, _ = run(unrestricted(), UserMessage("hi"), reply(1, tool(1, "bash", command="a")))
    state, effects = run(state, ApprovalAnswer("t1", Decision.ALWAYS_ALLOW), ToolDone("t1", "ok"))
    assert state.always_allow == (AllowRule("bash"),)  # an unparsed command: only the whole tool covers it
    state, effects = run(state, reply(2, tool(2, "bash", command="b")))
    assert of(effects, RunTool) and not of(effects, AskApproval)
    state, effects = run(state, ToolDone("t2", "ok"), reply(3, text="done"), RevokeAlwaysAllow("bash"))
    assert state.always_allow == ()
    state, effects = run(state, UserMessage("more"), reply(4, tool(3, "bash", command="c")))
    assert of(effects, AskApproval)


@pytest.mark.req("REQ-PERM-006")
def test_second_answer_and_unknown_answer_are_errors() -> None:
    state, _ = run(unrestricted(), UserMessage("hi"), reply(1, tool(1, "bash", command="a")))
    state, _ = transition(state, ApprovalAnswer("t1", Decision.ALLOW))
    again, effects = transition(state, ApprovalAnswer("t1", Decision.DENY))
    assert again is state and effects[0].code == "no_such_approval"  # type: ignore[union-attr]


@pytest.mark.req("REQ-PERM-007")
def test_policy_switch_applies_from_the_next_call() -> None:
    state, _ = run(
        unrestricted(), UserMessage("hi"), reply(1, tool(1, "bash", command="a"), tool(2, "bash", command="b"))
    )
    state, effects = transition(state, SetPolicy(Policy.AUTO))
    assert isinstance(state.status, AwaitingApproval)  # the open request stays open
    state, effects = run(state, ApprovalAnswer("t1", Decision.ALLOW), ToolDone("t1", "ok"))
    assert [e.call.id for e in of(effects, RunTool)] == ["t2"]  # next call: no question


@pytest.mark.req("REQ-SEC-002", "REQ-SEC-003")
def test_invented_tool_gets_an_error_result() -> None:
    state, effects = run(fresh(), UserMessage("hi"), reply(1, tool(1, "format_disk")))
    result = state.history[-1].tool_results()[0]
    assert result.is_error and "Unknown tool 'format_disk'" in result.content
    assert not of(effects, RunTool)


@pytest.mark.req("REQ-CORE-008", "REQ-SEC-002")
def test_a_call_with_invalid_input_is_answered_with_its_error_never_run_asked_or_handled() -> None:
    bad = "Invalid {} input: your input was not valid JSON: Expecting value. The call was not run; ..."
    calls = [ToolUse(f"t{i}", name, {}, input_error=bad.format(name))
             for i, name in enumerate(("bash", "patch", "request_mode_upgrade", "spawn_agents"), 1)]
    # unrestricted + interactive: a valid bash or patch call would wait for approval, the control tools would act
    state, effects = run(unrestricted(), UserMessage("hi"), reply(1, *calls, tool(5, "read_file", path="a")))
    assert [e.call.id for e in of(effects, RunTool)] == ["t5"]  # the batch went on to the valid call
    assert not of(effects, AskApproval) and not of(effects, AskUpgrade) and not of(effects, SpawnAgents)
    state, _ = transition(state, ToolDone("t5", "text"))
    results = {r.tool_use_id: r for r in state.history[-1].tool_results()}
    for call in calls:
        assert results[call.id].is_error and results[call.id].content == call.input_error
    child = fresh(is_subagent=True, parent_id="p")
    state, effects = run(child, UserMessage("task"), reply(1, ToolUse("t1", "submit_result", {}, input_error="x")))
    assert not of(effects, ReportToParent) and state.history[-1].tool_results()[0].content == "x"
    # the permission function still speaks first: an unknown tool is refused as unknown, whatever its input
    state, _ = run(fresh(), UserMessage("hi"), reply(1, ToolUse("t1", "format_disk", {}, input_error="x")))
    assert "Unknown tool 'format_disk'" in state.history[-1].tool_results()[0].content


# ------------------------------------------------------------------------------------------ sub-agents


@pytest.mark.req("REQ-BED-008", "REQ-BED-018")
def test_spawn_agents_waits_and_aggregates() -> None:
    state, effects = run(unrestricted(), UserMessage("hi"), reply(1, tool(1, "spawn_agents", tasks=["a", "b"])))
    (spawn,) = of(effects, SpawnAgents)
    assert spawn.mode is Mode.RESTRICTED  # whatever the parent's mode (REQ-BED-018)
    ids = [a.agent_id for a in spawn.agents]
    assert isinstance(state.status, AwaitingAgents)
    state, _ = transition(state, AgentEnded(ids[1], False, "timed out"))
    assert isinstance(state.status, AwaitingAgents)
    state, _ = transition(state, AgentEnded(ids[0], True, "found it"))
    result = state.history[-1].tool_results()[0]
    assert "found it" in result.content and "FAILED: timed out" in result.content


@pytest.mark.req("REQ-BED-009", "REQ-BED-018")
def test_subagent_tools_exclude_nesting_and_upgrade() -> None:
    assert "spawn_agents" not in SUBAGENT_TOOLS and "request_mode_upgrade" not in SUBAGENT_TOOLS
    assert "submit_result" in SUBAGENT_TOOLS and "submit_result" not in CONVERSATION_TOOLS
    child = fresh(is_subagent=True, parent_id="p")
    state, _ = run(
        child,
        UserMessage("task"),
        reply(1, tool(1, "spawn_agents", tasks=["x"]), tool(2, "request_mode_upgrade", reason="r")),
    )
    assert all("Unknown tool" in r.content for r in state.history[-1].tool_results())
    new, effects = transition(state, SetMode(Mode.UNRESTRICTED))
    assert new is state and isinstance(effects[0], Reject)


@pytest.mark.req("REQ-BED-008")
def test_subagent_submit_result_reports_to_parent() -> None:
    child = fresh(is_subagent=True, parent_id="p")
    state, effects = run(child, UserMessage("task"), reply(1, tool(1, "submit_result", result="42")))
    assert isinstance(state.status, Finished) and state.status.ok
    assert of(effects, ReportToParent) == [ReportToParent("p", "c1", True, "42")]


@pytest.mark.req("REQ-BED-008")
def test_subagent_ending_without_submit_fails() -> None:
    state, effects = run(fresh(is_subagent=True, parent_id="p"), UserMessage("task"), reply(1, text="done!"))
    assert isinstance(state.status, Finished) and not state.status.ok
    assert "submit_result" in of(effects, ReportToParent)[0].result


@pytest.mark.req("REQ-BED-024")
def test_subagent_fails_at_context_threshold_without_continuation() -> None:
    state, effects = run(
        fresh(is_subagent=True, parent_id="p"),
        UserMessage("task"),
        reply(1, tool(1, "bash", command="ls"), tokens=185_000),
    )
    assert isinstance(state.status, Finished) and not state.status.ok
    assert not of(effects, RunTool) and not any(e.purpose == "summary" for e in of(effects, RequestLlm))
    assert "context" in of(effects, ReportToParent)[0].result


@pytest.mark.req("REQ-BED-005", "REQ-BED-008")
def test_parent_cancel_stops_subagents() -> None:
    state, _ = run(unrestricted(), UserMessage("hi"), reply(1, tool(1, "spawn_agents", tasks=["a"])))
    state, effects = transition(state, Cancel())
    assert of(effects, StopAgents) and isinstance(state.status, Idle)
    child, _ = run(fresh(is_subagent=True, parent_id="p"), UserMessage("t"))
    child, effects = transition(child, Stop("the parent conversation was cancelled"))
    assert isinstance(child.status, Finished) and of(effects, CancelLlm) and of(effects, ReportToParent)


# ------------------------------------------------------------------------------------------- context


@pytest.mark.req("REQ-BED-012", "REQ-BED-023")
def test_warning_once_at_80_percent() -> None:
    state, effects = run(fresh(), UserMessage("hi"), reply(1, text="a", tokens=165_000))
    warnings = [e for e in effects if isinstance(e, CONTEXT)]
    assert warnings and isinstance(warnings[0], ContextWarning)
    state, effects = run(state, UserMessage("more"), reply(2, text="b", tokens=170_000))
    assert not [e for e in effects if isinstance(e, CONTEXT)]


@pytest.mark.req("REQ-BED-019", "REQ-BED-020", "REQ-BED-021")
def test_continuation_at_90_percent_skips_tools_and_summarizes_without_tools() -> None:
    state, effects = run(fresh(), UserMessage("hi"), reply(1, tool(1, "bash", command="ls"), tokens=181_000))
    assert not of(effects, RunTool)
    (request,) = of(effects, RequestLlm)
    assert request.purpose == "summary" and request.instruction and "bash" in request.instruction
    assert isinstance(state.status, Summarizing)
    assert "Not executed" in state.history[-1].tool_results()[0].content
    state, effects = transition(state, reply(2, text="We fixed X; next Y."))
    assert isinstance(state.status, Exhausted) and state.status.summary == "We fixed X; next Y."
    assert state.history[-1].tag == "continuation"
    new, effects = transition(state, UserMessage("more"))
    assert new is state and effects[0].code == "context_exhausted"  # type: ignore[union-attr]


@pytest.mark.req("REQ-BED-020")
def test_summary_failure_falls_back() -> None:
    state, _ = run(fresh(settings=Settings(max_retries=0)), UserMessage("hi"), reply(1, text="x", tokens=190_000))
    state, _ = transition(state, LlmFailed(2, True, "overloaded"))
    assert isinstance(state.status, Exhausted) and "summary request failed" in state.status.summary


@pytest.mark.req("REQ-BED-022")
def test_threshold_uses_the_conversation_context_window() -> None:
    state, _effects = run(
        fresh(settings=Settings(context_window=1_000_000)), UserMessage("hi"), reply(1, text="x", tokens=190_000)
    )
    assert isinstance(state.status, Idle)  # 19% of a 1M window


@pytest.mark.req("REQ-BED-023")
def test_manual_continuation_behaves_like_automatic() -> None:
    state, _ = run(fresh(), UserMessage("hi"), reply(1, text="x"))
    state, effects = transition(state, TriggerContinuation())
    assert isinstance(state.status, Summarizing)
    assert of(effects, RequestLlm)[0].purpose == "summary"


@pytest.mark.req("REQ-BED-015", "REQ-LAYER-002")
def test_mode_command_answers_an_open_upgrade_request() -> None:
    waiting, _ = run(fresh(), UserMessage("hi"), reply(1, tool(1, "request_mode_upgrade", reason="edit")))
    approved, _ = transition(waiting, UserMessage("/execute"))
    assert approved.mode is Mode.UNRESTRICTED and isinstance(approved.status, AwaitingLlm)
    denied, _ = transition(waiting, UserMessage("/plan"))
    assert denied.mode is Mode.RESTRICTED and "denied" in denied.history[-1].tool_results()[0].content


@pytest.mark.req("REQ-LAYER-003", "REQ-LAYER-007")
def test_status_is_independent_of_style_and_mode_changes() -> None:
    state, _ = run(fresh(), UserMessage("hi"))
    for event in (SetStyle(Style.TASK), SetMode(Mode.UNRESTRICTED), SetPolicy(Policy.AUTO), SetStyle(Style.PLAN)):
        state, _ = transition(state, event)
        assert isinstance(state.status, AwaitingLlm) and state.status.request_id == 1
