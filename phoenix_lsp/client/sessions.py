"""The conversations a terminal user can come back to (issue 38): those of this folder, most recent first, as
``--continue``, ``--resume`` (the picker) and ``/conversations`` list them, and a resumed conversation's history
in short.

This folder's conversations are one request: ``phoenix/listConversations`` filtered by the folder (the server
holds it to the session-folder rule, so it compares with the folder the conversations were stored with)."""

from __future__ import annotations

import os
import termios
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..protocol.results import ConversationSummary, ListConversationsResult
from ..protocol.views import ImageBlock, MessageView, TextBlock, ToolResultBlock, ToolUseBlock
from ..safe_text import terminal_safe
from .wording import first_line, tool_summary, tool_words

__all__ = [
    "ANSWER", "Found", "folder_conversations", "full_id", "history_lines", "pick_by_keys", "pick_line",
    "picked",
]

#: how many of this folder's conversations are offered
OFFER_MAX = 20
#: how many messages of a resumed conversation are shown (the latest ones; the server keeps them all)
HISTORY_MAX = 200

#: the style of a line that is the model's answer (drawn as markdown on a terminal: ``Screen.answer``)
ANSWER = "answer"

Request = Callable[[str, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class Found:
    """One conversation of this folder, as the listing and the picker show it."""

    summary: ConversationSummary

    @property
    def id(self) -> str:
        return self.summary.conversation_id


async def folder_conversations(request: Request, folder: Path, limit: int = OFFER_MAX) -> list[Found]:
    """This folder's conversations (not sub-agents), most recently updated first, at most ``limit``: one
    request, however many conversations the store keeps."""
    listed = ListConversationsResult.model_validate(
        await request("phoenix/listConversations", {"workingDirectory": str(folder)}))
    return [Found(summary) for summary in listed.conversations[:limit]]


async def full_id(request: Request, start: str) -> str:
    """The id of the one stored conversation whose id begins with ``start`` (at least 4 characters), of any
    folder; else ``start`` as it is (the server then says what is wrong with it)."""
    if len(start) < 4:
        return start
    listed = ListConversationsResult.model_validate(await request("phoenix/listConversations", {}))
    matches = [s.conversation_id for s in listed.conversations if s.conversation_id.startswith(start)]
    return matches[0] if len(matches) == 1 else start


def when(seconds: float) -> str:
    """A conversation's date as the picker shows it (local time)."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def pick_line(number: int, found: Found) -> str:
    """``  3. 2026-11-28 14:02  idle      first line of the first message  (12 messages)``."""
    s = found.summary
    title = first_line(s.title, 70) or "(no message yet)"
    return (f"{number:>3}. {when(s.updated_at)}  {s.status:<17} {title}  "
            f"({s.message_count} messages, {s.conversation_id[:8]})")


def picked(answer: str, found: list[Found]) -> Found | None:
    """The conversation an answer names: its number in the list, or the start of its id; None for neither."""
    word = answer.strip()
    if word.isdigit() and 1 <= int(word) <= len(found):
        return found[int(word) - 1]
    if len(word) >= 4:
        matches = [f for f in found if f.id.startswith(word)]
        if len(matches) == 1:
            return matches[0]
    return None


def history_lines(messages: list[MessageView]) -> list[tuple[str, str | None]]:
    """A resumed conversation's history in short, each line with its style: the user's messages whole, the
    answers' text, each tool call on one line and its result's first line."""
    lines: list[tuple[str, str | None]] = []
    names: dict[str, str] = {}
    for message in messages[-HISTORY_MAX:]:
        for block in message.content:
            if isinstance(block, TextBlock) and block.text.strip():
                if message.role == "user":
                    lines.append((f"> {block.text.strip()}", "bold"))
                else:
                    lines.append((block.text.strip(), ANSWER))
            elif isinstance(block, ToolUseBlock):
                names[block.tool_use_id] = tool_words(block.tool_name)
                lines.append((f"[tool] {names[block.tool_use_id]} {tool_summary(block.tool_name, block.arguments)}",
                              "cyan"))
            elif isinstance(block, ToolResultBlock):
                name = names.get(block.tool_use_id, "tool")
                # its images first, as the live call's summary named them (REQ-MCP-024)
                summary = first_line("\n".join([*(image.label for image in block.images), block.content]))
                if block.is_error:
                    lines.append((f"[tool] {name} failed: {summary}", "red"))
                else:
                    lines.append((f"[tool] {name} done{': ' + summary if summary else ''}", "dim"))
            elif isinstance(block, ImageBlock):
                lines.append((f"[image] {block.label}", "dim"))
    return lines


_UP = ("\x1b[A", "\x1bOA", "k")
_DOWN = ("\x1b[B", "\x1bOB", "j")
_LEAVE = ("\x03", "\x04", "\x1b", "q")


def _keys(chunk: str) -> list[str]:
    """The keys in what one read of the terminal gave: arrows as their sequences, else one character each."""
    keys: list[str] = []
    while chunk:
        for sequence in (*_UP[:2], *_DOWN[:2]):
            if chunk.startswith(sequence):
                keys.append(sequence)
                chunk = chunk[len(sequence):]
                break
        else:
            keys.append(chunk[0])
            chunk = chunk[1:]
    return keys


def pick_by_keys(fd: int, out: TextIO, lines: list[str]) -> int | None:
    """The picker on a terminal (a thread): ``lines`` drawn with a marker that Up / Down (or k / j) move, a
    number typed picks that line, Enter takes the marked one (or the number typed). Returns the index picked,
    or None for Ctrl-C, Ctrl-D, Esc or q. The terminal reads key by key meanwhile and is given back as it was."""
    saved = termios.tcgetattr(fd)
    keyed = list(saved)
    keyed[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG)  # each key at once; Ctrl-C is a key here
    keyed[6] = list(saved[6])
    keyed[6][termios.VMIN], keyed[6][termios.VTIME] = 1, 0
    marked, typed = 0, ""

    def draw(first: bool) -> None:
        if not first:
            out.write(f"\x1b[{len(lines) + 1}F")  # back to the list's first row
        for index, line in enumerate(lines):
            mark = ">" if index == marked else " "
            out.write(f"\x1b[2K{mark}{terminal_safe(line)}\n")  # a stored title's controls made inert
        out.write(f"\x1b[2KUp/Down and Enter, or type a number; q leaves: {typed}\n")
        out.flush()

    termios.tcsetattr(fd, termios.TCSADRAIN, keyed)
    try:
        draw(True)
        while True:
            chunk = os.read(fd, 64).decode("utf-8", "replace")
            if not chunk:
                return None
            for key in _keys(chunk):
                if key in _LEAVE:
                    return None
                if key in ("\r", "\n"):
                    return marked
                if key in _UP:
                    marked, typed = (marked - 1) % len(lines), ""
                elif key in _DOWN:
                    marked, typed = (marked + 1) % len(lines), ""
                elif key.isdigit():
                    number = int(typed + key) if 1 <= int(typed + key) <= len(lines) else int(key)
                    if 1 <= number <= len(lines):
                        marked, typed = number - 1, str(number)
                elif key in ("\x7f", "\b"):
                    typed = typed[:-1]
            draw(False)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
