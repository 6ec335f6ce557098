"""A turn with the model: the user's message (REQ-BED-002), the model's answer and the context it fills
(REQ-BED-003, REQ-BED-012, REQ-BED-019..024), retries (REQ-BED-006), tool results, and continuations."""

from __future__ import annotations

from dataclasses import replace

from . import texts
from .changes import on_set_mode
from .dispatch import dispatch
from .effects import Audit, Effect, Reject, ReportUsage, RequestLlm, SetTitle, ShowAnswer, UserCommand
from .events import LlmDone, LlmFailed, SetMode, ToolDone, TriggerContinuation, UserMessage
from .notifications import (
    ContextExhausted,
    ContextWarning,
    ContinuationStarted,
    ErrorReported,
    RetryScheduled,
    UsageReported,
)
from .state import BUSY, AwaitingLlm, Batch, ConversationState, Error, Exhausted, Idle, RunningTool, Summarizing
from .steps import (
    Out,
    append,
    busy,
    close_batch,
    context_usage,
    finish_agent,
    new_request,
    reject,
    request_turn,
    settle,
)
from .tools import SUBMIT_RESULT
from .undo import undoing_refusal
from .values import Actor, Image, Message, Mode, Text, ToolResult

USER_COMMANDS = {"/execute": Mode.UNRESTRICTED, "/plan": Mode.RESTRICTED}


def on_user_message(state: ConversationState, ev: UserMessage) -> Out:
    text = ev.text.strip()
    command = USER_COMMANDS.get(text)
    if command is not None and not state.is_subagent:
        new, effects = on_set_mode(state, SetMode(command), via=text)
        if any(isinstance(e, Reject) for e in effects):
            return new, effects
        return new, (*effects, UserCommand("execute" if command is Mode.UNRESTRICTED else "plan"))
    if isinstance(state.status, BUSY):
        return busy(state)
    if (undoing := undoing_refusal(state)) is not None:
        return undoing
    if isinstance(state.status, Exhausted):
        return reject(
            state,
            "context_exhausted",
            "This conversation's context window is full, so it accepts no more messages. Start a new "
            "conversation from its summary (phoenix/newConversation with continueFrom).",
        )
    if not ev.text.strip() and not ev.images and not ev.attachments:
        return reject(state, "empty_message", "The message is empty, so there is nothing to send to the model: "
                      "send some text, an image or an attachment.")
    attached = tuple(Text(a) for a in ev.attachments)
    content: tuple[Text | Image, ...] = ((Text(ev.text),) if ev.text else ()) + attached + ev.images
    first = not any(m.role == "user" and not m.tag for m in state.history)
    state = replace(append(state, Message("user", content)), turns=0, route=ev.route)
    state, effects = request_turn(state)
    return state, ((SetTitle(ev.text[:80]),) if first else ()) + effects


def on_llm_done(state: ConversationState, ev: LlmDone) -> Out:
    status = state.status
    assert isinstance(status, AwaitingLlm | Summarizing)
    if ev.request_id != status.request_id:
        return reject(state, "stale", f"LLM response {ev.request_id} is stale (now {status.request_id}).")
    # Context is everything the request held, cached or not (REQ-BED-012); billing sums every response.
    state = replace(
        state,
        context_tokens=ev.usage.total,
        turns=state.turns + 1,
        usage=state.usage.add(ev.usage),
        last_usage=ev.usage,
    )
    state, effects = llm_answer(state, ev, status)
    if state.parent_id is not None:  # a sub-agent's tokens count for its parent too (issue 16)
        effects = (ReportUsage(state.parent_id, state.id, ev.usage), *effects)
    return state, effects


def llm_answer(state: ConversationState, ev: LlmDone, status: AwaitingLlm | Summarizing) -> Out:
    usage = UsageReported(context_usage(state))
    if isinstance(status, Summarizing):
        summary = "".join(b.text for b in ev.content if isinstance(b, Text)).strip()
        if not summary:
            summary = texts.SUMMARY_FALLBACK.format(reason="the model returned no text")
        state = append(state, Message("assistant", (Text(summary),), tag="continuation"))
        exhausted = ContextExhausted(summary, fallback=False)
        return settle(state, Exhausted(summary)), (exhausted, usage)

    effects: list[Effect] = [usage]
    window = max(state.settings.context_window, 1)
    ratio = ev.usage.total / window
    message = Message("assistant", ev.content) if ev.content else None
    calls = message.tool_uses() if message else ()
    if message is not None:
        state = append(state, message)

    if ratio >= state.settings.continue_ratio:  # REQ-BED-019: no tool of this response runs
        if calls:
            skipped = tuple(ToolResult(c.id, texts.CONTEXT_NOT_EXECUTED, is_error=True) for c in calls)
            state = close_batch(state, skipped)
        if state.is_subagent:  # REQ-BED-024: fail at once, no continuation
            reason = texts.CONTEXT_EXHAUSTED_AGENT.format(percent=round(ratio * 100))
            state, more = finish_agent(state, False, reason)
            return state, (usage, *more)
        state, rid = new_request(state)
        names = tuple(c.name for c in calls)
        state = settle(state, Summarizing(rid, 0, names))
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
            state = close_batch(state, skipped)
            state, more = finish_agent(state, False, texts.TURN_LIMIT.format(turns=limit))
            return state, (*effects, *more)
        state, more = dispatch(state, Batch(calls))
        return state, (*effects, *more)
    if ev.stop_reason in ("max_tokens", "pause_turn") and message is not None:  # REQ-BED-003: keep going
        state, more = request_turn(state)
        return state, (*effects, *more)
    if state.is_subagent:
        state, more = finish_agent(state, False, texts.NO_SUBMIT)
        return state, (*effects, *more)
    return settle(state, Idle()), tuple(effects)


def on_llm_failed(state: ConversationState, ev: LlmFailed) -> Out:
    status = state.status
    assert isinstance(status, AwaitingLlm | Summarizing)
    if ev.request_id != status.request_id:
        return reject(state, "stale", f"LLM failure {ev.request_id} is stale (now {status.request_id}).")
    retries = state.settings.max_retries
    if ev.retryable and status.attempt < retries:  # REQ-BED-006
        attempt = status.attempt + 1
        delay = state.settings.retry_base_ms * 2 ** (attempt - 1)
        if ev.retry_after_ms is not None:  # the provider's longer wait is honoured, up to the cap
            delay = max(delay, min(ev.retry_after_ms, state.settings.retry_after_max_ms))
        state, rid = new_request(state)
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
        state = append(state, Message("assistant", (Text(summary),), tag="continuation"))
        return settle(state, Exhausted(summary)), ()
    if state.is_subagent:
        return finish_agent(state, False, message)
    return settle(state, Error(message)), (ErrorReported(message),)


def on_tool_done(state: ConversationState, ev: ToolDone) -> Out:
    status = state.status
    assert isinstance(status, RunningTool)
    call = status.batch.current
    if ev.tool_use_id != call.id:
        return reject(state, "stale", f"Tool result {ev.tool_use_id} is stale (running {call.id}).")
    effects: tuple[Effect, ...] = ()
    if ev.refused_by_sandbox:
        effects = (Audit(Actor.SYSTEM, "toolRefused", {"tool": call.name, "by": "sandbox"}),)
    batch = status.batch.answer(ToolResult(call.id, ev.output, ev.is_error, images=ev.images))
    if ev.answer is not None and not ev.is_error and batch.complete and not state.is_subagent:
        # REQ-AGENT-039: the plan rendered the reply; it is the turn's answer, without a second model request
        state, rid = new_request(close_batch(state, batch.results))
        # kept as the reply, marked: its words are tool data, never the model's own (REQ-AGENT-043)
        state = settle(append(state, Message("assistant", (Text(ev.answer),), tag="rendered")), Idle())
        return state, (*effects, ShowAnswer(rid, ev.answer))
    state, more = dispatch(state, batch)
    return state, (*effects, *more)


def on_continuation(state: ConversationState, ev: TriggerContinuation) -> Out:
    if state.is_subagent:
        return reject(state, "subagent", "Sub-agents do not produce continuation summaries (REQ-BED-024).")
    if (undoing := undoing_refusal(state)) is not None:
        return undoing
    state, rid = new_request(state)
    return replace(state, status=Summarizing(rid)), (
        ContinuationStarted(context_usage(state), manual=True),
        RequestLlm(rid, purpose="summary", instruction=texts.summary_instruction(())),
    )
