"""The core's effects carried out, each by the handler its type has in :data:`HANDLERS` (as the core finds the
handler of an event in its table). Persistence is done before any of them (``conversation.Runtime.apply``)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from typing import Any, get_args

from ...core.effects import (
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
    ReportToParent,
    ReportUsage,
    RequestLlm,
    RunTool,
    SetTitle,
    SpawnAgents,
    StopAgents,
    UserCommand,
)
from ...core.events import AgentUsage
from ...core.notifications import Notification
from ...protocol import events as ev
from ...store import AuditEntry
from .agents import Agents
from .base import NotFound
from .notify import Notifications
from .tools import Tools
from .turn import Turn


class Effects(Turn, Tools, Agents, Notifications):
    """A conversation's effects (a part of ``conversation.Runtime``)."""

    def _execute(self, effect: Effect) -> None:
        HANDLERS[type(effect)](self, effect)


def _request_llm(runtime: Effects, effect: RequestLlm) -> None:
    runtime.llm_tasks[effect.request_id] = runtime.hub.spawn(runtime._llm(effect))


def _cancel_llm(runtime: Effects, effect: CancelLlm) -> None:
    if task := runtime.llm_tasks.pop(effect.request_id, None):
        task.cancel()


def _run_tool(runtime: Effects, effect: RunTool) -> None:
    runtime.tool_tasks[effect.call.id] = runtime.hub.spawn(runtime._tool(effect))


def _cancel_tool(runtime: Effects, effect: CancelTool) -> None:
    if task := runtime.tool_tasks.pop(effect.tool_use_id, None):
        task.cancel()


def _answer_host_call(runtime: Effects, effect: AnswerHostCall) -> None:
    waiting = runtime.host_calls.pop(effect.call_id, None)
    if waiting is not None and not waiting.done():
        waiting.set_result((effect.allowed, effect.message, effect.by))


def _ask_approval(runtime: Effects, effect: AskApproval) -> None:
    runtime.emit(ev.ApprovalRequested(**runtime.approval_fields(effect.call)))
    runtime.hub.sink.ask_approval(runtime, effect.call.id, effect.call)


def _ask_upgrade(runtime: Effects, effect: AskUpgrade) -> None:
    runtime.emit(ev.UpgradeRequested(tool_use_id=effect.tool_use_id, reason=effect.reason))
    runtime.hub.sink.ask_upgrade(runtime, effect.tool_use_id, effect.reason)


def _notify(runtime: Effects, effect: Notification) -> None:
    runtime._notify(effect)


def _audit(runtime: Effects, effect: Audit) -> None:
    runtime.hub.store.append_audit(
        AuditEntry(
            time=time.time(),
            conversation_id=runtime.id,
            actor=effect.actor,
            action=effect.action,
            mode=runtime.state.mode.value,
            style=runtime.state.style.value,
            detail=json.dumps(dict(effect.detail)),
        )
    )


def _set_title(runtime: Effects, effect: SetTitle) -> None:
    runtime.hub.store.update_title(runtime.id, effect.title)


def _spawn_agents(runtime: Effects, effect: SpawnAgents) -> None:
    runtime._spawn_agents(effect)


def _stop_agents(runtime: Effects, effect: StopAgents) -> None:
    runtime._stop_agents(effect)


def _report_to_parent(runtime: Effects, effect: ReportToParent) -> None:
    runtime._report(effect)


def _report_usage(runtime: Effects, effect: ReportUsage) -> None:
    with contextlib.suppress(NotFound):
        runtime.hub.get(effect.parent_id).apply(AgentUsage(effect.agent_id, effect.usage))


def _done_before(runtime: Effects, effect: PersistMessage | PersistState | Reject | UserCommand) -> None:
    """Persisted first, or answered by the request that caused it."""


#: each effect's handler; tests/server/test_runtime.py checks that every effect of the core has one
HANDLERS: dict[type[Effect], Callable[[Effects, Any], None]] = {
    RequestLlm: _request_llm,
    CancelLlm: _cancel_llm,
    RunTool: _run_tool,
    CancelTool: _cancel_tool,
    AnswerHostCall: _answer_host_call,
    AskApproval: _ask_approval,
    AskUpgrade: _ask_upgrade,
    **dict.fromkeys(get_args(Notification), _notify),
    Audit: _audit,
    SetTitle: _set_title,
    SpawnAgents: _spawn_agents,
    StopAgents: _stop_agents,
    ReportToParent: _report_to_parent,
    ReportUsage: _report_usage,
    PersistMessage: _done_before,
    PersistState: _done_before,
    Reject: _done_before,
    UserCommand: _done_before,
}
