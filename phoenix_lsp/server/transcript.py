"""A readable Markdown transcript of a conversation, for editors without the phoenix protocol (REQ-PROTO-039).

The transcript is a file in the data directory that the editor shows like any other document. It is
rewritten as the conversation moves on (each persisted message and each status change), so an editor that
reloads changed files shows the answer as it grows. Everything below the draft marker belongs to the user:
it is kept when the file is rewritten, and saving the file with text there sends that text (commands.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from .. import confined
from ..atomic import write_bytes
from ..core.state import ConversationState
from ..core.values import Image, Message, Text, ToolResult, ToolUse
from ..protocol.views import image_label

DRAFT_MARKER = "<!-- phoenix: write your next message below this line, then save the file to send it -->"

#: The status line at the top of a transcript, in words (REQ-PROTO-024's words, for the file).
STATUS_WORDS = {
    "idle": "Ready: write your next message at the end of this file and save it.",
    "awaiting_llm": "Phoenix is thinking…",
    "running_tool": "Phoenix is running a tool…",
    "awaiting_approval": "Phoenix is waiting for your approval (see the editor's prompt).",
    "awaiting_upgrade": "Phoenix asks to make changes (Unrestricted mode): answer the editor's prompt.",
    "awaiting_agents": "Phoenix is waiting for its sub-agents…",
    "summarizing": "Phoenix is summarizing the conversation to free context…",
    "error": "Stopped by an error (see below). Send a message to try again.",
    "exhausted": "The context is full: start a new conversation (code action \"Phoenix: new conversation\").",
    "finished": "Finished.",
}


def transcript_path(data_dir: Path, conversation_id: str) -> Path:
    """Where the transcript of a conversation lives: ``<data dir>/transcripts/<id>.md``."""
    return data_dir / "transcripts" / f"{conversation_id}.md"


def conversation_of(path: Path) -> str | None:
    """The conversation id of a transcript path, or None when ``path`` is not a transcript."""
    if path.suffix != ".md" or path.parent.name != "transcripts":
        return None
    return path.stem


def _fence(text: str) -> str:
    longest = max((len(run) for run in text.split("\n") if run and set(run) == {"`"}), default=0)
    return "`" * max(3, longest + 1)


def _quote(text: str, limit: int = 1500) -> str:
    if len(text) > limit:
        text = text[:limit] + f"\n… ({len(text) - limit} more characters)"
    fence = _fence(text)
    return f"{fence}\n{text.rstrip()}\n{fence}"


def _blocks(message: Message, size: Callable[[str], int | None]) -> Iterable[str]:
    for block in message.content:
        if isinstance(block, Text) and block.text.strip():
            yield block.text.strip()
        elif isinstance(block, Image):
            yield f"*({image_label(block.media_type, size(block.image_id))})*"
        elif isinstance(block, ToolUse):
            args = json.dumps(dict(block.input), separators=(",", ":"), ensure_ascii=False)
            if len(args) > 300:
                args = args[:300] + "…"
            yield f"**Tool call** `{block.name}` `{args}`"
        elif isinstance(block, ToolResult):
            label = "**Tool error**" if block.is_error else "**Tool result**"
            # the images the model got, named as every client names them (REQ-MCP-024)
            named = "".join(f"*({image_label(i.media_type, size(i.image_id))})*\n\n" for i in block.images)
            yield f"{label}\n\n{named}{_quote(block.content or '(no output)')}"


def render(state: ConversationState, title: str, draft: str = "",
           size: Callable[[str], int | None] = lambda image_id: None) -> str:
    """The whole transcript: a header, the status in words, every message, then the user's draft. ``size``: how
    many bytes the store holds of an image (its label's size)."""
    lines = [
        f"# Phoenix: {title or 'new conversation'}",
        "",
        f"*{STATUS_WORDS.get(state.status.kind, state.status.kind)}*",
        "",
        f"mode `{state.mode.value}` · policy `{state.policy.value}` · style `{state.style.value}` · "
        f"folder `{state.working_directory}` · conversation `{state.id}`",
        "",
    ]
    if state.status.kind == "error":
        lines += [f"> **Error:** {getattr(state.status, 'message', '')}", ""]
    for message in state.history:
        parts = list(_blocks(message, size))
        if not parts:
            continue
        if message.tag == "continuation":
            heading = "## Summary of the earlier conversation"
        elif message.role == "assistant":
            heading = "## Phoenix"
        elif all(isinstance(b, ToolResult) for b in message.content):
            heading = "### Tool results"
        else:
            heading = "## You"
        lines += [heading, "", *("\n\n".join(parts).split("\n")), ""]
    lines += ["---", "", DRAFT_MARKER, draft.strip("\n")]
    return "\n".join(lines).rstrip("\n") + "\n"


def draft_of(text: str) -> str:
    """What the user wrote below the draft marker ('' when nothing, or when the marker is gone)."""
    _, marker, draft = text.partition(DRAFT_MARKER)
    return draft.strip() if marker else ""


#: the largest transcript read back (for the user's draft at its end)
MAX_BYTES = 64 * 1024 * 1024


def read(path: Path) -> str:
    """The transcript's text as the disk has it, through the confined reader (beneath the transcripts
    directory, regular file, capped); raises ``confined.ReadRefused``, or UnicodeDecodeError."""
    return confined.read(path, [path.parent], max_bytes=MAX_BYTES).data.decode("utf-8")


def write(path: Path, text: str) -> None:
    """Replace the file in one step, so an editor never reloads half a transcript."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # a fresh temporary name (mkstemp, O_EXCL): a file or symlink planted under a fixed name is never written
    write_bytes(path, text.encode("utf-8"))
