"""Phoenix events, and a conversation's history, as ACP ``session/update`` notifications (REQ-ACP-004..006,
REQ-ACP-012).

Pure translation: what each tool call is (its kind and title) and how a tool call's statuses go (pending, then
in_progress, then completed or failed, once); the history replayed on ``session/load`` is ``replay.py``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import acp
from acp.helpers import update_current_mode
from acp.schema import ToolCallLocation, ToolCallStatus, ToolKind, UsageUpdate

from ...core.state import ConversationState
from ...protocol import events as ev
from ...protocol.kinds import MCP_FAMILY, Unknown, mcp_words, table_key
from ...protocol.views import ToolResultBlock, ToolUseBlock
from . import results

#: the ACP kind of each phoenix tool (the client's icon and grouping); every tool is named (REQ-PROTO-055)
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
    "call_tool": "other",  # only a call that names no tool: the rest become the MCP tool's own call
    "use_ask_route": "switch_mode",
    "editor_problems": "read",
    "find_definition": "search",
    "find_references": "search",
    MCP_FAMILY: "other",  # an MCP tool of unknown kind; a read is "fetch", a write "edit" (kind_of)
}
#: an MCP tool's ACP kind by its effective kind (issue 37)
MCP_KINDS: dict[str, ToolKind] = {"read": "fetch", "write": "edit"}

#: the longest tool output put in a tool call's content (the model gets all of it)
MAX_OUTPUT_CHARS = 20_000

log = logging.getLogger(__name__)

MODES = {"restricted": ("Restricted", "Read-only: files and commands cannot change anything (kernel sandbox). "
                        "The agent asks before switching."),
         "unrestricted": ("Unrestricted", "The agent may edit files and run commands that change things, each "
                          "as the approval policy says.")}


def _path(arguments: Mapping[str, Any]) -> str:
    return str(arguments.get("path") or ".")


#: what each phoenix tool's call does, in a few words ("Read src/app.py", "Run `make test`"): every tool is
#: named (REQ-PROTO-055)
TITLES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "read_file": lambda a: f"Read {_path(a)}",
    "list_directory": lambda a: f"List {_path(a)}",
    "search_files": lambda a: f"Search for {str(a.get('pattern') or a.get('query') or '')[:60]}",
    "bash": lambda a: f"Run `{str(a.get('command', ''))[:80]}`",
    "patch": lambda a: (f"Apply the changes of `{str(a.get('command', ''))[:60]}` ({len(a.get('files') or [])} "
                        "file(s))") if "files" in a else f"Edit {_path(a)}",
    "request_mode_upgrade": lambda a: "Switch to Unrestricted mode",
    "spawn_agents": lambda a: "Start sub-agents",
    "submit_result": lambda a: "Submit the result",
    "describe_tools": lambda a: "Describe tools",
    "run_plan": lambda a: "Run a plan",
    "call_tool": lambda a: "Call a tool",
    "use_ask_route": lambda a: "Take the ask route",
    "editor_problems": lambda a: f"Read the editor's problems in {_path(a)}",
    "find_definition": lambda a: f"Find the definition in {_path(a)}",
    "find_references": lambda a: f"Find the references in {_path(a)}",
    MCP_FAMILY: lambda a: "Call",  # followed by the tool and its server (title_of)
}

_unknown = Unknown(log, "the ACP adapter")


def kind_of(name: str, access: str | None = None) -> ToolKind:
    """The ACP kind of a call; ``access``: an MCP tool's effective kind (read: ``fetch``, write: ``edit``)."""
    key = table_key(name)
    if key not in KINDS:
        _unknown("tool", name)
        return "other"
    if key == MCP_FAMILY:
        return MCP_KINDS.get(access or "", KINDS[key])
    return KINDS[key]


def title_of(name: str, arguments: Mapping[str, Any]) -> str:
    """What a tool call does, in a few words ("Read src/app.py", "Run `make test`", "Call list_issues on
    tracker")."""
    key = table_key(name)
    title = TITLES.get(key)
    if title is None:
        _unknown("tool", name)
        return name
    return f"{title(arguments)} {mcp_words(name)}" if key == MCP_FAMILY else title(arguments)


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
          status: ToolCallStatus = "pending", access: str | None = None) -> Any:
    return acp.start_tool_call(call_id, title_of(name, arguments), kind=kind_of(name, access), status=status,
                               content=content, locations=locations(arguments, root), raw_input=dict(arguments))


def status(call_id: str, value: ToolCallStatus, content: list[Any] | None = None) -> Any:
    return acp.update_tool_call(call_id, status=value, content=content)


class Calls:
    """The tool calls of one session that the client was told about, so each starts once (``tool_call``), then
    only changes (``tool_call_update``), and ends once: the first of its end, its refusal, its denial and its
    stored result that comes ends it, and nothing is sent about it after that (REQ-ACP-028). ``state``: the
    conversation's state now (given when the session is attached), where a call's whole output is read."""

    def __init__(self, state: Callable[[], ConversationState | None] = lambda: None) -> None:
        self.announced: set[str] = set()
        self.ended: set[str] = set()
        self.results: dict[str, tuple[str, bool]] = {}  # a call's output and whether it failed, once known
        self.inputs: dict[str, dict[str, Any]] = {}  # a call's arguments, from the model's message
        self.state = state

    def announce(self, call_id: str, name: str, arguments: Mapping[str, Any], root: str,
                 content: list[Any] | None = None, access: str | None = None) -> list[Any]:
        if call_id in self.ended:
            return []
        if call_id in self.announced:
            return [status(call_id, "pending", content)] if content else []
        self.announced.add(call_id)
        return [start(call_id, name, arguments, root, content, access=access)]

    def end(self, call_id: str, failed: bool, content: list[Any] | None) -> list[Any]:
        if call_id in self.ended:
            return []
        self.ended.add(call_id)
        return [status(call_id, "failed" if failed else "completed", content)]

    def end_with_output(self, call_id: str, failed: bool, summary: str) -> list[Any]:
        """The call's one final update, with its whole output (the model's view) once the conversation holds it,
        else the event's ``summary``."""
        if call_id in self.ended:
            return []
        self.ended.add(call_id)

        def make() -> Any:
            state = self.state()
            result = results.result_of(state, call_id) if state is not None else None
            if result is None:
                return status(call_id, "failed" if failed else "completed", text_content(summary))
            # the images the model got are named as the summary names them ("image (PNG, 12 KB)", REQ-MCP-021)
            named = [line for line in summary.splitlines() if line.startswith("image (")][:len(result.images)]
            return status(call_id, "failed" if failed else "completed",
                          text_content("\n".join([*named, result.content])))

        return [results.Later(make)]


def _text(event: ev.TextDelta, calls: Calls, root: str) -> list[Any]:
    return [acp.update_agent_message_text(event.text)] if event.text else []


def _approval(event: ev.ApprovalRequested, calls: Calls, root: str) -> list[Any]:
    # an MCP call asked about is a write (core/mcp_rules.py): only writes are
    return calls.announce(event.tool_use_id, event.tool_name, event.arguments, root, access="write")


def _tool_start(event: ev.ToolStart, calls: Calls, root: str) -> list[Any]:
    if event.tool_use_id in calls.ended:
        return []
    started = calls.announce(event.tool_use_id, event.tool_name, event.arguments, root, access=event.access)
    return [*started, status(event.tool_use_id, "in_progress")]


def _tool_end(event: ev.ToolEnd, calls: Calls, root: str) -> list[Any]:
    return calls.end_with_output(event.tool_use_id, event.is_error, event.summary)


def _refused(event: ev.ToolRefused, calls: Calls, root: str) -> list[Any]:
    """Refused by the mode: its result (the refusal) may be known already."""
    made = calls.announce(event.tool_use_id, event.tool_name, calls.inputs.get(event.tool_use_id, {}), root,
                          access="write")  # an MCP call refused by the mode is a write
    known = calls.results.get(event.tool_use_id)
    return made + (calls.end(event.tool_use_id, True, text_content(known[0])) if known else [])


_NOT_RUN = {"deny": "Rejected by the user.", "cancelled": "Cancelled: nothing ran.",
            "superseded": "Not run: the user's next message came first."}


def _resolved(event: ev.ApprovalResolved, calls: Calls, root: str) -> list[Any]:
    why = _NOT_RUN.get(event.decision)
    return calls.end(event.tool_use_id, True, text_content(why)) if why else []


def _mode(event: ev.ModeChanged, calls: Calls, root: str) -> list[Any]:
    return [update_current_mode(event.mode.value)]


def _usage(event: ev.Usage, calls: Calls, root: str) -> list[Any]:
    return [UsageUpdate(session_update="usage_update", used=max(0, event.used_tokens),
                        size=max(0, event.context_window))]


def _error(event: ev.Error | ev.SecretWithheld, calls: Calls, root: str) -> list[Any]:
    return [acp.update_agent_message_text(f"\n\n{event.message}")]


def _message(event: ev.MessageAdded, calls: Calls, root: str) -> list[Any]:
    return list(_results(event, calls))


def _none(event: ev.EventKinds, calls: Calls, root: str) -> list[Any]:
    return []


#: the updates each phoenix event kind makes: every kind is named, those ACP has no update for with ``_none``
#: and why (REQ-PROTO-055)
LIVE: dict[str, Callable[[Any, Calls, str], list[Any]]] = {
    "status": _none,  # the turn's end is the answer to session/prompt (its stopReason)
    "message": _message,
    "textDelta": _text,
    "toolStart": _tool_start,
    "toolEnd": _tool_end,
    "toolRefused": _refused,
    "diff": _none,  # the edit went through the client's fs/write_text_file, which shows it
    "modeChanged": _mode,  # and a config_option_update, the client's (client.py)
    "styleChanged": _none,  # ACP has no style
    "styleSuggestion": _none,  # names the LSP clients' /execute and /plan; ACP switches modes itself
    "policyChanged": _none,  # an ACP session is interactive (session/request_permission); no update
    "modelChanged": _none,  # its config_option_update is the client's (client.py: it knows the model list)
    "approvalRequested": _approval,
    "approvalResolved": _resolved,
    "upgradeRequested": _none,  # asked by session/request_permission, the call shown by toolStart
    "upgradeResolved": _none,  # the answer to that request; the mode change follows as modeChanged
    "alwaysAllowChanged": _none,  # the client keeps its own always-allow choices
    "retry": _none,  # the answer is only later; the client shows the turn as running meanwhile
    "usage": _usage,
    "contextWarning": _none,  # usage_update carries how full the context is
    "continuationStarted": _none,  # the turn goes on; its text follows
    "continuation": _none,  # the summary is the conversation's, shown on session/load
    "subAgentsSpawned": _none,  # shown as spawn_agents' tool call
    "subAgentFinished": _none,  # the spawn_agents call ends with their results
    "error": _error,
    "secretWithheld": _error,  # told as a line of the answer: which source, never the value (REQ-SEC-012)
}


def live(event: ev.EventKinds, calls: Calls, root: str) -> list[Any]:
    """The updates one phoenix event of a conversation makes (its sub-agents' events make none)."""
    if event.parent_conversation_id:
        return []
    made = LIVE.get(event.kind)
    if made is None:
        _unknown("event kind", event.kind)
        return []
    return made(event, calls, root)


def _results(event: ev.MessageAdded, calls: Calls) -> Iterator[Any]:
    """A tool result message: the final status, with the whole output (the model's view) as its content, of each
    call that did not end before (refused by the mode, denied); the others' final update went out already."""
    message = event.message
    if message.role != "user":
        calls.inputs.update((b.tool_use_id, b.arguments) for b in message.content if isinstance(b, ToolUseBlock))
        return
    for block in message.content:
        if not isinstance(block, ToolResultBlock):
            continue
        calls.results[block.tool_use_id] = (block.content, block.is_error)
        if block.tool_use_id in calls.announced:  # its final update, unless one went out (REQ-ACP-028)
            yield from calls.end(block.tool_use_id, block.is_error, text_content(block.content))
