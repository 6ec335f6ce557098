"""The conversation state machine: ``transition(state, event) -> (state, effects)``.

Pure and deterministic (REQ-BED-001). Which events each status accepts is data (``TABLE``); an event the
table does not list for the current status is refused with a ``Reject`` effect and the state is returned
unchanged. ``transition`` adds the persistence effects in front of every other effect (REQ-BED-007).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Literal

from . import texts
from .effects import (
    AnswerHostCall,
    AskApproval,
    AskUpgrade,
    Audit,
    CancelLlm,
    CancelTool,
    Effect,
    PersistMessage,
    PersistState,
    Reject,
    RejectCode,
    ReportToParent,
    ReportUsage,
    RequestLlm,
    RunTool,
    SetTitle,
    SpawnAgents,
    StopAgents,
    UserCommand,
)
from .events import (
    AgentEnded,
    AgentUsage,
    ApprovalAnswer,
    Cancel,
    Event,
    HostCall,
    LlmDone,
    LlmFailed,
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
from .events import Restore as RestoreEvent
from .notifications import (
    TOLD_BEFORE_STATUS,
    AlwaysAllowChanged,
    ApprovalResolved,
    ContextExhausted,
    ContextUsage,
    ContextWarning,
    ContinuationStarted,
    ErrorReported,
    ModeChanged,
    ModelChanged,
    PolicyChanged,
    RetryScheduled,
    StatusChanged,
    StyleChanged,
    StyleSuggested,
    ToolRefused,
    UpgradeResolved,
    UsageReported,
)
from .permissions import Allow, Ask, Refuse, decide, decide_host
from .rules import AllowRule, add_rule, scopes_for
from .state import (
    BUSY,
    AwaitingAgents,
    AwaitingApproval,
    AwaitingLlm,
    AwaitingUpgrade,
    Batch,
    ConversationState,
    Error,
    Exhausted,
    Finished,
    Idle,
    RunningTool,
    Status,
    Summarizing,
)
from .tools import MAX_AGENTS_PER_CALL, REQUEST_MODE_UPGRADE, RUN_PLAN, SPAWN_AGENTS, SUBMIT_RESULT, ToolKind
from .values import (
    Actor,
    AgentSlot,
    AgentSpec,
    Decision,
    Image,
    Message,
    Mode,
    Text,
    ToolResult,
    ToolUse,
)

Out = tuple[ConversationState, tuple[Effect, ...]]
Handler = Callable[[ConversationState, Any], Out]

USER_COMMANDS = {"/execute": Mode.UNRESTRICTED, "/plan": Mode.RESTRICTED}


# ----------------------------------------------------------------------------------------------- helpers


def _status_name(status: Status) -> str:
    return status.kind


def context_usage(state: ConversationState) -> ContextUsage:
    """How full the context window is, as the usage and context notifications say it (REQ-BED-012)."""
    window = state.settings.context_window
    used = state.context_tokens
    return ContextUsage(used, window, round(used / window, 4) if window else 0)


def _reject(state: ConversationState, code: RejectCode, message: str) -> Out:
    return state, (Reject(code, message),)


def _append(state: ConversationState, *messages: Message) -> ConversationState:
    return replace(state, history=state.history + messages)


def _new_request(state: ConversationState) -> tuple[ConversationState, int]:
    rid = state.next_request
    return replace(state, next_request=rid + 1), rid


def _request_turn(state: ConversationState) -> Out:
    """Ask the model for the next turn."""
    state, rid = _new_request(state)
    return replace(state, status=AwaitingLlm(rid)), (RequestLlm(rid),)


def _note_messages(notes: tuple[str, ...]) -> tuple[Message, ...]:
    if not notes:
        return ()
    return (Message("user", tuple(Text(n) for n in notes), tag="note"),)


def _settle(state: ConversationState, status: Status) -> ConversationState:
    """Enter a status where no tool batch is open, writing pending synthetic notes into the history."""
    state = _append(state, *_note_messages(state.notes))
    return replace(state, status=status, notes=())


def _close_batch(state: ConversationState, results: tuple[ToolResult, ...]) -> ConversationState:
    """Write all of a finished batch's results as one user message (REQ-BED-004), plus pending notes."""
    blocks: tuple[Text | ToolResult, ...] = (*results, *(Text(n) for n in state.notes))
    return replace(_append(state, Message("user", blocks)), notes=())


def _fill(batch: Batch, running: str, queued: str) -> tuple[ToolResult, ...]:
    """The batch's results, with the current call answered ``running`` and every queued call ``queued``."""
    results = list(batch.results)
    for i, call in enumerate(batch.calls[len(batch.results) :]):
        results.append(ToolResult(call.id, running if i == 0 else queued, is_error=True))
    return tuple(results)


def _note_mode(state: ConversationState, mode: Mode, actor: Actor, via: str) -> Out:
    """Switch mode and tell the agent with a synthetic system message (REQ-BED-017)."""
    previous = state.mode
    state = replace(state, mode=mode, notes=(*state.notes, texts.MODE_NOTE[mode]))
    if not isinstance(state.status, BUSY):
        state = _settle(state, state.status)
    effects: tuple[Effect, ...] = (
        ModeChanged(mode, previous, actor, via),
        Audit(actor, "modeChanged", {"mode": mode.value, "via": via}),
    )
    return state, effects


def _finish_agent(state: ConversationState, ok: bool, result: str) -> Out:
    """A sub-agent ends: tell the parent."""
    state = _settle(state, Finished(ok, result))
    assert state.parent_id is not None
    return state, (ReportToParent(state.parent_id, state.id, ok, result),)


# -------------------------------------------------------------------------------------- tool dispatching


def _dispatch(state: ConversationState, batch: Batch) -> Out:
    """Work through the batch in order until a call must run, wait, or the batch is complete."""
    effects: list[Effect] = []
    while not batch.complete:
        call = batch.current
        verdict = decide(state, call)
        if isinstance(verdict, Refuse):
            batch = batch.answer(ToolResult(call.id, verdict.message, is_error=True))
            if verdict.reason == "mode":
                effects.append(ToolRefused(call.id, call.name))
                effects.append(Audit(Actor.SYSTEM, "toolRefused", {"tool": call.name, "by": "mode"}))
            continue
        if call.input_error is not None:  # REQ-CORE-007: never run, never asked about, never handled
            batch = batch.answer(ToolResult(call.id, call.input_error, is_error=True))
            continue
        if call.name == REQUEST_MODE_UPGRADE:
            reason = call.input.get("reason")
            if state.mode is Mode.UNRESTRICTED:
                batch = batch.answer(ToolResult(call.id, texts.ALREADY_UNRESTRICTED, is_error=True))
                continue
            if not isinstance(reason, str) or not reason.strip():
                batch = batch.answer(
                    ToolResult(call.id, "request_mode_upgrade needs a non-empty 'reason' string.", True)
                )
                continue
            effects += [
                AskUpgrade(call.id, reason),
                Audit(Actor.AGENT, "upgradeRequested", {"reason": reason}),
            ]
            return replace(state, status=AwaitingUpgrade(batch, reason)), tuple(effects)
        if call.name == SPAWN_AGENTS:
            specs = _agent_specs(state, call)
            if isinstance(specs, str):
                batch = batch.answer(ToolResult(call.id, specs, is_error=True))
                continue
            slots = tuple(AgentSlot(s.agent_id, s.task) for s in specs)
            child_mode = Mode.RESTRICTED if state.sandbox else Mode.UNRESTRICTED  # REQ-BED-018
            effects.append(SpawnAgents(call.id, specs, child_mode))
            return replace(state, status=AwaitingAgents(batch, slots)), tuple(effects)
        if call.name == SUBMIT_RESULT:
            result = call.input.get("result")
            if not isinstance(result, str):
                batch = batch.answer(ToolResult(call.id, "submit_result needs a 'result' string.", True))
                continue
            batch = batch.answer(ToolResult(call.id, texts.SUBMITTED))
            while not batch.complete:
                batch = batch.answer(ToolResult(batch.current.id, texts.AFTER_SUBMIT, is_error=True))
            state, more = _finish_agent(_close_batch(state, batch.results), True, result)
            return state, (*effects, *more)
        if isinstance(verdict, Ask):
            effects += [
                AskApproval(call, scopes_for(state.always_allow, call)),
                Audit(Actor.AGENT, "approvalRequested", {"tool": call.name, "toolUseId": call.id}),
            ]
            return replace(state, status=AwaitingApproval(batch, call.id)), tuple(effects)
        assert isinstance(verdict, Allow)
        effects.append(RunTool(call, state.mode))
        return replace(state, status=RunningTool(batch)), tuple(effects)
    state, more = _request_turn(_close_batch(state, batch.results))
    return state, (*effects, *more)


def _agent_specs(state: ConversationState, call: ToolUse) -> tuple[AgentSpec, ...] | str:
    tasks = call.input.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        return "spawn_agents needs 'tasks': a non-empty list of task descriptions (strings)."
    if len(tasks) > MAX_AGENTS_PER_CALL:
        return f"spawn_agents accepts at most {MAX_AGENTS_PER_CALL} tasks per call; split the work."
    if not all(isinstance(t, str) and t.strip() for t in tasks):
        return "spawn_agents: every task must be a non-empty string."
    return tuple(AgentSpec(f"{state.id}.{call.id}.{i}", str(t)) for i, t in enumerate(tasks))


# -------------------------------------------------------------------------------------------- handlers


def _on_user_message(state: ConversationState, ev: UserMessage) -> Out:
    text = ev.text.strip()
    command = USER_COMMANDS.get(text)
    if command is not None and not state.is_subagent:
        new, effects = _on_set_mode(state, SetMode(command), via=text)
        if any(isinstance(e, Reject) for e in effects):
            return new, effects
        return new, (*effects, UserCommand("execute" if command is Mode.UNRESTRICTED else "plan"))
    if isinstance(state.status, BUSY):
        return _busy(state)
    if isinstance(state.status, Exhausted):
        return _reject(
            state,
            "context_exhausted",
            "This conversation's context window is full, so it accepts no more messages. Start a new "
            "conversation from its summary (phoenix/newConversation with continueFrom).",
        )
    if not ev.text.strip() and not ev.images and not ev.attachments:
        return _reject(state, "empty_message", "The message is empty: send some text, an image or an attachment.")
    attached = tuple(Text(a) for a in ev.attachments)
    content: tuple[Text | Image, ...] = ((Text(ev.text),) if ev.text else ()) + attached + ev.images
    first = not any(m.role == "user" and not m.tag for m in state.history)
    state = replace(_append(state, Message("user", content)), turns=0, route=ev.route)
    state, effects = _request_turn(state)
    return state, ((SetTitle(ev.text[:80]),) if first else ()) + effects


def _busy(state: ConversationState) -> Out:
    status = state.status
    if isinstance(status, AwaitingApproval):
        name = (status.host_call or status.batch.current).name
        why = f"it is waiting for your approval of {name} (tool call {status.tool_use_id})"
    elif isinstance(status, AwaitingUpgrade):
        why = "it is waiting for your answer to its request for Unrestricted mode"
    else:
        why = f"it is working ({_status_name(status)})"
    return _reject(
        state,
        "busy",
        f"The agent is busy: {why}. Wait for it to finish, answer the pending request, or cancel the "
        "current operation (phoenix/cancel) and send your message again.",
    )


def _on_llm_done(state: ConversationState, ev: LlmDone) -> Out:
    status = state.status
    assert isinstance(status, AwaitingLlm | Summarizing)
    if ev.request_id != status.request_id:
        return _reject(state, "stale", f"LLM response {ev.request_id} is stale (now {status.request_id}).")
    # Context is everything the request held, cached or not (REQ-BED-012); billing sums every response.
    state = replace(
        state,
        context_tokens=ev.usage.total,
        turns=state.turns + 1,
        usage=state.usage.add(ev.usage),
        last_usage=ev.usage,
    )
    state, effects = _llm_answer(state, ev, status)
    if state.parent_id is not None:  # a sub-agent's tokens count for its parent too (issue 16)
        effects = (ReportUsage(state.parent_id, state.id, ev.usage), *effects)
    return state, effects


def _llm_answer(state: ConversationState, ev: LlmDone, status: AwaitingLlm | Summarizing) -> Out:
    usage = UsageReported(context_usage(state))
    if isinstance(status, Summarizing):
        summary = "".join(b.text for b in ev.content if isinstance(b, Text)).strip()
        if not summary:
            summary = texts.SUMMARY_FALLBACK.format(reason="the model returned no text")
        state = _append(state, Message("assistant", (Text(summary),), tag="continuation"))
        exhausted = ContextExhausted(summary, fallback=False)
        return _settle(state, Exhausted(summary)), (exhausted, usage)

    effects: list[Effect] = [usage]
    window = max(state.settings.context_window, 1)
    ratio = ev.usage.total / window
    message = Message("assistant", ev.content) if ev.content else None
    calls = message.tool_uses() if message else ()
    if message is not None:
        state = _append(state, message)

    if ratio >= state.settings.continue_ratio:  # REQ-BED-019: no tool of this response runs
        if calls:
            skipped = tuple(ToolResult(c.id, texts.CONTEXT_NOT_EXECUTED, is_error=True) for c in calls)
            state = _close_batch(state, skipped)
        if state.is_subagent:  # REQ-BED-024: fail at once, no continuation
            reason = texts.CONTEXT_EXHAUSTED_AGENT.format(percent=round(ratio * 100))
            state, more = _finish_agent(state, False, reason)
            return state, (usage, *more)
        state, rid = _new_request(state)
        names = tuple(c.name for c in calls)
        state = _settle(state, Summarizing(rid, 0, names))
        return state, (
            usage,
            ContinuationStarted(context_usage(state)),
            RequestLlm(rid, purpose="summary", instruction=texts.summary_instruction(names)),
        )
    if ratio >= state.settings.warn_ratio and not state.warned:  # REQ-BED-012/023
        state = replace(state, warned=True)
        effects.append(ContextWarning(context_usage(state)))

    if calls:
        limit = state.settings.max_turns
        submits = any(c.name == SUBMIT_RESULT for c in calls)
        if state.is_subagent and limit is not None and state.turns >= limit and not submits:
            # the limit is the number of model turns: this one may still submit, but not ask for another
            skipped = tuple(ToolResult(c.id, texts.TURN_LIMIT.format(turns=limit), True) for c in calls)
            state = _close_batch(state, skipped)
            state, more = _finish_agent(state, False, texts.TURN_LIMIT.format(turns=limit))
            return state, (*effects, *more)
        state, more = _dispatch(state, Batch(calls))
        return state, (*effects, *more)
    if ev.stop_reason in ("max_tokens", "pause_turn") and message is not None:  # REQ-BED-003: keep going
        state, more = _request_turn(state)
        return state, (*effects, *more)
    if state.is_subagent:
        state, more = _finish_agent(state, False, texts.NO_SUBMIT)
        return state, (*effects, *more)
    return _settle(state, Idle()), tuple(effects)


def _on_llm_failed(state: ConversationState, ev: LlmFailed) -> Out:
    status = state.status
    assert isinstance(status, AwaitingLlm | Summarizing)
    if ev.request_id != status.request_id:
        return _reject(state, "stale", f"LLM failure {ev.request_id} is stale (now {status.request_id}).")
    retries = state.settings.max_retries
    if ev.retryable and status.attempt < retries:  # REQ-BED-006
        attempt = status.attempt + 1
        delay = state.settings.retry_base_ms * 2 ** (attempt - 1)
        if ev.retry_after_ms is not None:  # the provider's longer wait is honoured, up to the cap
            delay = max(delay, min(ev.retry_after_ms, state.settings.retry_after_max_ms))
        state, rid = _new_request(state)
        new_status = replace(status, request_id=rid, attempt=attempt)
        request = RequestLlm(rid, attempt, delay)
        if isinstance(status, Summarizing):
            request = RequestLlm(
                rid, attempt, delay, "summary", texts.summary_instruction(status.unexecuted)
            )
        retry = RetryScheduled(attempt, retries, delay, ev.message, ev.retry_after_ms)
        return replace(state, status=new_status), (retry, request)
    reason = ev.message.rstrip().rstrip(".")
    if ev.retryable:  # REQ-BED-006: said once, by the core; the reason never promises another retry
        message = f"The LLM request failed after {retries} retries: {reason}. Send a message to try again."
    else:
        message = f"The LLM request failed: {reason}."
    if isinstance(status, Summarizing):  # REQ-BED-020: fall back, never block the user
        summary = texts.SUMMARY_FALLBACK.format(reason=ev.message)
        state = _append(state, Message("assistant", (Text(summary),), tag="continuation"))
        return _settle(state, Exhausted(summary)), ()
    if state.is_subagent:
        return _finish_agent(state, False, message)
    return _settle(state, Error(message)), (ErrorReported(message),)


def _on_tool_done(state: ConversationState, ev: ToolDone) -> Out:
    status = state.status
    assert isinstance(status, RunningTool)
    call = status.batch.current
    if ev.tool_use_id != call.id:
        return _reject(state, "stale", f"Tool result {ev.tool_use_id} is stale (running {call.id}).")
    effects: tuple[Effect, ...] = ()
    if ev.refused_by_sandbox:
        effects = (Audit(Actor.SYSTEM, "toolRefused", {"tool": call.name, "by": "sandbox"}),)
    state, more = _dispatch(state, status.batch.answer(ToolResult(call.id, ev.output, ev.is_error)))
    return state, (*effects, *more)


def _on_approval(state: ConversationState, ev: ApprovalAnswer) -> Out:
    status = state.status
    if not isinstance(status, AwaitingApproval) or ev.tool_use_id != status.tool_use_id:
        pending = f" The pending one is {status.tool_use_id}." if isinstance(status, AwaitingApproval) else ""
        return _reject(
            state,
            "no_such_approval",
            f"There is no pending approval {ev.tool_use_id}: it was already answered, cancelled, or never "
            f"existed.{pending} Nothing was changed.",
        )
    call = status.host_call or status.batch.current
    resolved: dict[str, object] = {"tool": call.name, "decision": ev.decision.value}
    rule: AllowRule | None = None
    if ev.decision is Decision.ALWAYS_ALLOW:  # REQ-PERM-020: one of the offered scopes, the narrowest by default
        scopes = scopes_for(state.always_allow, call)
        if ev.rule is None:
            rule = scopes[0]
        else:
            rule = next((s for s in scopes if s.names(ev.rule)), None)
            if rule is None:
                offered = ", ".join(f"'{s.rule}'" for s in scopes)
                return _reject(
                    state,
                    "no_such_rule",
                    f"'{ev.rule}' is not a scope offered for this approval; choose one of {offered}. "
                    "Nothing was changed; the approval is still open.",
                )
        resolved["rule"] = rule.label
    effects: list[Effect] = [
        Audit(Actor.USER, "approvalResolved", resolved),
        ApprovalResolved(status.tool_use_id, ev.decision),
    ]
    if ev.decision is Decision.DENY:  # REQ-PERM-004
        denial = texts.DENIED if ev.reason is None else ev.reason  # REQ-PERM-023: denied unseen, and why
        if ev.reason is not None:
            resolved["reason"] = ev.reason
        if status.host_call is not None:  # the plan goes on; the script's call fails
            effects.append(AnswerHostCall(call.id, False, denial, "user"))
            return replace(state, status=RunningTool(status.batch)), tuple(effects)
        state, more = _dispatch(state, status.batch.answer(ToolResult(call.id, denial, True)))
        return state, (*effects, *more)
    if rule is not None and rule not in state.always_allow:
        state = replace(state, always_allow=add_rule(state.always_allow, rule))
        effects.append(Audit(Actor.USER, "alwaysAllowGranted", _rule_detail(rule)))
        effects.append(AlwaysAllowChanged(rule, allowed=True))  # REQ-PROTO-021
    if status.host_call is not None:  # decided again: the mode may have changed while it waited
        return _answer_host(replace(state, status=RunningTool(status.batch)), call, effects)
    # The mode may have changed while the request was open (/plan): decide again under the current mode.
    verdict = decide(state, call)
    if isinstance(verdict, Refuse):
        effects.append(Audit(Actor.SYSTEM, "toolRefused", {"tool": call.name, "by": "mode"}))
        state, more = _dispatch(state, status.batch.answer(ToolResult(call.id, verdict.message, True)))
        return state, (*effects, *more)
    effects.append(RunTool(call, state.mode))
    return replace(state, status=RunningTool(status.batch)), tuple(effects)


def _on_host_call(state: ConversationState, ev: HostCall) -> Out:
    """A running plan asks to make one host call (REQ-AGENT-014/015): the permission function decides."""
    status = state.status
    assert isinstance(status, RunningTool)
    current = status.batch.current
    if ev.tool_use_id != current.id or current.name != RUN_PLAN:
        return _reject(state, "stale", f"Host call {ev.call.id} belongs to {ev.tool_use_id}, which is not a running "
                                       "plan; it was not made.")
    verdict = decide_host(state, ev.call, ev.kind)
    if isinstance(verdict, Ask):
        return replace(state, status=AwaitingApproval(status.batch, ev.call.id, ev.call)), (
            AskApproval(ev.call, scopes_for(state.always_allow, ev.call)),
            Audit(Actor.AGENT, "approvalRequested", {"tool": ev.call.name, "toolUseId": ev.call.id,
                                                    "plan": ev.tool_use_id}),
        )
    return _answer_host(state, ev.call, [], ev.kind)


def _answer_host(state: ConversationState, call: ToolUse, effects: list[Effect],
                 kind: ToolKind = ToolKind.WRITE) -> Out:
    """Answer a host call that needs no question now: allowed, or refused (audited like a tool refusal)."""
    verdict = decide_host(state, call, kind)
    if isinstance(verdict, Refuse):
        if verdict.reason == "mode":  # the user's mode refused it: said like a refused tool call
            effects += [
                ToolRefused(call.id, call.name),
                Audit(Actor.SYSTEM, "toolRefused", {"tool": call.name, "by": "mode"}),
            ]
        effects.append(AnswerHostCall(call.id, False, verdict.message, verdict.reason))
        return state, tuple(effects)
    if kind in (ToolKind.WRITE, ToolKind.PLAN):  # every write's and approval node's go-ahead is on record
        effects.append(Audit(Actor.SYSTEM, "hostCallAllowed", {"tool": call.name, "toolUseId": call.id}))
    effects.append(AnswerHostCall(call.id, True))
    return state, tuple(effects)


def _on_upgrade(state: ConversationState, ev: UpgradeAnswer) -> Out:
    status = state.status
    if not isinstance(status, AwaitingUpgrade):
        return _reject(
            state,
            "no_pending_upgrade",
            "There is no pending upgrade request: it was already answered or cancelled. Nothing was changed.",
        )
    call = status.batch.current
    resolved = UpgradeResolved(call.id, "approve" if ev.approve else "deny")
    if not ev.approve:
        audit = Audit(Actor.USER, "upgradeResolved", {"approve": False})
        state, more = _dispatch(state, status.batch.answer(ToolResult(call.id, texts.UPGRADE_DENIED, True)))
        return state, (audit, resolved, *more)
    audit = Audit(Actor.USER, "upgradeResolved", {"approve": True})
    state, mode_effects = _note_mode(state, Mode.UNRESTRICTED, Actor.USER, "upgrade_request")
    state, more = _dispatch(state, status.batch.answer(ToolResult(call.id, texts.UPGRADE_APPROVED)))
    return state, (audit, resolved, *mode_effects, *more)


def _on_set_mode(state: ConversationState, ev: SetMode, via: str = "setMode") -> Out:
    if state.is_subagent:
        return _reject(state, "subagent_mode", "A sub-agent's mode cannot be changed (REQ-BED-018).")
    if ev.mode is Mode.RESTRICTED and not state.sandbox:
        return _reject(state, "sandbox_unavailable", texts.SANDBOX_REQUIRED)
    if isinstance(state.status, AwaitingUpgrade):
        # The user's own mode command answers the open request: /execute approves it, /plan denies it.
        return _on_upgrade(state, UpgradeAnswer(ev.mode is Mode.UNRESTRICTED))
    if ev.mode is state.mode:
        return state, ()
    # A running tool keeps the mode it started with; every later call sees the new one (REQ-PATCH-009).
    state, effects = _note_mode(state, ev.mode, Actor.USER, via)
    status = state.status
    if isinstance(status, AwaitingApproval) and status.host_call is not None:
        if isinstance(decide_host(state, status.host_call, ToolKind.WRITE), Ask):
            return state, effects
        resolved = ApprovalResolved(status.tool_use_id, "superseded")
        running = replace(state, status=RunningTool(status.batch))
        return _answer_host(running, status.host_call, [*effects, resolved])
    if isinstance(status, AwaitingApproval) and not isinstance(decide(state, status.batch.current), Ask):
        # The call waiting for approval has not started: it is decided again under the new mode
        # (a patch is refused, bash runs sandboxed) instead of asking about something that cannot run.
        resolved = ApprovalResolved(status.tool_use_id, "superseded")
        state, more = _dispatch(state, status.batch)
        return state, (*effects, resolved, *more)
    return state, effects


def _on_set_style(state: ConversationState, ev: SetStyle) -> Out:
    if ev.style is state.style:
        return state, ()
    previous = state.style
    state = replace(state, style=ev.style)  # REQ-LAYER-001: nothing else changes
    effects: list[Effect] = [
        StyleChanged(ev.style, previous),
        Audit(Actor.USER, "styleChanged", {"style": ev.style.value}),
    ]
    suggestion = texts.SUGGESTIONS.get((ev.style, state.mode))
    if suggestion and (state.sandbox or state.mode is Mode.RESTRICTED):
        other = Mode.UNRESTRICTED if state.mode is Mode.RESTRICTED else Mode.RESTRICTED
        command: Literal["/execute", "/plan"] = "/execute" if other is Mode.UNRESTRICTED else "/plan"
        effects.append(StyleSuggested(suggestion, other, command))
    return state, tuple(effects)


def _on_set_policy(state: ConversationState, ev: SetPolicy) -> Out:
    if ev.policy is state.policy:
        return state, ()
    previous = state.policy
    state = replace(state, policy=ev.policy)  # applies from the next tool call (REQ-PERM-007)
    return state, (
        PolicyChanged(ev.policy, previous),
        Audit(Actor.USER, "policyChanged", {"policy": ev.policy.value}),
    )


def _on_set_model(state: ConversationState, ev: SetModel) -> Out:
    """Another model answers from the next turn, if the context in use fits its window (REQ-MODEL-003)."""
    if state.is_subagent:
        return _reject(state, "subagent", "A sub-agent answers with its parent's model; nothing was changed.")
    if ev.model == state.model:
        return state, ()
    settings = state.settings
    room = int(ev.context_window * settings.continue_ratio)
    if state.context_tokens >= room:
        return _reject(
            state,
            "context_too_large",
            f"{ev.model} cannot take over this conversation: its context window ({ev.context_window:,} tokens) "
            f"is too small for the {state.context_tokens:,} tokens in use (they must stay under "
            f"{settings.continue_ratio:.0%} of the window). Nothing was changed; {state.model} still answers. "
            "To go on with the smaller model, continue in a new conversation from a summary "
            "(phoenix/triggerContinuation), and choose the model there.",
        )
    previous = state.model
    warned = state.context_tokens >= ev.context_window * settings.warn_ratio
    state = replace(
        state,
        model=ev.model,
        settings=replace(settings, context_window=ev.context_window),
        warned=warned,
    )
    return state, (
        ModelChanged(ev.model, previous, ev.context_window),
        Audit(Actor.USER, "modelChanged", {"model": ev.model, "previous": previous}),
    )


def _on_window_reported(state: ConversationState, ev: WindowReported) -> Out:
    """The window of the conversation's model, as its provider reported it later (REQ-MODEL-012): the 80 % warning
    and the 90 % continuation follow it from the next response; the client is told the size now in use."""
    if ev.model != state.model or ev.context_window < 1 or ev.context_window == state.settings.context_window:
        return state, ()
    state = replace(state, settings=replace(state.settings, context_window=ev.context_window))
    effects: list[Effect] = [UsageReported(context_usage(state))]
    if not state.warned and state.context_tokens >= ev.context_window * state.settings.warn_ratio:
        state = replace(state, warned=True)  # REQ-BED-023: the smaller window is already 80 % full
        effects.append(ContextWarning(context_usage(state)))
    return state, tuple(effects)


def _on_set_instructions(state: ConversationState, ev: SetInstructions) -> Out:
    """New project instructions from the next request on (REQ-INSTR-002); the prompt cache starts again."""
    if ev.text == state.instructions and ev.files == state.instruction_files:
        return state, ()
    return replace(state, instructions=ev.text, instruction_files=ev.files), ()


def _rule_detail(rule: AllowRule) -> dict[str, object]:
    """How an audit entry names a rule (REQ-PERM-022)."""
    return {"tool": rule.tool, "rule": rule.label}


def _on_revoke(state: ConversationState, ev: RevokeAlwaysAllow) -> Out:
    rule_text = ev.rule
    gone = tuple(
        r for r in state.always_allow if r.tool == ev.tool and (rule_text is None or r.names(rule_text))
    )
    if not gone:
        what = f"'{ev.tool}'" if rule_text is None else f"The rule '{rule_text}' of '{ev.tool}'"
        return _reject(state, "not_always_allowed", f"{what} is not always allowed in this conversation.")
    state = replace(state, always_allow=tuple(r for r in state.always_allow if r not in gone))
    effects: list[Effect] = []
    for rule in gone:
        effects.append(Audit(Actor.USER, "alwaysAllowRevoked", _rule_detail(rule)))
        effects.append(AlwaysAllowChanged(rule, allowed=False))
    return state, tuple(effects)


def _on_cancel(state: ConversationState, ev: Cancel | Stop) -> Out:
    """Stop everything at once (REQ-BED-005): synthetic results keep the history valid."""
    status = state.status
    if isinstance(ev, Stop) and not state.is_subagent:
        return _reject(state, "not_subagent", "Only sub-agents can be stopped; use cancel for a conversation.")
    if isinstance(ev, Stop):
        running, queued = f"Stopped: {ev.reason}.", f"Not executed: {ev.reason}."
    else:
        running, queued = texts.CANCELLED_RUNNING, texts.CANCELLED_QUEUED
    effects: list[Effect] = []
    if isinstance(status, AwaitingLlm | Summarizing):
        effects.append(CancelLlm(status.request_id))
    elif isinstance(status, RunningTool | AwaitingApproval | AwaitingUpgrade | AwaitingAgents):
        if isinstance(status, RunningTool):
            effects.append(CancelTool(status.batch.current.id))
        elif isinstance(status, AwaitingAgents):
            ids = tuple(a.agent_id for a in status.agents if not a.done)
            effects.append(StopAgents(ids, "the parent conversation was cancelled"))
            # results already submitted are kept in the answer; the rest are reported as stopped
            slots = tuple(a if a.done else AgentSlot(a.agent_id, a.task, True, False, running) for a in status.agents)
            batch = status.batch.answer(_agents_result(status.batch.current, slots))
            state = _close_batch(state, _fill(batch, queued, queued))
            return _settle(state, Idle()), tuple(effects)
        elif isinstance(status, AwaitingApproval) and status.host_call is not None:
            # the plan is running and waits for this answer: it is stopped, and told no
            effects += [ApprovalResolved(status.tool_use_id, "cancelled"),
                        AnswerHostCall(status.tool_use_id, False, running), CancelTool(status.batch.current.id)]
        else:
            call_id = status.batch.current.id
            upgrade = isinstance(status, AwaitingUpgrade)
            effects.append(UpgradeResolved(call_id, "cancelled") if upgrade else ApprovalResolved(call_id, "cancelled"))
        state = _close_batch(state, _fill(status.batch, running, queued))
    if isinstance(ev, Stop):
        if isinstance(status, Finished):
            return _reject(state, "finished", "The sub-agent has already finished.")
        state, more = _finish_agent(state, False, ev.reason)
        return state, (*effects, *more)
    return _settle(state, Idle()), tuple(effects)


def _on_idle_cancel(state: ConversationState, ev: Cancel) -> Out:
    return state, ()  # nothing runs: cancelling is a harmless no-op


def _on_continuation(state: ConversationState, ev: TriggerContinuation) -> Out:
    if state.is_subagent:
        return _reject(state, "subagent", "Sub-agents do not produce continuation summaries (REQ-BED-024).")
    state, rid = _new_request(state)
    return replace(state, status=Summarizing(rid)), (
        ContinuationStarted(context_usage(state), manual=True),
        RequestLlm(rid, purpose="summary", instruction=texts.summary_instruction(())),
    )


def _on_agent_ended(state: ConversationState, ev: AgentEnded) -> Out:
    status = state.status
    assert isinstance(status, AwaitingAgents)
    slots = status.agents
    index = next((i for i, a in enumerate(slots) if a.agent_id == ev.agent_id and not a.done), None)
    if index is None:
        return _reject(state, "stale", f"Sub-agent {ev.agent_id} is not awaited.")
    slot = AgentSlot(ev.agent_id, slots[index].task, True, ev.ok, ev.result)
    slots = (*slots[:index], slot, *slots[index + 1 :])
    if not all(a.done for a in slots):
        return replace(state, status=AwaitingAgents(status.batch, slots)), ()
    return _dispatch(state, status.batch.answer(_agents_result(status.batch.current, slots)))


def _agents_result(call: ToolUse, slots: tuple[AgentSlot, ...]) -> ToolResult:
    """One aggregated result: each agent's id, task, and result or failure reason (REQ-BED-008)."""
    report = "\n\n".join(
        f"## Sub-agent {i + 1} ({a.agent_id}): {a.task}\n"
        + (f"Result:\n{a.result}" if a.ok else f"FAILED: {a.result}")
        for i, a in enumerate(slots)
    )
    return ToolResult(call.id, report, is_error=all(not a.ok for a in slots))


def _on_agent_usage(state: ConversationState, ev: AgentUsage) -> Out:
    """A sub-agent's response is billed to the parent's totals, whatever the parent is doing (issue 16)."""
    return replace(state, agents_usage=state.agents_usage.add(ev.usage)), ()


def _on_restore(state: ConversationState, ev: RestoreEvent) -> Out:
    """After a restart nothing is running any more; only requests waiting for the user survive."""
    status = state.status
    if state.is_subagent:  # its parent was restored too and no longer waits for it (issue 6)
        if isinstance(status, Finished):
            return state, ()
        if isinstance(status, RunningTool | AwaitingApproval | AwaitingAgents):
            state = _close_batch(state, _fill(status.batch, texts.RESTART_RUNNING, texts.RESTART_QUEUED))
        return _settle(state, Finished(False, "stopped because the server restarted")), ()
    if isinstance(status, AwaitingApproval) and status.host_call is None:
        call = status.batch.current
        return state, (AskApproval(call, scopes_for(state.always_allow, call)),)
    if isinstance(status, AwaitingUpgrade):
        return state, (AskUpgrade(status.batch.current.id, status.reason),)
    if isinstance(status, RunningTool | AwaitingApproval):  # a plan waiting for a host call's approval
        state = _close_batch(state, _fill(status.batch, texts.RESTART_RUNNING, texts.RESTART_QUEUED))
    elif isinstance(status, AwaitingAgents):
        # what had been submitted survives; the others are reported as stopped by the restart
        slots = tuple(
            a if a.done else AgentSlot(a.agent_id, a.task, True, False, texts.AGENT_RESTART) for a in status.agents
        )
        batch = status.batch.answer(_agents_result(status.batch.current, slots))
        state = _close_batch(state, _fill(batch, texts.RESTART_QUEUED, texts.RESTART_QUEUED))
    if isinstance(status, Exhausted | Finished):
        return state, ()
    return _settle(state, Idle()), ()


# ------------------------------------------------------------------------------------------ the table

_ALWAYS: dict[type, Handler] = {
    SetMode: _on_set_mode,
    SetStyle: _on_set_style,
    SetPolicy: _on_set_policy,
    RevokeAlwaysAllow: _on_revoke,
    ApprovalAnswer: _on_approval,
    UpgradeAnswer: _on_upgrade,
    UserMessage: _on_user_message,
    RestoreEvent: _on_restore,
    Stop: _on_cancel,
    AgentUsage: _on_agent_usage,
    WindowReported: _on_window_reported,
}
_BUSY: dict[type, Handler] = {**_ALWAYS, Cancel: _on_cancel}
_RESTING: dict[type, Handler] = {**_ALWAYS, Cancel: _on_idle_cancel}

#: status -> event type -> handler. Anything else is refused without changing the state.
TABLE: Mapping[type, Mapping[type, Handler]] = {
    Idle: {**_RESTING, TriggerContinuation: _on_continuation, SetModel: _on_set_model,
           SetInstructions: _on_set_instructions},
    Error: {**_RESTING, TriggerContinuation: _on_continuation, SetModel: _on_set_model,
            SetInstructions: _on_set_instructions},
    Exhausted: _RESTING,
    Finished: {RestoreEvent: _on_restore, Stop: _on_cancel, SetStyle: _on_set_style, AgentUsage: _on_agent_usage},
    AwaitingLlm: {**_BUSY, LlmDone: _on_llm_done, LlmFailed: _on_llm_failed},
    Summarizing: {**_BUSY, LlmDone: _on_llm_done, LlmFailed: _on_llm_failed},
    RunningTool: {**_BUSY, ToolDone: _on_tool_done, HostCall: _on_host_call},
    AwaitingApproval: _BUSY,
    AwaitingUpgrade: _BUSY,
    AwaitingAgents: {**_BUSY, AgentEnded: _on_agent_ended},
}


def _persistence(old: ConversationState, new: ConversationState) -> tuple[Effect, ...]:
    if new is old:
        return ()
    added = new.history[len(old.history) :]
    start = len(old.history)
    effects: list[Effect] = [PersistMessage(start + i, m) for i, m in enumerate(added)]
    effects.append(PersistState())
    if type(new.status) is not type(old.status) or new.mode is not old.mode:
        effects.append(StatusChanged(new.status.kind, old.status.kind, new.mode))
    return tuple(effects)


def _refuse(state: ConversationState, event: Event) -> Out:
    """An event the table does not take in this status: the refusal says what to do instead."""
    if isinstance(state.status, BUSY):
        return _busy(state)
    if isinstance(state.status, Exhausted):
        return _reject(
            state,
            "context_exhausted",
            f"{type(event).__name__} is not accepted: this conversation's context window is full. Start a new "
            "conversation from its summary (phoenix/newConversation with continueFrom).",
        )
    return _reject(
        state,
        "illegal_event",
        f"{type(event).__name__} is not accepted while the conversation is "
        f"{_status_name(state.status)}; nothing was changed.",
    )


def transition(state: ConversationState, event: Event) -> Out:
    """The next state and the effects to carry out, persistence first. Pure and deterministic."""
    handler = TABLE[type(state.status)].get(type(event))
    if handler is None:
        return _refuse(state, event)
    new, effects = handler(state, event)
    if new is state:
        return new, effects
    persistence = _persistence(state, new)
    # What already happened is told before the status it leads to: an error before the status that reports
    # it (a client that prompts on "error" has the message), a response's usage before the status the
    # response settles in (a client that acts on "idle" has the turn's tokens). The status goes after
    # persistence but before anything that acts on the world.
    told = tuple(e for e in effects if isinstance(e, TOLD_BEFORE_STATUS))
    if told:
        effects = tuple(e for e in effects if e not in told)
        status = tuple(e for e in persistence if isinstance(e, StatusChanged))
        persistence = tuple(e for e in persistence if not isinstance(e, StatusChanged))
        return new, (*persistence, *told, *status, *effects)
    return new, (*persistence, *effects)


def new_conversation(
    conversation_id: str,
    *,
    model: str,
    working_directory: str,
    sandbox: bool,
    **fields: Any,
) -> ConversationState:
    """A fresh conversation: Restricted when the sandbox exists, otherwise Unrestricted only (REQ-BED-014)."""
    mode = Mode.RESTRICTED if sandbox else Mode.UNRESTRICTED
    return ConversationState(
        id=conversation_id, model=model, working_directory=working_directory, sandbox=sandbox, mode=mode, **fields
    )
