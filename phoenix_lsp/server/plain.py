"""What an editor without the phoenix protocol sees (REQ-PROTO-023, 024, 038, 039).

A plain client gets no ``phoenix/event``. This module turns the conversation into things any LSP editor
shows: approvals as ``window/showMessageRequest`` with texts that read well (with the diff of a patch), a turn
as ``$/progress`` in words a person understands, problems as ``window/showMessage``, a Markdown transcript of
each conversation opened with ``window/showDocument`` where the editor supports it, and a short message when
a turn ends. It also remembers which conversation the plain user is talking to, for ``commands.py``.

Over 300 lines: its one job, each conversation event turned into what any LSP editor shows, is one client class and
one view of a conversation; the texts are small functions beside them that only these use.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Protocol

from lsprotocol import types
from pygls.progress import Progress as ProgressTracker
from pygls.workspace import Workspace

from .. import confined
from ..core import state as core_state
from ..core import values
from ..core.rules import scopes_for
from ..core.values import ToolUse
from ..protocol import events as ev
from ..protocol.kinds import MCP_FAMILY, Unknown, mcp_words, table_key
from . import transcript
from .adapter import Conversation as Runtime
from .adapter import Conversations

log = logging.getLogger(__name__)

#: $/progress reports for a status, in words (REQ-PROTO-024: never the raw status name).
STATUS_WORDS = {
    "awaiting_llm": "Thinking…",
    "running_tool": "Running a tool…",
    "awaiting_approval": "Waiting for your approval",
    "awaiting_upgrade": "Waiting for you to allow changes (Unrestricted mode)",
    "awaiting_agents": "Waiting for sub-agents…",
    "summarizing": "Summarizing the conversation to free context…",
}

#: the end of a turn's progress, in words
END_WORDS = {
    "idle": "Answered",
    "error": "Stopped by an error",
    "exhausted": "The context is full: start a new conversation",
    "finished": "Finished",
}


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters, cut at a word boundary with an ellipsis."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"


def status_words(status: str) -> str:
    return STATUS_WORDS.get(status, "Working…")


def end_words(status: str) -> str:
    return END_WORDS.get(status, "Done")


def _path(args: dict[str, Any]) -> str:
    return str(args.get("path") or ".")


#: what each tool's call does, for a progress report: every tool is named (REQ-PROTO-055)
TOOL_WORDS: dict[str, Callable[[dict[str, Any]], str]] = {
    "read_file": lambda a: f"Reading {_path(a)}",
    "list_directory": lambda a: f"Looking at the folder {_path(a)}",
    "search_files": lambda a: f"Searching for {shorten(str(a.get('pattern') or a.get('query') or ''), 40)}",
    "bash": lambda a: f"Running `{shorten(str(a.get('command', '')), 60)}`",
    "patch": lambda a: f"Editing {_path(a)}",
    "request_mode_upgrade": lambda a: "Asking to make changes",
    "spawn_agents": lambda a: "Starting sub-agents",
    "submit_result": lambda a: "Handing in the result",
    "describe_tools": lambda a: "Looking up tools",
    "run_plan": lambda a: "Running a plan",
    "call_tool": lambda a: "Calling a tool",  # only a call that names no tool: the rest become the tool's own
    "use_ask_route": lambda a: "Taking the ask route",
    "editor_problems": lambda a: f"Reading the editor's problems in {_path(a)}",
    "find_definition": lambda a: f"Finding a definition in {_path(a)}",
    "find_references": lambda a: f"Finding references in {_path(a)}",
    MCP_FAMILY: lambda a: "Calling",  # followed by the tool and its server (tool_words)
}

_unknown = Unknown(log, "the plain-client adapter")


def tool_words(name: str, arguments: Any) -> str:
    """What a tool call does, for a progress report ("Reading src/app.py", "Running `make test`")."""
    key = table_key(name)
    words = TOOL_WORDS.get(key)
    if words is None:
        _unknown("tool", name)
        return f"Running {name}"
    said = words(arguments if isinstance(arguments, dict) else {})
    return f"{said} {mcp_words(name)}" if key == MCP_FAMILY else said


#: what a plain client does with each event kind: rewrite the conversation's transcript, report the turn's
#: progress, show a warning. Every kind is named, those it shows nothing for with an empty set and why
#: (REQ-PROTO-055).
TRANSCRIPT, PROGRESS, WARNING = "transcript", "progress", "warning"
EVENTS: dict[str, frozenset[str]] = {
    "status": frozenset({TRANSCRIPT, PROGRESS}),
    "message": frozenset({TRANSCRIPT}),
    "textDelta": frozenset(),  # the transcript shows the persisted answer, whole
    "toolStart": frozenset({PROGRESS}),
    "toolEnd": frozenset(),  # the progress moves on with the next status or tool
    "toolRefused": frozenset(),  # the refusal is the tool result, in the transcript's next message
    "diff": frozenset(),  # the editor applied the edit itself (workspace/applyEdit)
    "modeChanged": frozenset({TRANSCRIPT}),
    "styleChanged": frozenset(),  # the transcript does not show the style
    "styleSuggestion": frozenset(),  # names commands of the chat clients
    "policyChanged": frozenset({TRANSCRIPT}),
    "modelChanged": frozenset(),  # the plain user chose it by command, which answers
    "approvalRequested": frozenset(),  # asked by window/showMessageRequest (ask_approval)
    "approvalResolved": frozenset(),  # the dialog is withdrawn (withdraw)
    "upgradeRequested": frozenset(),  # asked by window/showMessageRequest (ask_upgrade)
    "upgradeResolved": frozenset(),  # the mode change follows as modeChanged
    "alwaysAllowChanged": frozenset(),  # the user chose it in the dialog
    "retry": frozenset({PROGRESS}),
    "usage": frozenset(),  # a warning comes with contextWarning
    "contextWarning": frozenset({WARNING}),
    "continuationStarted": frozenset(),  # the status (summarizing) reports it
    "continuation": frozenset(),  # the status (exhausted) ends the turn with its words
    "subAgentsSpawned": frozenset(),  # the status (awaiting_agents) reports it
    "subAgentFinished": frozenset(),  # their result is the spawn_agents call's, in the transcript
    "error": frozenset({WARNING}),
    "secretWithheld": frozenset({WARNING}),  # which sources were withheld from the model (REQ-SEC-012)
}


def retry_words(attempt: int, of: int) -> str:
    return f"The model service did not answer; trying again (attempt {attempt} of {of})"


def title_of(runtime: Runtime) -> str:
    """The conversation's title as listings show it: its first user message, shortened."""
    for message in runtime.state.history:
        if message.role == "user" and not message.tag and message.text().strip():
            return shorten(message.text(), 60)
    return "new conversation"


#: the longest approval text a plain client's dialog (window/showMessageRequest) is given. A longer call is
#: shown whole in a document the editor opens (window/showDocument), or denied unseen where the editor cannot
#: open one: never a dialog that shows part of what will run (REQ-PERM-023).
MAX_PROMPT_CHARS = 2000


def approval_head(runtime: Runtime, call: ToolUse, description: str) -> str:
    """The first line of a plain client's approval dialog: the tool, the conversation, what the tool does."""
    head = f"Phoenix wants to run {call.name} in conversation {runtime.id[:8]} (\"{title_of(runtime)}\")"
    about = shorten(description.split("\n\n")[0], 200) if description else ""
    return f"{head}: {about}" if about else head


def approval_text(runtime: Runtime, call: ToolUse, description: str, diff: str | None) -> str:
    """The text of a plain client's approval dialog: whole words, the whole arguments as compact JSON, the whole
    diff of a patch. Nothing is cut (REQ-PERM-023): a text too long for a dialog goes to a document."""
    lines = [approval_head(runtime, call, description)]
    args = json.dumps(dict(call.input), separators=(",", ":"), ensure_ascii=False)  # compact (REQ-PERM-005)
    lines.append(f"Arguments: {args}")
    if diff:  # the change itself, not only the JSON that describes it
        lines.append(f"Change to {call.input.get('path', 'the file')}:")
        lines.append(diff_body(diff))
    lines.append(rule_line(runtime, call))
    return "\n".join(line for line in lines if line)


def rule_line(runtime: Runtime, call: ToolUse) -> str:
    """What "Always Allow" adds (the narrowest scope, REQ-PERM-020), when it is narrower than the tool."""
    narrowest = scopes_for(runtime.state.always_allow, call)[0]
    return "" if narrowest.whole_tool else f"Always Allow adds the rule: {narrowest.label}"


def diff_body(diff: str) -> str:
    """The lines of a unified diff without its file headers (all of them)."""
    return "\n".join(ln for ln in diff.splitlines() if not ln.startswith(("--- ", "+++ ")))


def _fence(text: str, info: str) -> str:
    """``text`` in a Markdown code fence longer than any run of backticks in it (it cannot close the fence)."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def call_document(runtime: Runtime, call: ToolUse, description: str, diff: str | None) -> str:
    """The whole call as a Markdown document, for a call too long for a dialog (REQ-PERM-023)."""
    parts = [
        f"# Approve {call.name}?",
        approval_head(runtime, call, description),
        "Answer in the dialog the editor shows. This is everything the call will run or write: its arguments "
        "in full, as the tool receives them.",
        "## Arguments",
        _fence(json.dumps(dict(call.input), indent=2, ensure_ascii=False), "json"),
    ]
    if diff:
        parts += [f"## Change to {call.input.get('path', 'the file')}", _fence(diff_body(diff), "diff")]
    rule = rule_line(runtime, call)
    if rule:
        parts.append(rule)
    return "\n\n".join(parts) + "\n"


Progress = types.WorkDoneProgressReport | types.WorkDoneProgressEnd


class Server(Protocol):
    """The LSP server as a plain client's side uses it (``lsp.PhoenixServer``)."""

    protocol: Any

    @property
    def work_done_progress(self) -> ProgressTracker: ...
    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...
    @property
    def hub(self) -> Conversations | None: ...
    @property
    def workspace(self) -> Workspace: ...
    def window_show_message(self, params: types.ShowMessageParams) -> None: ...
    async def window_show_document_async(self, params: types.ShowDocumentParams) -> types.ShowDocumentResult: ...


class PlainClient:
    """Speaks to a client that knows only standard LSP."""

    def __init__(self, ls: Server, spawn: Callable[[Coroutine[Any, Any, Any]], asyncio.Task[Any]]) -> None:
        self.ls = ls
        self.view = PlainView(ls)  # transcripts and turn messages
        self.spawn = spawn
        self.requests: dict[str, asyncio.Task[Any]] = {}  # open dialogs by approval/upgrade id
        self._asked = 0  # numbers the window/showMessageRequest ids, so a dialog can be withdrawn by id
        self.progress: dict[str, str] = {}  # conversation id -> its progress token
        # reports/ends of a token whose begin is not out yet (create is a round trip to the client)
        self.held: dict[str, list[Progress]] = {}

    # ------------------------------------------------------------------------------------ progress

    def event(self, event: ev.EventKinds, params: dict[str, Any]) -> None:
        """REQ-PROTO-024: a turn as $/progress in words, problems as window/showMessage; the transcript."""
        uses = EVENTS.get(event.kind)
        if uses is None:
            _unknown("event kind", event.kind)
            return
        if WARNING in uses:
            self._warning(event)
        if PROGRESS in uses:
            self._progress(event)
        if TRANSCRIPT in uses:
            self.view.on_event(params)

    def _warning(self, event: ev.EventKinds) -> None:
        if isinstance(event, ev.Error | ev.SecretWithheld):
            self._warn(event.message)
        elif isinstance(event, ev.ContextWarning):
            self._warn(f"Context {round(100 * event.fraction)}% full.")

    def _progress(self, event: ev.EventKinds) -> None:
        cid = event.conversation_id
        caps = self.ls.client_capabilities.window
        if not (caps and caps.work_done_progress):
            return
        if isinstance(event, ev.Status):
            token = self.progress.get(cid)
            if event.status in core_state.RESTING_KINDS:
                if token:
                    self.progress.pop(cid)
                    self._send(token, types.WorkDoneProgressEnd(message=end_words(event.status)))
            elif token is None:
                token = f"phoenix-{cid}-{event.seq}"
                self.progress[cid] = token
                self.held[token] = []
                self.spawn(self._begin(token, cid))
            else:
                self._send(token, types.WorkDoneProgressReport(message=status_words(event.status)))
        elif isinstance(event, ev.ToolStart) and cid in self.progress:
            text = tool_words(event.tool_name, event.arguments)
            self._send(self.progress[cid], types.WorkDoneProgressReport(message=text))
        elif isinstance(event, ev.Retry) and cid in self.progress:
            text = retry_words(event.attempt, event.max_attempts)
            self._send(self.progress[cid], types.WorkDoneProgressReport(message=text))

    def _warn(self, text: str) -> None:
        self.ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=text))

    def _send(self, token: str, value: Progress) -> None:
        """Send a report or the end, or hold it until the token's begin is out (LSP: begin comes first)."""
        held = self.held.get(token)
        if held is not None:
            held.append(value)
        elif isinstance(value, types.WorkDoneProgressEnd):
            self.ls.work_done_progress.end(token, value)
        else:
            self.ls.work_done_progress.report(token, value)

    async def _begin(self, token: str, cid: str) -> None:
        try:
            await self.ls.work_done_progress.create_async(token)
            runtime = self.ls.hub.runtimes.get(cid) if self.ls.hub else None
            title = title_of(runtime) if runtime else "Phoenix"  # REQ-PROTO-024: the conversation's title
            self.ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, message="Thinking…"))
        finally:
            held = self.held.pop(token, [])
        for value in held:
            self._send(token, value)

    # ----------------------------------------------------------------------------------- dialogs

    def ask_approval(self, runtime: Runtime, tool_use_id: str, call: ToolUse) -> None:
        description = runtime.call_description(call)  # a bash command's review says what it applies
        diff = runtime.patch_diff(call)  # a patch's, or the changes of a bash command under review
        text = approval_text(runtime, call, description, diff)
        decision = values.Decision
        actions = {"Allow": decision.ALLOW, "Deny": decision.DENY, "Always Allow": decision.ALWAYS_ALLOW}

        async def ask() -> None:
            prompt, document = text, None
            if len(text) > MAX_PROMPT_CHARS:  # REQ-PERM-023: shown whole in a document, or not asked at all
                document = await self._open_call(runtime, tool_use_id, call_document(runtime, call, description,
                                                                                     diff))
                if document is None:
                    self.requests.pop(tool_use_id, None)
                    self._deny_unseen(runtime, tool_use_id, call, len(text))
                    return
                prompt = "\n".join(line for line in (
                    approval_head(runtime, call, description),
                    f"The call is {len(text):,} characters long, too long for this dialog: all of it is in "
                    f"{document.name}, which the editor opened. Read it there, then answer.",
                    rule_line(runtime, call)) if line)
            try:
                choice = await self._show(tool_use_id, prompt, list(actions))
            finally:
                if document is not None:
                    with contextlib.suppress(OSError):
                        document.unlink()
            if choice is not False:  # False: the client could not answer; the request stays open
                runtime.answer_approval(tool_use_id, actions.get(str(choice or "Deny"), decision.DENY))

        self.requests[tool_use_id] = self.spawn(ask())

    async def _open_call(self, runtime: Runtime, tool_use_id: str, document: str) -> Path | None:
        """Write the whole call to ``<data dir>/approvals/`` and open it in the editor: its path, or None when
        the editor cannot open documents or did not open it."""
        if not self.view.supports_show_document() or self.ls.hub is None:
            return None
        folder = self.ls.hub.data_dir / "approvals"
        path = folder / f"{runtime.id}-{tool_use_id}.md"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(document, encoding="utf-8")
            shown = await self.ls.window_show_document_async(
                types.ShowDocumentParams(uri=path.as_uri(), take_focus=True))
        except asyncio.CancelledError:  # answered elsewhere meanwhile: nothing is left behind
            with contextlib.suppress(OSError):
                path.unlink()
            raise
        except Exception as exc:  # a full disk, an editor that fails: the call is not asked about unseen
            log.warning("could not show the call %s in the editor (%s)", tool_use_id, exc)
            shown = None
        if shown is not None and getattr(shown, "success", False):
            return path
        with contextlib.suppress(OSError):
            path.unlink()
        return None

    def _deny_unseen(self, runtime: Runtime, tool_use_id: str, call: ToolUse, length: int) -> None:
        """Deny a call this editor cannot show whole, and tell the user and the model why (REQ-PERM-023)."""
        why = (f"it is {length:,} characters long, more than this editor's approval dialog shows "
               f"({MAX_PROMPT_CHARS:,}), and the editor cannot open it as a document (window/showDocument)")
        self._warn(f"Phoenix denied a {call.name} call in conversation {runtime.id[:8]} without asking you: {why}. "
                   "Approving it would have meant approving what you could not read. Use an editor that opens "
                   "documents (or the phoenix chat view) to approve long calls.")
        runtime.answer_approval(tool_use_id, values.Decision.DENY, reason=(
            f"Denied without asking the user: {why}, and the user may approve only what they can read. Do not "
            "retry it as is: split it into smaller calls (e.g. several patches, or a shorter command), each "
            f"under {MAX_PROMPT_CHARS:,} characters."))

    def ask_upgrade(self, runtime: Runtime, tool_use_id: str, reason: str) -> None:
        text = f"phoenix asks for Unrestricted mode (write access) in conversation {runtime.id[:8]}: {reason}"

        async def ask() -> None:
            choice = await self._show(tool_use_id, text, ["Approve", "Deny"])
            if choice is not False:
                runtime.answer_upgrade(choice == "Approve")

        self.requests[tool_use_id] = self.spawn(ask())

    async def _show(self, tool_use_id: str, text: str, titles: list[str]) -> str | bool | None:
        """The title the user chose, None when dismissed (counts as deny), False when the client failed."""
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Warning, message=text, actions=[types.MessageActionItem(title=t) for t in titles]
        )
        self._asked += 1
        msg_id = f"phoenix-ask-{self._asked}"
        try:
            result = await self.ls.protocol.send_request_async("window/showMessageRequest", params, msg_id=msg_id)
        except asyncio.CancelledError:
            # Answered some other way (another client, a cancel): take the dialog back (REQ-PROTO-023).
            with contextlib.suppress(Exception):
                self.ls.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
            raise
        except Exception as exc:  # REQ-PERM-016: never approve by default; the request stays pending
            log.warning("could not ask the client about %s (%s); it stays pending", tool_use_id, exc)
            return False
        finally:
            self.requests.pop(tool_use_id, None)
        if result is None:
            return None  # dismissed (Escape) counts as deny
        title = result.get("title") if isinstance(result, dict) else getattr(result, "title", None)
        return str(title) if title else None

    def withdraw(self, tool_use_id: str) -> None:
        task = self.requests.pop(tool_use_id, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()


class PlainView:
    """The plain-client side of one server: transcripts, turn messages and the current conversation."""

    def __init__(self, ls: Server) -> None:
        self.ls = ls
        self.current: str | None = None  # the conversation the commands act on
        self.shown: set[str] = set()  # transcripts opened in the editor during this server run
        self.sent_drafts: dict[str, str] = {}  # a draft already sent is not written back into the file

    # ------------------------------------------------------------------------------------ events

    def on_event(self, params: dict[str, Any]) -> None:
        """Keep the transcript current and tell the user when a turn ends (plain clients only)."""
        kind, cid = params["kind"], params["conversationId"]
        if params.get("parentConversationId") or TRANSCRIPT not in EVENTS.get(kind, ()):
            return
        hub = self.ls.hub
        if hub is None:
            return
        runtime = hub.runtimes.get(cid)
        if runtime is None:
            return
        try:
            self.write(runtime)
        except OSError as exc:  # a full disk must not stop the conversation; say it once in the log
            log.warning("could not write the transcript of %s (%s)", cid, exc)
        if kind != "status":
            return
        resting = core_state.RESTING_KINDS
        if params["status"] not in resting and cid not in self.shown:
            self.current = self.current or cid
            self.show(runtime, focus=False)
        elif params["status"] in resting and params.get("previous") not in resting:
            self.turn_ended(runtime, params["status"])

    # ---------------------------------------------------------------------------------- transcript

    def path(self, conversation_id: str) -> Path:
        assert self.ls.hub is not None
        return transcript.transcript_path(self.ls.hub.data_dir, conversation_id)

    def write(self, runtime: Runtime, draft: str | None = None) -> Path:
        """Rewrite the transcript, keeping the user's unsent draft (from the open buffer, else the file)."""
        return self._write(runtime, draft)[0]

    def _write(self, runtime: Runtime, draft: str | None = None) -> tuple[Path, str]:
        path = self.path(runtime.id)
        if draft is None:
            draft = self._draft(path)
            if draft and draft == self.sent_drafts.get(runtime.id):
                draft = ""
        assert self.ls.hub is not None
        text = transcript.render(runtime.state, title_of(runtime), draft, self.ls.hub.store.image_size)
        transcript.write(path, text)
        return path, text

    def _draft(self, path: Path) -> str:
        document = self.ls.workspace.text_documents.get(path.as_uri())
        if document is not None:
            return transcript.draft_of(document.source)
        try:
            return transcript.draft_of(transcript.read(path))
        except (confined.ReadRefused, UnicodeDecodeError):
            return ""

    def supports_show_document(self) -> bool:
        window = self.ls.client_capabilities.window
        return bool(window and window.show_document and window.show_document.support)

    def show(self, runtime: Runtime, *, focus: bool, at_draft: bool = False) -> None:
        """Open the transcript in the editor (REQ-PROTO-039); without showDocument, name the file once."""
        path, text = self._write(runtime)
        self.shown.add(runtime.id)
        if not self.supports_show_document():
            self.ls.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Info,
                message=f"Phoenix: the conversation \"{title_of(runtime)}\" is written to {path} "
                "(open it to read the answers; this editor cannot open it for you).",
            ))
            return
        selection = None
        if at_draft:
            line = text.split("\n").index(transcript.DRAFT_MARKER) + 1
            selection = types.Range(start=types.Position(line=line, character=0),
                                    end=types.Position(line=line, character=0))
        params = types.ShowDocumentParams(uri=path.as_uri(), take_focus=focus, selection=selection)

        async def ask() -> None:
            try:
                await self.ls.window_show_document_async(params)
            except Exception as exc:  # an editor that refuses still gets the turn-end message
                log.info("the editor did not open the transcript %s (%s)", path, exc)

        if self.ls.hub is not None:
            self.ls.hub.spawn(ask())

    def turn_ended(self, runtime: Runtime, status: str) -> None:
        """A short window/showMessage when a turn ends: what happened and where the whole answer is."""
        path = self.path(runtime.id)
        answer = ""
        for message in reversed(runtime.state.history):
            if message.role == "assistant" and message.text().strip():
                answer = message.text().strip()
                break
        title = title_of(runtime)
        if status == "idle":
            if self.supports_show_document():
                text = f"Phoenix answered \"{title}\": {shorten(answer, 160)} (the whole answer is in {path.name})"
            else:  # the message is the only way the answer reaches this editor's user
                body = answer if len(answer) <= 3000 else answer[:3000] + "…"
                text = f"Phoenix answered \"{title}\":\n{body}\n(transcript: {path})"
            kind = types.MessageType.Info
        elif status == "error":
            error = getattr(runtime.state.status, "message", "")
            text = f"Phoenix stopped \"{title}\" because of an error: {shorten(error, 300)} Send a message to retry."
            kind = types.MessageType.Warning
        else:
            text = f"Phoenix: \"{title}\": {end_words(status)}."
            kind = types.MessageType.Info
        self.ls.window_show_message(types.ShowMessageParams(type=kind, message=text))
