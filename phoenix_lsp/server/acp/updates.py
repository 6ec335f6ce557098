"""Phoenix events, and a conversation's history, as ACP ``session/update`` notifications (REQ-ACP-004..006,
REQ-ACP-012).

Pure translation: what each tool call is (its kind and title), how a tool call's statuses go (pending, then
in_progress, then completed or failed), and the history replayed on ``session/load``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import acp
from acp.helpers import update_current_mode
from acp.schema import ToolCallLocation, ToolKind, UsageUpdate

from ...core.values import Message, ToolResult, ToolUse
from ...protocol import events as ev
from ...protocol.views import ToolResultBlock, ToolUseBlock

#: the ACP kind of each phoenix tool (the client's icon and grouping); anything else is ``other``
KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "list_directory": "read",
    "search_files": "search",
    "bash": "execute",
    "patch": "edit",
    "request_mode_upgrade": "switch_mode",
    "spawn_agents": "think",
    "submit_result": "other",
    "describe_tools": "other",
    "run_plan": "execute",
    "editor_problems": "read",
    "find_definition": "search",
    "find_references": "search",
}

#: the longest tool output put in a tool call's content (the model gets all of it)
MAX_OUTPUT_CHARS = 20_000

MODES = {"restricted": ("Restricted", "Read-only: files and commands cannot change anything (kernel sandbox). "
                        "The agent asks before switching."),
         "unrestricted": ("Unrestricted", "The agent may edit files and run commands that change things, each "
                          "as the approval policy says.")}


def kind_of(name: str) -> ToolKind:
    return KINDS.get(name, "other")


def title_of(name: str, arguments: Mapping[str, Any]) -> str:
    """What a tool call does, in a few words ("Read src/app.py", "Run `make test`")."""
    path = str(arguments.get("path") or ".")
    match name:
        case "read_file":
            return f"Read {path}"
        case "list_directory":
            return f"List {path}"
        case "search_files":
            return f"Search for {str(arguments.get('pattern') or arguments.get('query') or '')[:60]}"
        case "bash":
            return f"Run `{str(arguments.get('command', ''))[:80]}`"
        case "patch":
            return f"Edit {path}"
        case "request_mode_upgrade":
            return "Switch to Unrestricted mode"
        case "spawn_agents":
            return "Start sub-agents"
    return name


def locations(arguments: Mapping[str, Any], root: str) -> list[ToolCallLocation] | None:
    path = arguments.get("path")
    if not isinstance(path, str) or not path:
        return None
    absolute = path if path.startswith("/") else f"{root.rstrip('/')}/{path}"
    return [ToolCallLocation(path=absolute)]


def text_content(text: str) -> list[Any]:
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[:MAX_OUTPUT_CHARS] + f"\n… ({len(text) - MAX_OUTPUT_CHARS:,} more characters)"
    return [acp.tool_content(acp.text_block(text))]


def start(call_id: str, name: str, arguments: Mapping[str, Any], root: str, content: list[Any] | None = None,
          status: str = "pending") -> Any:
    return acp.start_tool_call(call_id, title_of(name, arguments), kind=kind_of(name), status=status,  # type: ignore[arg-type]
                               content=content, locations=locations(arguments, root), raw_input=dict(arguments))


def status(call_id: str, value: str, content: list[Any] | None = None) -> Any:
    return acp.update_tool_call(call_id, status=value, content=content)  # type: ignore[arg-type]


class Calls:
    """The tool calls of one session that the client was told about, so each starts once (``tool_call``) and
    then only changes (``tool_call_update``)."""

    def __init__(self) -> None:
        self.announced: set[str] = set()
        self.ended: set[str] = set()
        self.results: dict[str, tuple[str, bool]] = {}  # a call's output and whether it failed, once known
        self.inputs: dict[str, dict[str, Any]] = {}  # a call's arguments, from the model's message

    def announce(self, call_id: str, name: str, arguments: Mapping[str, Any], root: str,
                 content: list[Any] | None = None) -> list[Any]:
        if call_id in self.announced:
            return [status(call_id, "pending", content)] if content else []
        self.announced.add(call_id)
        return [start(call_id, name, arguments, root, content)]

    def end(self, call_id: str, failed: bool, content: list[Any] | None) -> list[Any]:
        self.ended.add(call_id)
        return [status(call_id, "failed" if failed else "completed", content)]


def live(event: ev.EventKinds, calls: Calls, root: str) -> list[Any]:
    """The updates one phoenix event of a conversation makes (its sub-agents' events make none)."""
    if event.parent_conversation_id:
        return []
    match event:
        case ev.TextDelta():
            return [acp.update_agent_message_text(event.text)] if event.text else []
        case ev.ApprovalRequested():
            return calls.announce(event.tool_use_id, event.tool_name, event.arguments, root)
        case ev.ToolStart():
            started = calls.announce(event.tool_use_id, event.tool_name, event.arguments, root)
            return [*started, status(event.tool_use_id, "in_progress")]
        case ev.ToolEnd():
            return calls.end(event.tool_use_id, event.is_error, text_content(event.summary))
        case ev.ToolRefused():  # refused by the mode: its result (the refusal) may be known already
            made = calls.announce(event.tool_use_id, event.tool_name, calls.inputs.get(event.tool_use_id, {}), root)
            known = calls.results.get(event.tool_use_id)
            return made + (calls.end(event.tool_use_id, True, text_content(known[0])) if known else [])
        case ev.ApprovalResolved() if event.decision in ("deny", "cancelled", "superseded"):
            why = {"deny": "Rejected by the user.", "cancelled": "Cancelled: nothing ran.",
                   "superseded": "Not run: the user's next message came first."}[event.decision]
            return calls.end(event.tool_use_id, True, text_content(why))
        case ev.ModeChanged():
            return [update_current_mode(event.mode.value)]
        case ev.Usage():
            return [UsageUpdate(session_update="usage_update", used=max(0, event.used_tokens),
                                           size=max(0, event.context_window))]
        case ev.Error() | ev.SecretWithheld():
            return [acp.update_agent_message_text(f"\n\n{event.message}")]
        case ev.MessageAdded():
            return list(_results(event, calls))
    return []


def _results(event: ev.MessageAdded, calls: Calls) -> Iterator[Any]:
    """A tool result message: each call's whole output (the model's view) as its content, and its final status
    for a call that did not end before (refused by the mode, denied)."""
    message = event.message
    if message.role != "user":
        calls.inputs.update((b.tool_use_id, b.arguments) for b in message.content if isinstance(b, ToolUseBlock))
        return
    for block in message.content:
        if not isinstance(block, ToolResultBlock):
            continue
        calls.results[block.tool_use_id] = (block.content, block.is_error)
        if block.tool_use_id not in calls.announced:
            continue
        yield status(block.tool_use_id, "failed" if block.is_error else "completed", text_content(block.content))
        calls.ended.add(block.tool_use_id)


def replay(history: tuple[Message, ...], root: str) -> Iterator[Any]:
    """The history as the updates a client shows (REQ-ACP-012): the user's messages, the agent's, and each tool
    call with its arguments, final status and output. Notes and commands the model never sees are left out."""
    results: dict[str, ToolResult] = {}
    for message in history:
        for result in message.tool_results():
            results[result.tool_use_id] = result
    for message in history:
        if message.tag in ("note", "command"):
            continue
        text = message.text()
        if message.role == "user" and text.strip():
            yield acp.update_user_message_text(text)
        elif message.role == "assistant":
            if text:
                yield acp.update_agent_message_text(text)
            for call in message.tool_uses():
                yield from _replayed_call(call, results.get(call.id), root)


def _replayed_call(call: ToolUse, result: ToolResult | None, root: str) -> Iterator[Any]:
    yield start(call.id, call.name, call.input, root)
    if result is not None:
        yield status(call.id, "failed" if result.is_error else "completed", text_content(result.content))
