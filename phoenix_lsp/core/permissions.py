"""The one place where permissions are decided (REQ-SEC-003).

``decide`` looks at the tool's kind, the mode, the approval policy and the always-allow rules (``rules.py``).
Style is not a parameter on purpose: a style can never grant or revoke anything (REQ-LAYER-001).
"""

from __future__ import annotations

from dataclasses import dataclass

from .mcp_rules import decide_mcp, is_mcp
from .rules import covers
from .state import ConversationState
from .tools import TOOL_KINDS, ToolKind, tools_for
from .values import Mode, Policy, ToolUse

#: The exact refusal of REQ-PATCH-009.
PATCH_DISABLED = (
    "Patch tool is disabled in Restricted mode. Use request_mode_upgrade to request write access."
)
#: REQ-AGENT-014: an MCP write in Restricted gets the patch tool's refusal, naming the tool
HOST_WRITE_DISABLED = (
    "{tool} is disabled in Restricted mode: it counts as a write. Use request_mode_upgrade to request write "
    "access, then submit the plan again."
)
SUBAGENT_WRITE_DISABLED = (
    "{tool} is disabled: this sub-agent runs in Restricted mode and cannot change mode. Report what should "
    "change through submit_result; the parent conversation can make the change."
)


@dataclass(frozen=True, slots=True)
class Allow:
    pass


@dataclass(frozen=True, slots=True)
class Ask:
    pass


@dataclass(frozen=True, slots=True)
class Refuse:
    message: str
    reason: str  # "unknown_tool" | "mode"


Verdict = Allow | Ask | Refuse


def decide(state: ConversationState, call: ToolUse) -> Verdict:
    """May ``call`` run now, must the user be asked first, or is it refused (and why)?"""
    if is_mcp(call.name):  # an MCP tool of the conversation (issue 37): decided in core/mcp_rules.py
        mcp = decide_mcp(state, call, (r.tool for r in state.always_allow if r.whole_tool))
        if mcp.action == "refuse":
            return Refuse(mcp.message, mcp.reason)
        return Allow() if mcp.action == "allow" else Ask()
    available = tools_for(state.is_subagent, state.route, state.editor_sight)
    if call.name not in available:
        return Refuse(
            f"Unknown tool '{call.name}': this conversation has no such tool. "
            f"Use one of: {', '.join(available)}.",
            "unknown_tool",
        )
    kind = TOOL_KINDS[call.name]
    if kind in (ToolKind.READ, ToolKind.CONTROL, ToolKind.PLAN):
        return Allow()
    if state.mode is Mode.RESTRICTED:
        if kind is ToolKind.WRITE:
            if state.is_subagent:
                return Refuse(SUBAGENT_WRITE_DISABLED.format(tool=call.name), "mode")
            return Refuse(PATCH_DISABLED, "mode")
        # EXEC in Restricted runs inside the kernel sandbox: read-only and offline, so no question to ask.
        return Allow()
    if state.policy is Policy.AUTO or covers(state.always_allow, call):
        return Allow()
    return Ask()


def decide_host(state: ConversationState, call: ToolUse, kind: ToolKind) -> Verdict:
    """May a host call of a running plan (an MCP tool a script calls, or an approval node) go ahead?

    ``kind`` is the tool's scope from the capability manifest: READ or WRITE (the manifest has already
    refused tools it does not allow), or PLAN for an approval node. Reads go ahead in every mode; writes are
    what the patch tool is: refused in Restricted, asked about under the interactive policy unless always
    allowed (REQ-AGENT-014/015). An approval node runs nothing itself: it is refused in Restricted (the write
    behind it could not run) and otherwise passes without a question, since each write call it guards is
    asked about, once, with its arguments (REQ-AGENT-034).
    """
    if kind is ToolKind.READ:
        return Allow()
    if kind not in (ToolKind.WRITE, ToolKind.PLAN):
        return Refuse(f"A host call must be a read or a write, not {kind.value}; nothing was run.", "unknown_tool")
    if state.mode is Mode.RESTRICTED:
        return Refuse(HOST_WRITE_DISABLED.format(tool=call.name), "mode")
    if kind is ToolKind.PLAN:
        return Allow()
    if state.policy is Policy.AUTO or covers(state.always_allow, call):
        return Allow()
    return Ask()
