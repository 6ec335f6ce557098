"""The transition table: which events each status takes, the handler of each, and the statuses it may lead to.

Like h11's, the table is the machine's shape as data (REQ-CORE-003): ``TABLE[status][event]`` is an ``Entry``
whose ``to`` lists every status the handler may leave the conversation in, the status it is in included when
the handler can stay (a refusal, a stale outcome, a change of a setting). tests/core checks every transition
against it, and specs/bedrock.md shows it (``describe``). An event the table does not list for the current
status is refused without changing the state (REQ-CORE-004).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import get_args

from .approvals import on_approval, on_early_host_call, on_host_call, on_upgrade
from .background import (
    on_approval_at_rest,
    on_background_reviewed,
    on_changes_discarded,
    on_rest_cancel,
    on_rest_host_call,
    on_review_background,
)
from .changes import (
    on_revoke,
    on_set_instructions,
    on_set_mode,
    on_set_model,
    on_set_policy,
    on_set_style,
    on_window_reported,
)
from .events import (
    AgentEnded,
    AgentUsage,
    ApprovalAnswer,
    BackgroundReviewed,
    Cancel,
    ChangesDiscarded,
    ChangesUndone,
    HostCall,
    LlmDone,
    LlmFailed,
    Restore,
    ReviewBackground,
    RevokeAlwaysAllow,
    SetInstructions,
    SetMode,
    SetModel,
    SetPolicy,
    SetStyle,
    Stop,
    ToolDone,
    TriggerContinuation,
    UndoChanges,
    UpgradeAnswer,
    UserMessage,
    WindowReported,
)
from .interruptions import on_cancel, on_restore
from .state import (
    AwaitingAgents,
    AwaitingApproval,
    AwaitingLlm,
    AwaitingUpgrade,
    Error,
    Exhausted,
    Finished,
    Idle,
    RunningTool,
    StatusKind,
    Summarizing,
)
from .steps import Handler
from .subagents import on_agent_ended, on_agent_usage
from .turns import on_continuation, on_llm_done, on_llm_failed, on_tool_done, on_user_message
from .undo import on_undo, on_undone


class _Stay:
    """In a shared row: the status the conversation is in (resolved per status when the table is built)."""

    def __repr__(self) -> str:
        return "STAY"


STAY = _Stay()


@dataclass(frozen=True, slots=True)
class Entry:
    """What one event does in one status: ``handler`` decides, and the new status is one of ``to``."""

    handler: Handler
    to: frozenset[type]


_Row = tuple[Handler, tuple[type | _Stay, ...]]


def _go(handler: Handler, *to: type | _Stay) -> _Row:
    return handler, to


#: Where working through a tool batch can end (``dispatch``): the next call runs, waits for the user or for
#: sub-agents, a sub-agent's submitted result finishes it, or the batch is complete and the model is asked.
DISPATCH = (RunningTool, AwaitingApproval, AwaitingUpgrade, AwaitingAgents, AwaitingLlm, Finished)

#: What every status but ``finished`` takes. A refusal or a change of a setting stays; a restart settles.
_ALWAYS: dict[type, _Row] = {
    SetMode: _go(on_set_mode, STAY),
    SetStyle: _go(on_set_style, STAY),
    SetPolicy: _go(on_set_policy, STAY),
    RevokeAlwaysAllow: _go(on_revoke, STAY),
    ApprovalAnswer: _go(on_approval, STAY),  # refused: nothing is awaited
    UpgradeAnswer: _go(on_upgrade, STAY),  # refused: nothing is awaited
    UserMessage: _go(on_user_message, STAY),  # busy or exhausted: refused, or a mode command
    Restore: _go(on_restore, Idle, Finished),  # nothing runs after a restart; a sub-agent ends
    Stop: _go(on_cancel, STAY, Finished),  # a sub-agent ends; a conversation refuses it
    AgentUsage: _go(on_agent_usage, STAY),
    WindowReported: _go(on_window_reported, STAY),
    ChangesUndone: _go(on_undone, STAY),
    BackgroundReviewed: _go(on_background_reviewed, STAY),
    ChangesDiscarded: _go(on_changes_discarded, STAY),  # REQ-BASH-046: the user and the model are told
}
#: At rest: an ended background command's review (REQ-BASH-044), its question and its answer, outside a turn.
_REVIEW_AT_REST: dict[type, _Row] = {
    ReviewBackground: _go(on_review_background, STAY),
    HostCall: _go(on_rest_host_call, STAY),
    ApprovalAnswer: _go(on_approval_at_rest, STAY),
    Cancel: _go(on_rest_cancel, STAY),
}
#: Idle and error: a new turn, a continuation summary, another model or instructions.
_RESTING: dict[type, _Row] = {
    **_ALWAYS,
    UserMessage: _go(on_user_message, STAY, AwaitingLlm),
    TriggerContinuation: _go(on_continuation, STAY, Summarizing),
    SetModel: _go(on_set_model, STAY),
    SetInstructions: _go(on_set_instructions, STAY),
    UndoChanges: _go(on_undo, STAY),  # REQ-BASH-041: never while a turn runs
    **_REVIEW_AT_REST,
}
#: Working: cancelling reaches idle (REQ-BED-005).
_BUSY: dict[type, _Row] = {**_ALWAYS, Cancel: _go(on_cancel, Idle)}
#: Waiting for the user: the answer (or the user's mode command, which answers an upgrade request or decides a
#: waiting call again) works through the batch; a restart asks again.
_WAITING: dict[type, _Row] = {
    **_BUSY,
    SetMode: _go(on_set_mode, STAY, *DISPATCH),
    UserMessage: _go(on_user_message, STAY, *DISPATCH),
    Restore: _go(on_restore, STAY, Idle, Finished),
}

_ROWS: dict[type, dict[type, _Row]] = {
    Idle: _RESTING,
    AwaitingLlm: {**_BUSY,
                  # a retry asks again; a response runs its tools, goes on, settles, or needs a continuation
                  LlmDone: _go(on_llm_done, STAY, Idle, Summarizing, *DISPATCH),
                  LlmFailed: _go(on_llm_failed, STAY, Error, Finished),
                  # a plan's node started while the model still writes the plan: reads only (REQ-AGENT-044)
                  HostCall: _go(on_early_host_call, STAY)},
    RunningTool: {**_BUSY, ToolDone: _go(on_tool_done, STAY, Idle, *DISPATCH),  # Idle: a plan's answer
                  HostCall: _go(on_host_call, STAY, AwaitingApproval)},
    AwaitingApproval: {**_WAITING, ApprovalAnswer: _go(on_approval, STAY, *DISPATCH)},
    AwaitingUpgrade: {**_WAITING, UpgradeAnswer: _go(on_upgrade, *DISPATCH)},
    AwaitingAgents: {**_BUSY, AgentEnded: _go(on_agent_ended, STAY, *DISPATCH)},
    Summarizing: {**_BUSY, LlmDone: _go(on_llm_done, STAY, Exhausted),
                  LlmFailed: _go(on_llm_failed, STAY, Exhausted)},
    Error: {**_RESTING, Restore: _go(on_restore, Idle, Finished)},
    Exhausted: {**_ALWAYS, Restore: _go(on_restore, STAY, Finished), UndoChanges: _go(on_undo, STAY),
                **_REVIEW_AT_REST},
    Finished: {Restore: _go(on_restore, STAY), Stop: _go(on_cancel, STAY), SetStyle: _go(on_set_style, STAY),
               AgentUsage: _go(on_agent_usage, STAY), ChangesDiscarded: _go(on_changes_discarded, STAY)},
}


def _entries(status: type, rows: Mapping[type, _Row]) -> dict[type, Entry]:
    return {
        event: Entry(handler, frozenset(status if isinstance(s, _Stay) else s for s in to))
        for event, (handler, to) in rows.items()
    }


#: status -> event type -> Entry. Anything else is refused without changing the state.
TABLE: Mapping[type, Mapping[type, Entry]] = {status: _entries(status, rows) for status, rows in _ROWS.items()}


def kind_of(status: type) -> str:
    """A status class's wire name (``AwaitingLlm`` -> ``awaiting_llm``)."""
    return str(next(f.default for f in fields(status) if f.name == "kind"))


def describe() -> str:
    """The table as Markdown: per status (in the order of ``StatusKind``), its events grouped by the statuses
    they may lead to. specs/bedrock.md shows it under REQ-CORE-003 (``scripts/transition-table.py`` writes it)."""
    order = get_args(StatusKind)
    statuses = sorted(TABLE, key=lambda s: order.index(kind_of(s)))
    lines = ["| status | events | may lead to |", "|---|---|---|"]
    for status in statuses:
        groups: dict[tuple[str, ...], list[str]] = {}
        for event, entry in TABLE[status].items():
            groups.setdefault(tuple(kind_of(s) for s in statuses if s in entry.to), []).append(event.__name__)
        for to, events in groups.items():
            lines.append(f"| `{kind_of(status)}` | {', '.join(events)} | {', '.join(f'`{k}`' for k in to)} |")
    return "\n".join(lines) + "\n"
