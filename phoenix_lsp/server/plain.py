"""What an editor without the phoenix protocol sees (REQ-PROTO-023, 024, 038, 039).

A plain client gets no ``phoenix/event``. This module turns the conversation into things any LSP editor
shows: progress in words a person understands, approval texts that read well (with the diff of a patch), a
Markdown transcript of each conversation opened with ``window/showDocument`` where the editor supports it,
and a short ``window/showMessage`` when a turn ends. It also remembers which conversation the plain user is
talking to, for the commands of ``commands.py``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .lazy import LazyModule

if TYPE_CHECKING:
    from ..core.values import ToolUse
    from .app import PhoenixServer
    from .runtime import Runtime

log = logging.getLogger(__name__)
transcript = LazyModule("phoenix_lsp.server.transcript")  # imports the core: only when a plain client needs it

RESTING = ("idle", "error", "exhausted", "finished")

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


def tool_words(name: str, arguments: Any) -> str:
    """What a tool call does, for a progress report ("Reading src/app.py", "Running `make test`")."""
    args = arguments if isinstance(arguments, dict) else {}
    path = str(args.get("path") or ".")
    if name == "read_file":
        return f"Reading {path}"
    if name == "list_directory":
        return f"Looking at the folder {path}"
    if name == "search_files":
        return f"Searching for {shorten(str(args.get('pattern') or args.get('query') or ''), 40)}"
    if name == "bash":
        return f"Running `{shorten(str(args.get('command', '')), 60)}`"
    if name == "patch":
        return f"Editing {path}"
    if name == "spawn_agents":
        return "Starting sub-agents"
    if name == "request_mode_upgrade":
        return "Asking to make changes"
    return f"Running {name}"


def retry_words(params: dict[str, Any]) -> str:
    return f"The model service did not answer; trying again (attempt {params['attempt']} of {params['maxAttempts']})"


def title_of(runtime: Runtime) -> str:
    """The conversation's title as listings show it: its first user message, shortened."""
    for message in runtime.state.history:
        if message.role == "user" and not message.tag and message.text().strip():
            return shorten(message.text(), 60)
    return "new conversation"


def approval_text(runtime: Runtime, call: ToolUse, description: str) -> str:
    """The text of a plain client's approval dialog: whole words, compact arguments, a short diff for a patch."""
    head = f"Phoenix wants to run {call.name} in conversation {runtime.id[:8]} (\"{title_of(runtime)}\")"
    about = shorten(description.split("\n\n")[0], 200) if description else ""
    lines = [f"{head}: {about}" if about else head]
    args = json.dumps(dict(call.input), separators=(",", ":"), ensure_ascii=False)  # compact (REQ-PERM-005)
    if len(args) > 400:
        args = args[:400] + f"… [{len(args) - 400} more characters]"
    lines.append(f"Arguments: {args}")
    diff = runtime.patch_diff(call) if call.name == "patch" else None
    if diff:  # the change itself, not only the JSON that describes it
        lines.append(f"Change to {call.input.get('path', 'the file')}:")
        lines.append(short_diff(diff))
    return "\n".join(lines)


def short_diff(diff: str, max_lines: int = 30) -> str:
    """The changed lines of a unified diff (without its file headers), at most ``max_lines``."""
    body = [ln for ln in diff.splitlines() if not ln.startswith(("--- ", "+++ "))]
    if len(body) > max_lines:
        body = [*body[:max_lines], f"… ({len(body) - max_lines} more diff lines)"]
    return "\n".join(body)


class PlainView:
    """The plain-client side of one server: transcripts, turn messages and the current conversation."""

    def __init__(self, ls: PhoenixServer) -> None:
        self.ls = ls
        self.current: str | None = None  # the conversation the commands act on
        self.shown: set[str] = set()  # transcripts opened in the editor during this server run
        self.sent_drafts: dict[str, str] = {}  # a draft already sent is not written back into the file

    # ------------------------------------------------------------------------------------ events

    def on_event(self, params: dict[str, Any]) -> None:
        """Keep the transcript current and tell the user when a turn ends (plain clients only)."""
        kind, cid = params["kind"], params["conversationId"]
        if params.get("parentConversationId") or kind not in ("message", "status", "modeChanged", "policyChanged"):
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
        if params["status"] not in RESTING and cid not in self.shown:
            self.current = self.current or cid
            self.show(runtime, focus=False)
        elif params["status"] in RESTING and params.get("previous") not in RESTING:
            self.turn_ended(runtime, params["status"])

    # ---------------------------------------------------------------------------------- transcript

    def path(self, conversation_id: str) -> Path:
        assert self.ls.hub is not None
        return transcript.transcript_path(self.ls.hub.store.path.parent, conversation_id)

    def write(self, runtime: Runtime, draft: str | None = None) -> Path:
        """Rewrite the transcript, keeping the user's unsent draft (from the open buffer, else the file)."""
        path = self.path(runtime.id)
        if draft is None:
            draft = self._draft(path)
            if draft and draft == self.sent_drafts.get(runtime.id):
                draft = ""
        transcript.write(path, transcript.render(runtime.state, title_of(runtime), draft))
        return path

    def _draft(self, path: Path) -> str:
        document = self.ls.workspace.text_documents.get(path.as_uri())
        if document is not None:
            return transcript.draft_of(document.source)
        try:
            return transcript.draft_of(path.read_text(encoding="utf-8"))
        except OSError:
            return ""

    def supports_show_document(self) -> bool:
        window = self.ls.client_capabilities.window
        return bool(window and window.show_document and window.show_document.support)

    def show(self, runtime: Runtime, *, focus: bool, at_draft: bool = False) -> None:
        """Open the transcript in the editor (REQ-PROTO-039); without showDocument, name the file once."""
        path = self.write(runtime)
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
            line = path.read_text(encoding="utf-8").split("\n").index(transcript.DRAFT_MARKER) + 1
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
