"""What every handler of the state machine builds with: refusals (the busy one too), the history, requests,
settling in a status, closing a tool batch, a mode switch's note, a sub-agent's end."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from . import texts
from .effects import Audit, Effect, Reject, RejectCode, ReportToParent, RequestLlm
from .notifications import ContextUsage, ModeChanged
from .rules import AllowRule
from .state import BUSY, AwaitingApproval, AwaitingLlm, AwaitingUpgrade, Batch, ConversationState, Finished, Status
from .values import Actor, Message, Mode, Text, ToolResult

Out = tuple[ConversationState, tuple[Effect, ...]]
Handler = Callable[[ConversationState, Any], Out]


def status_name(status: Status) -> str:
    return status.kind


def context_usage(state: ConversationState) -> ContextUsage:
    """How full the context window is, as the usage and context notifications say it (REQ-BED-012)."""
    window = state.settings.context_window
    used = state.context_tokens
    return ContextUsage(used, window, round(used / window, 4) if window else 0)


def reject(state: ConversationState, code: RejectCode, message: str) -> Out:
    return state, (Reject(code, message),)


def append(state: ConversationState, *messages: Message) -> ConversationState:
    return replace(state, history=state.history + messages)


def new_request(state: ConversationState) -> tuple[ConversationState, int]:
    rid = state.next_request
    return replace(state, next_request=rid + 1), rid


def request_turn(state: ConversationState) -> Out:
    """Ask the model for the next turn."""
    state, rid = new_request(state)
    return replace(state, status=AwaitingLlm(rid)), (RequestLlm(rid),)


def note_messages(notes: tuple[str, ...]) -> tuple[Message, ...]:
    if not notes:
        return ()
    return (Message("user", tuple(Text(n) for n in notes), tag="note"),)


def settle(state: ConversationState, status: Status) -> ConversationState:
    """Enter a status where no tool batch is open, writing pending synthetic notes into the history."""
    state = append(state, *note_messages(state.notes))
    return replace(state, status=status, notes=())


def close_batch(state: ConversationState, results: tuple[ToolResult, ...]) -> ConversationState:
    """Write all of a finished batch's results as one user message (REQ-BED-004), plus pending notes."""
    blocks: tuple[Text | ToolResult, ...] = (*results, *(Text(n) for n in state.notes))
    return replace(append(state, Message("user", blocks)), notes=())


def fill(batch: Batch, running: str, queued: str) -> tuple[ToolResult, ...]:
    """The batch's results, with the current call answered ``running`` and every queued call ``queued``."""
    results = list(batch.results)
    for i, call in enumerate(batch.calls[len(batch.results) :]):
        results.append(ToolResult(call.id, running if i == 0 else queued, is_error=True))
    return tuple(results)


def note_mode(state: ConversationState, mode: Mode, actor: Actor, via: str) -> Out:
    """Switch mode and tell the agent with a synthetic system message (REQ-BED-017)."""
    previous = state.mode
    state = replace(state, mode=mode, notes=(*state.notes, texts.MODE_NOTE[mode]))
    if not isinstance(state.status, BUSY):
        state = settle(state, state.status)
    effects: tuple[Effect, ...] = (
        ModeChanged(mode, previous, actor, via),
        Audit(actor, "modeChanged", {"mode": mode.value, "via": via}),
    )
    return state, effects


def finish_agent(state: ConversationState, ok: bool, result: str) -> Out:
    """A sub-agent ends: tell the parent."""
    state = settle(state, Finished(ok, result))
    assert state.parent_id is not None
    return state, (ReportToParent(state.parent_id, state.id, ok, result),)


def busy(state: ConversationState) -> Out:
    status = state.status
    if isinstance(status, AwaitingApproval):
        name = (status.host_call or status.batch.current).name
        why = f"it is waiting for your approval of {name} (tool call {status.tool_use_id})"
    elif isinstance(status, AwaitingUpgrade):
        why = "it is waiting for your answer to its request for Unrestricted mode"
    else:
        why = f"it is working ({status_name(status)})"
    return reject(
        state,
        "busy",
        f"The agent is busy: {why}. Wait for it to finish, answer the pending request, or cancel the "
        "current operation (phoenix/cancel) and send your message again.",
    )


def rule_detail(rule: AllowRule) -> dict[str, object]:
    """How an audit entry names a rule (REQ-PERM-022)."""
    return {"tool": rule.tool, "rule": rule.label}
