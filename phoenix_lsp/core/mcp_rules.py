"""The permissions of an MCP tool called in the conversation (issue 37, REQ-MCP-002..004): the one place.

An MCP tool offered to the model (``mcp__<server>__<tool>``, ``mcp_names.py``) arrives as a ``ToolUse`` whose
``mcp_kind`` the server filled from the capability gate's decision of the tool's effective kind
(``agent/capability_gate.effective_kind``, REQ-AGENT-027: the manifest's entry that names it exactly, a read
glob only for a trusted server, the server's ``readOnlyHint`` only when trusted, else ``write``). The core
never asks the server what a tool does; it decides here, from that kind alone:

- a name of the family that no server offers (``mcp_kind`` None), or any MCP call of a sub-agent (sub-agents
  are given no MCP tools): refused as an unknown tool; it never reaches a server;
- ``read``: runs in every mode without asking (an MCP read reaches no file and runs no command here);
- ``write``: refused in Restricted with the upgrade hint (like the patch tool); in Unrestricted it follows
  the approval policy like ``bash``: ``auto`` runs it, ``interactive`` asks unless an Always Allow rule
  covers it: the tool's own (``mcp__github__create_issue``) or its whole server's (``mcp__github__*``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from .mcp_names import is_mcp, rule_names
from .state import ConversationState
from .values import Mode, Policy, ToolUse

__all__ = ["MCP_WRITE_DISABLED", "McpVerdict", "covered", "decide_mcp", "is_mcp", "rule_names"]

#: REQ-MCP-003: an MCP write in Restricted, refused with the upgrade hint, naming the tool
MCP_WRITE_DISABLED = (
    "{tool} is disabled in Restricted mode: it counts as a write (the capability manifest or its server's "
    "trusted annotations do not make it a read). Use request_mode_upgrade to request write access."
)
UNKNOWN_MCP = (
    "Unknown tool '{tool}': no MCP server of this conversation offers it (the MCP tools offered are listed with "
    "your tools, named mcp__<server>__<tool>). Nothing was sent to any server."
)
SUBAGENT_MCP = (
    "{tool} is not available to a sub-agent: MCP tools are offered to the user's conversation only. Report what "
    "you need through submit_result."
)


@dataclass(frozen=True, slots=True)
class McpVerdict:
    """``allow``, ``ask``, or ``refuse`` with the message for the model and why (``unknown_tool`` | ``mode``)."""

    action: Literal["allow", "ask", "refuse"]
    message: str = ""
    reason: Literal["", "unknown_tool", "mode"] = ""


def covered(rule_tools: Iterable[str], call: ToolUse) -> bool:
    """Whether a whole-tool rule among ``rule_tools`` covers the MCP call: its own name or its server's."""
    names = rule_names(call.name)
    return any(tool in names for tool in rule_tools)


def decide_mcp(state: ConversationState, call: ToolUse, rule_tools: Iterable[str]) -> McpVerdict:
    """May the MCP call run now, must the user be asked first, or is it refused? ``rule_tools``: the tools of
    the conversation's whole-tool Always Allow rules."""
    if state.is_subagent:
        return McpVerdict("refuse", SUBAGENT_MCP.format(tool=call.name), "unknown_tool")
    if call.mcp_kind is None or not is_mcp(call.name):
        return McpVerdict("refuse", UNKNOWN_MCP.format(tool=call.name), "unknown_tool")
    if call.mcp_kind == "read":
        return McpVerdict("allow")
    if state.mode is Mode.RESTRICTED:
        return McpVerdict("refuse", MCP_WRITE_DISABLED.format(tool=call.name), "mode")
    if state.policy is Policy.AUTO or covered(rule_tools, call):
        return McpVerdict("allow")
    return McpVerdict("ask")
