"""What the core knows about tools: their names and what kind of access each needs.

Tool schemas and runners live in ``phoenix_lsp.tools``; the core only needs to classify a call to decide
permissions (see ``permissions.py``) and to route the control tools it implements itself.
"""

from __future__ import annotations

from enum import StrEnum

from .values import Route


class ToolKind(StrEnum):
    READ = "read"  # never changes anything: allowed in every mode without asking
    EXEC = "exec"  # runs commands: kernel-sandboxed in Restricted, asks under the interactive policy otherwise
    WRITE = "write"  # changes files: refused in Restricted, asks under the interactive policy otherwise
    CONTROL = "control"  # implemented by the core itself (upgrade request, sub-agents, result submission)
    PLAN = "plan"  # runs a plan of scripts: allowed as a whole, every host call in it decided on its own


READ_FILE = "read_file"
LIST_DIRECTORY = "list_directory"
SEARCH_FILES = "search_files"
BASH = "bash"
PATCH = "patch"
REQUEST_MODE_UPGRADE = "request_mode_upgrade"
SPAWN_AGENTS = "spawn_agents"
SUBMIT_RESULT = "submit_result"
DESCRIBE_TOOLS = "describe_tools"
RUN_PLAN = "run_plan"
CALL_TOOL = "call_tool"
USE_ASK_ROUTE = "use_ask_route"
EDITOR_PROBLEMS = "editor_problems"
FIND_DEFINITION = "find_definition"
FIND_REFERENCES = "find_references"

TOOL_KINDS: dict[str, ToolKind] = {
    READ_FILE: ToolKind.READ,
    LIST_DIRECTORY: ToolKind.READ,
    SEARCH_FILES: ToolKind.READ,
    BASH: ToolKind.EXEC,
    PATCH: ToolKind.WRITE,
    REQUEST_MODE_UPGRADE: ToolKind.CONTROL,
    SPAWN_AGENTS: ToolKind.CONTROL,
    SUBMIT_RESULT: ToolKind.CONTROL,
    DESCRIBE_TOOLS: ToolKind.READ,
    RUN_PLAN: ToolKind.PLAN,
    # the server turns a call_tool call into the MCP tool's own call (``mcp__<server>__<tool>``) before the core
    # sees it; what reaches the core by this name is a call that names no tool, answered with its input error
    CALL_TOOL: ToolKind.CONTROL,
    USE_ASK_ROUTE: ToolKind.CONTROL,
    EDITOR_PROBLEMS: ToolKind.READ,
    FIND_DEFINITION: ToolKind.READ,
    FIND_REFERENCES: ToolKind.READ,
}

_STANDARD = (READ_FILE, LIST_DIRECTORY, SEARCH_FILES, BASH, PATCH)

#: The tools a user conversation offers the model. Fixed for the life of the conversation (REQ-BED-017).
CONVERSATION_TOOLS: tuple[str, ...] = (*_STANDARD, REQUEST_MODE_UPGRADE, SPAWN_AGENTS)

#: The agent route's own tools (issue 37, REQ-AGENT-040): only what planning needs, not the ask route's built-in
#: tools: the catalogue's schemas, the plan, one MCP tool called directly (REQ-AGENT-041), the upgrade request a
#: refused write names (REQ-AGENT-033), and the hand-over to the ask route for a message that needs the workspace
#: (files, commands, edits, the editor's tools: REQ-AGENT-042).
AGENT_TOOLS: tuple[str, ...] = (DESCRIBE_TOOLS, RUN_PLAN, CALL_TOOL, REQUEST_MODE_UPGRADE, USE_ASK_ROUTE)

#: The tools a sub-agent gets: the standard ones plus result submission; no nesting, no upgrade (REQ-BED-009/018).
SUBAGENT_TOOLS: tuple[str, ...] = (*_STANDARD, SUBMIT_RESULT)

#: The editor's sight (REQ-SIGHT-002): read tools answered by the editor client, offered only to conversations
#: whose client announced ``editorSight`` when they started, on the ask route (the agent route hands a message
#: that needs them to the ask route, REQ-AGENT-042).
SIGHT_TOOLS: tuple[str, ...] = (EDITOR_PROBLEMS, FIND_DEFINITION, FIND_REFERENCES)

#: The most sub-agents one spawn_agents call may start.
MAX_AGENTS_PER_CALL = 10


def tools_for(is_subagent: bool, route: Route = Route.ASK, sight: bool = False) -> tuple[str, ...]:
    """The tool list of a conversation's turn: fixed for the life of the conversation on one route
    (REQ-BED-017); sub-agents always take the ask route. ``sight``: the conversation's client announced
    the editor's sight when it started (REQ-SIGHT-002), a fact stored with the conversation."""
    extra = SIGHT_TOOLS if sight else ()
    if is_subagent:
        return (*SUBAGENT_TOOLS, *extra)
    if route is Route.AGENT:
        return AGENT_TOOLS
    return (*CONVERSATION_TOOLS, *extra)

#: REQ-MCP-001: an MCP tool is named mcp__<server>__<tool> (``mcp_names.py``), a family no built-in tool is in,
#: so no MCP server can name a tool that shadows one
_SHADOWED = [name for name in TOOL_KINDS if name.startswith("mcp__")]
if _SHADOWED:
    raise RuntimeError(f"built-in tools {_SHADOWED} are named like MCP tools (mcp__...): rename them")
