"""The core's effects carried out, each by the handler its type has in :data:`HANDLERS` (as the core finds the
handler of an event in its table), which hands it to the part of the conversation that owns the work.
Persistence is done before any of them (``conversation.Runtime.apply``)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from typing import Any, Protocol, get_args

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
    RestoreChanges,
    RunTool,
    SetTitle,
    ShowAnswer,
    SpawnAgents,
    StopAgents,
    UserCommand,
)
from ...core.events import AgentUsage
from ...core.notifications import Notification
from ...protocol import events as ev
from ...store import AuditEntry
from ..adapter import Conversation
from .agents import Agents
from .base import HubLike, NotFound
from .notify import Notes
from .tools import Tools
from .turn import Turn


class Owner(Conversation, Protocol):
    """A conversation as its effects' handlers reach it (``conversation.Runtime``): the adapter's view of it (an
    approval is asked about it), its hub, and the parts that own the work."""

    @property
    def hub(self) -> HubLike: ...
    @property
    def turn(self) -> Turn: ...
    @property
    def tools(self) -> Tools: ...
    @property
    def agents(self) -> Agents: ...
    @property
    def notes(self) -> Notes: ...


def _request_llm(runtime: Owner, effect: RequestLlm) -> None:
    runtime.turn.request(effect)


def _cancel_llm(runtime: Owner, effect: CancelLlm) -> None:
    runtime.turn.cancel(effect.request_id)


def _run_tool(runtime: Owner, effect: RunTool) -> None:
    runtime.tools.run(effect)


def _cancel_tool(runtime: Owner, effect: CancelTool) -> None:
    runtime.tools.cancel(effect.tool_use_id)


def _answer_host_call(runtime: Owner, effect: AnswerHostCall) -> None:
    runtime.tools.answer_host_call(effect)


def _ask_approval(runtime: Owner, effect: AskApproval) -> None:
    runtime.emit(ev.ApprovalRequested(**runtime.tools.approval_fields(effect.call)))
    runtime.hub.sink.ask_approval(runtime, effect.call.id, effect.call)


def _ask_upgrade(runtime: Owner, effect: AskUpgrade) -> None:
    runtime.emit(ev.UpgradeRequested(tool_use_id=effect.tool_use_id, reason=effect.reason))
    runtime.hub.sink.ask_upgrade(runtime, effect.tool_use_id, effect.reason)


def _notify(runtime: Owner, effect: Notification) -> None:
    runtime.notes.notify(effect)


def _audit(runtime: Owner, effect: Audit) -> None:
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


def _set_title(runtime: Owner, effect: SetTitle) -> None:
    runtime.hub.store.update_title(runtime.id, effect.title)


def _spawn_agents(runtime: Owner, effect: SpawnAgents) -> None:
    runtime.agents.spawn(effect)


def _stop_agents(runtime: Owner, effect: StopAgents) -> None:
    runtime.agents.stop(effect)


def _report_to_parent(runtime: Owner, effect: ReportToParent) -> None:
    runtime.agents.report(effect)


def _report_usage(runtime: Owner, effect: ReportUsage) -> None:
    with contextlib.suppress(NotFound):
        runtime.hub.get(effect.parent_id).apply(AgentUsage(effect.agent_id, effect.usage))


def _show_answer(runtime: Owner, effect: ShowAnswer) -> None:
    runtime.turn.show(effect.request_id, effect.text)


def _done_before(runtime: Owner,
                 effect: PersistMessage | PersistState | Reject | UserCommand | RestoreChanges) -> None:
    """Persisted first, or answered by the request that caused it."""


#: each effect's handler, which hands it to the part that owns the work; tests/server/test_runtime.py checks
#: that every effect of the core has one
HANDLERS: dict[type[Effect], Callable[[Owner, Any], None]] = {
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
    ShowAnswer: _show_answer,
    PersistMessage: _done_before,
    PersistState: _done_before,
    Reject: _done_before,
    UserCommand: _done_before,
    RestoreChanges: _done_before,  # carried out by the request that asked (usecases/undo.py)
}
