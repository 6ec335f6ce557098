"""How the terminal chat opens a conversation (issue 38): a new one, this folder's latest (``--continue``), one
named by id (``--resume ID``) or picked from this folder's list (``--resume``: the arrow keys on a terminal, a
line from a pipe), and ``/new`` and ``/conversations`` switching to another. Resuming shows the history, the
mode, policy, model and route as the server has them, and asks again the approval or upgrade the conversation
waits for."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcException

from ..protocol.results import GetConversationResult, GetRouteResult, NewConversationResult
from ..protocol.statuses import RESTING
from ..protocol.views import MessageView
from .conversation import Conversation
from .events import EventView
from .items import CHANGED, Item, Line
from .screen import Screen
from .sessions import (
    ANSWER,
    HISTORY_MAX,
    Found,
    folder_conversations,
    full_id,
    history_lines,
    pick_by_keys,
    pick_line,
    picked,
)
from .wording import mode_line

__all__ = ["HISTORY_PAGES", "LATEST", "Opener"]

#: ``resume`` for --continue: this folder's latest conversation (no id looks like it: it is the flag itself)
LATEST = "--continue"

#: how many pages of 1,000 messages a resumed conversation's history is read from, at most
HISTORY_PAGES = 20


class Opener:
    """Opens the conversation the chat talks in, and switches to another."""

    def __init__(
        self,
        cwd: Path,
        resume: str | None,
        stdin_fd: int,
        conv: Conversation,
        screen: Screen,
        events: EventView,
        request: Callable[[str, dict[str, Any]], Awaitable[Any]],
        new_conversation: Callable[[], Awaitable[NewConversationResult | None]],
        next_item: Callable[[], Awaitable[Item]],
    ) -> None:
        self.cwd = cwd
        #: None: a new conversation; LATEST: this folder's latest (--continue); "": the list (--resume); else
        #: the id (or the start of an id of this folder's) to resume (--resume ID)
        self.resume = resume
        self.stdin_fd = stdin_fd
        self.conv = conv
        self.screen = screen
        self.events = events
        self.request = request
        self.new_conversation = new_conversation
        self.next_item = next_item
        #: the user left at the --resume list (Ctrl-C, Ctrl-D): no conversation, and no error
        self.left_picker = False

    async def start(self, keyed: bool = False) -> bool:
        """Open the conversation the command line asks for: a new one, this folder's latest, or one resumed
        (by id, or picked from this folder's list: with the arrow keys when ``keyed``). False = leave."""
        if self.resume is None:
            return await self.open_new()
        try:
            found = await folder_conversations(self.request, self.cwd)
        except Exception as exc:  # said, then a new conversation is started
            self.screen.line(f"[resume] the conversations could not be listed ({exc}); starting a new one.", "yellow")
            return await self.open_new()
        choice: Found | None
        if self.resume == LATEST:
            choice = found[0] if found else None
        elif self.resume:
            choice = picked(self.resume, found)
            if choice is None:
                # an id of another folder, or one not listed
                return await self.open_existing(await full_id(self.request, self.resume))
        else:
            if not found:
                choice = None
            else:
                picked_one = await (self.pick_by_keys(found) if keyed else self.pick(found))
                if picked_one is None:
                    return False
                choice = picked_one
        if choice is None:
            self.screen.line(f"[resume] no earlier conversation in {self.cwd}; starting a new one.", "yellow")
            return await self.open_new()
        return await self.open_existing(choice.id)

    async def pick(self, found: list[Found]) -> Found | None:
        """The picker: this folder's conversations, numbered; a number (or the start of an id) picks one,
        Enter the latest. None when the input ended or Ctrl-C was typed."""
        self.screen.line(f"Conversations in {self.cwd} (latest first):", "bold")
        for number, one in enumerate(found, 1):
            self.screen.line(pick_line(number, one))
        while True:
            self.screen.prompt(f"Resume which? [1-{len(found)}, Enter = 1]: ", "bold+cyan")
            item = await self.next_item()
            if item is CHANGED:
                continue
            if not isinstance(item, Line):
                self.screen.close_prompt()
                self.left_picker = True
                return None
            self.screen.typed(item.text)
            if not item.text.strip():
                return found[0]
            choice = picked(item.text, found)
            if choice is not None:
                return choice
            self.screen.line(f"{item.text.strip()!r} is not in the list: type a number from 1 to {len(found)}.",
                             "yellow")

    async def pick_by_keys(self, found: list[Found]) -> Found | None:
        """The picker on a terminal: the arrow keys move a marker, a number picks, Enter takes it."""
        self.screen.line(f"Conversations in {self.cwd} (latest first):", "bold")
        lines = [pick_line(number, one) for number, one in enumerate(found, 1)]
        index = await asyncio.to_thread(pick_by_keys, self.stdin_fd, self.screen.stream, lines)
        if index is None:
            self.left_picker = True
            return None
        return found[index]

    async def route(self) -> str | None:
        """The route persisted for this machine (REQ-PROTO-051), or None when it cannot be read."""
        try:
            return str(GetRouteResult.model_validate(await self.request("phoenix/getRoute", {})).route)
        except Exception:  # the header leaves it out; /route says what is wrong
            return None

    async def open_new(self) -> bool:
        """Start a new conversation in this folder and talk in it (False when the server refused)."""
        started = await self.new_conversation()
        if started is None:
            return False
        self.conv.switch(started.conversation_id, started.mode.value)
        where = started.working_directory
        self.screen.line(f"phoenix-lsp chat · conversation {self.conv.id[:8]} · {where}", "bold")
        self.screen.line(mode_line(started, await self.route()))
        self.screen.line("Type a message; /help lists the commands; Ctrl-C cancels a turn; Ctrl-D quits.", "dim")
        return True

    async def open_existing(self, conversation_id: str) -> bool:
        """Resume a stored conversation: show its history, its mode, model, route and policy as stored, and
        ask again the approval or upgrade it waits for (the server keeps it across restarts)."""
        messages: list[MessageView] = []
        after: int | None = None
        state: GetConversationResult | None = None
        try:
            for _ in range(HISTORY_PAGES):
                # the folder this chat goes on in: the server's resume rule refuses another folder's conversation
                # (this chat writes the edits of its own folder) and a sub-agent
                params: dict[str, Any] = {"conversationId": conversation_id, "limit": 1000,
                                          "workingDirectory": str(self.cwd)}
                if after is not None:
                    params["afterSeq"] = after
                state = GetConversationResult.model_validate(
                    await self.request("phoenix/getConversation", params))
                messages = (messages + state.messages)[-HISTORY_MAX:]
                if not state.has_more or not state.messages:
                    break
                after = state.messages[-1].seq
        except JsonRpcException as exc:
            self.screen.line(f"[resume] {exc.message}{_go_there(exc, conversation_id)}", "red")
            return False
        assert state is not None
        self.conv.switch(state.conversation_id, state.mode.value, state.status, state.last_seq)
        self.screen.line(f"phoenix-lsp chat · resumed conversation {self.conv.id[:8]} · {state.working_directory}",
                         "bold")
        for text, style in history_lines(messages):
            if style == ANSWER:
                self.screen.answer(text)
            else:
                self.screen.line(text, style)
        self.screen.line(f"— end of the history ({len(messages)} messages); the conversation goes on —", "dim")
        self.screen.line(mode_line(state, await self.route()))
        if state.status not in RESTING:
            self.screen.line(f"[resume] the conversation is {state.status}.", "cyan")
        if state.pending_approval is not None:
            self.events.open_approval(self.conv.id, state.pending_approval)
        if state.pending_upgrade is not None:
            self.events.open_upgrade(self.conv.id, state.pending_upgrade.tool_use_id, state.pending_upgrade.reason)
        self.screen.line("Type a message; /help lists the commands; Ctrl-C cancels a turn; Ctrl-D quits.", "dim")
        return True


def _go_there(refused: JsonRpcException, conversation_id: str) -> str:
    """The command that goes on with a conversation the server refused as another folder's, or nothing."""
    data = refused.data if isinstance(refused.data, dict) else {}
    folder = data.get("workingDirectory")
    if data.get("reason") != "otherFolder" or not isinstance(folder, str):
        return ""
    return f" Run phoenix-lsp chat --cwd {folder} --resume {conversation_id[:8]} to go on with it there."
