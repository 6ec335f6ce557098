"""The transition table: which events each status takes, and the handler of each.

An event the table does not list for the current status is refused without changing the state (REQ-CORE-004).
"""

from __future__ import annotations

from collections.abc import Mapping

from .approvals import on_approval, on_host_call, on_upgrade
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
    Cancel,
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
from .interruptions import on_cancel, on_idle_cancel, on_restore
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
    Summarizing,
)
from .steps import Handler
from .subagents import on_agent_ended, on_agent_usage
from .turns import on_continuation, on_llm_done, on_llm_failed, on_tool_done, on_user_message

_ALWAYS: dict[type, Handler] = {
    SetMode: on_set_mode,
    SetStyle: on_set_style,
    SetPolicy: on_set_policy,
    RevokeAlwaysAllow: on_revoke,
    ApprovalAnswer: on_approval,
    UpgradeAnswer: on_upgrade,
    UserMessage: on_user_message,
    Restore: on_restore,
    Stop: on_cancel,
    AgentUsage: on_agent_usage,
    WindowReported: on_window_reported,
}
_BUSY: dict[type, Handler] = {**_ALWAYS, Cancel: on_cancel}
_RESTING: dict[type, Handler] = {**_ALWAYS, Cancel: on_idle_cancel}

#: status -> event type -> handler. Anything else is refused without changing the state.
TABLE: Mapping[type, Mapping[type, Handler]] = {
    Idle: {**_RESTING, TriggerContinuation: on_continuation, SetModel: on_set_model,
           SetInstructions: on_set_instructions},
    Error: {**_RESTING, TriggerContinuation: on_continuation, SetModel: on_set_model,
            SetInstructions: on_set_instructions},
    Exhausted: _RESTING,
    Finished: {Restore: on_restore, Stop: on_cancel, SetStyle: on_set_style, AgentUsage: on_agent_usage},
    AwaitingLlm: {**_BUSY, LlmDone: on_llm_done, LlmFailed: on_llm_failed},
    Summarizing: {**_BUSY, LlmDone: on_llm_done, LlmFailed: on_llm_failed},
    RunningTool: {**_BUSY, ToolDone: on_tool_done, HostCall: on_host_call},
    AwaitingApproval: _BUSY,
    AwaitingUpgrade: _BUSY,
    AwaitingAgents: {**_BUSY, AgentEnded: on_agent_ended},
}
