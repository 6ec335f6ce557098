"""``phoenix-lsp chat``: talk to the agent in a terminal (REQ-PROTO-035).

The client starts the server as a subprocess (``python -m phoenix_lsp serve``) and speaks LSP to it as a
*rich* client (``capabilities.experimental.phoenix``), so it receives ``phoenix/event`` notifications. It
streams the answer's text deltas to stdout, shows tool calls, mode changes, retries and errors as short
bracketed lines, asks approvals (y / n / a) and mode upgrades (y / n) at the prompt, and acts as the
"editor" for ``workspace/applyEdit``: it shows the diff and writes the files itself.

Input is read line by line by a thread (stdin may be a terminal or a pipe; a blocking read must not stall
the event loop). Lines are consumed in order, only when the client is ready for them: at the prompt a line
is a message or a command, while a question is open it is the answer, and while the agent works without a
question, typed lines wait (typeahead) — so no message can be sent while a question is open (seed 003).
Ctrl-C while the agent works sends ``phoenix/cancel``; Ctrl-C or Ctrl-D at the prompt exits cleanly.

The parts: ``connection.py`` (the server subprocess and the LSP connection), ``events.py`` (each event on the
screen), ``commands.py`` (the lines the user types), ``editor.py`` (``workspace/applyEdit``), ``conversation.py``
(what the client knows of the conversation), ``items.py`` (what the prompt loop waits for), ``screen.py`` and
``wording.py`` (the output), ``opening.py`` and ``sessions.py`` (the conversation opened or resumed),
``markdown.py`` (answers drawn as markdown). This module wires them together and runs the prompt loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections import deque
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcException

from .. import uris
from ..protocol.results import CancelResult
from ..protocol.statuses import RESTING
from .commands import Commands
from .connection import START_TIMEOUT_S, Connection
from .conversation import Conversation, Question
from .events import EventView
from .items import CHANGED, EOF, GONE, INTERRUPT, Item, Line, TooLong, read_lines
from .opening import LATEST, Opener
from .screen import Screen, isatty

__all__ = ["LATEST", "NO_API_KEY", "Chat", "main"]

NO_API_KEY = (
    "phoenix-lsp chat: ANTHROPIC_API_KEY is not set, so the agent cannot reach the model. "
    "Export it (export ANTHROPIC_API_KEY=sk-ant-...) and run again, or choose another provider's model "
    "(export PHOENIX_MODEL=openai/... or ollama/...)."
)


class Chat:
    """One terminal session: the server subprocess, one conversation, and the prompt loop."""

    def __init__(
        self,
        cwd: Path,
        data_dir: str | None,
        screen: Screen,
        stdin_fd: int = 0,
        server_command: list[str] | None = None,
        resume: str | None = None,
    ) -> None:
        self.cwd = cwd
        self.screen = screen
        self.stdin_fd = stdin_fd
        self.ui: asyncio.Queue[Item] = asyncio.Queue()
        self.typeahead: deque[str] = deque()
        self.conv = Conversation()
        self.cancel_sent = False
        self.eof = False
        self.server = Connection(cwd, data_dir, screen, server_command,
                                 on_event=self._on_event, on_gone=lambda: self.ui.put_nowait(GONE),
                                 on_choice=self._choose)
        self.server.approved = self.conv.approved  # an approved diff is not drawn again when written
        self.events = EventView(self.conv, screen, lambda: self.ui.put_nowait(CHANGED), self.server.request,
                                self.server.spawn)
        self.opener = Opener(cwd, resume, stdin_fd, self.conv, screen, self.events, self.server.request,
                             self.server.new_conversation, self._next)
        self.commands = Commands(self.conv, screen, self.server.request, self.opener)

    async def _choose(self, message: str, titles: list[str]) -> str | None:
        """The server asks the user to pick one of ``titles`` (``window/showMessageRequest``): asked at the
        prompt like an approval; None when the turn ends or the chat leaves first."""
        question = Question(kind="choice", conversation_id=self.conv.id, tool_use_id="",
                            text=[f"[server] {message}"], choices=titles,
                            answered=asyncio.get_running_loop().create_future())
        self.conv.questions.append(question)
        self.ui.put_nowait(CHANGED)
        try:
            assert question.answered is not None
            return await question.answered
        finally:
            if question in self.conv.questions:
                self.conv.questions.remove(question)
                self.ui.put_nowait(CHANGED)

    def _on_event(self, params: dict[str, Any]) -> None:
        self.events.on_event(params)

    # -------------------------------------------------------------------------------- run

    async def run(self) -> int:
        """Start the server, open a conversation, run the prompt loop, shut down. Returns the exit code."""
        loop = asyncio.get_running_loop()
        if not await self.server.start():
            return 1
        try:
            if not await self.server.initialize():
                return 1
            # Lines are read from here on (--resume's list on a pipe reads its answer like any other line); on a
            # terminal that list reads keys itself, and lines are read once it has given the terminal back.
            keyed = self.opener.resume == "" and _is_terminal(self.stdin_fd)
            reader = threading.Thread(
                target=read_lines, args=(self.stdin_fd, self._post_threadsafe(loop)), daemon=True,
                name="phoenix-chat-stdin",
            )
            if not keyed:
                reader.start()
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signal.SIGINT, self.ui.put_nowait, INTERRUPT)
            started = await self.opener.start(keyed)
            if keyed:
                reader.start()
            if not started:
                return self._leave(0 if self.opener.left_picker and not self.server.gone else 1)
            return await self._loop()
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
            await self.server.stop()

    def _post_threadsafe(self, loop: asyncio.AbstractEventLoop) -> Any:
        def post(item: Item) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed while the thread was reading
                loop.call_soon_threadsafe(self.ui.put_nowait, item)

        return post

    # -------------------------------------------------------------------------------- the loop


    @property
    def busy(self) -> bool:
        """The agent is working on a turn (or waiting for an answer, or about to report its error)."""
        return self.conv.status not in RESTING or bool(self.conv.questions) or self.conv.error_pending

    async def _next(self) -> Item:
        """The next input item; typed lines that came early are used first."""
        if self.typeahead:
            return Line(self.typeahead.popleft())
        return await self._received()

    async def _received(self) -> Item:
        """The next item the input thread, the connection or a signal posted. A line that was too long to read
        (REQ-TERM-005) is refused here, on the screen, whatever waits for a line: it is never sent, nor taken
        for an answer to a question."""
        while True:
            item = await self.ui.get()
            if not isinstance(item, TooLong):
                return item
            self.screen.line(item.refusal(), "yellow")

    def _leave(self, code: int) -> int:
        self.screen.close_prompt()
        self.screen.end_line()
        return code

    async def _loop(self) -> int:
        prompt_shown = False
        while True:
            if self.server.gone:
                return self._server_gone()
            if not self.busy:
                self.cancel_sent = False
                if self.eof and not self.typeahead:
                    return self._leave(0)
                if not prompt_shown:
                    self.screen.prompt("> ", "bold+cyan")
                    prompt_shown = True
                item = await self._next()
                if isinstance(item, Line):
                    prompt_shown = False
                    self.screen.typed(item.text)
                    if not await self.commands.handle_line(item.text):
                        return self._leave(0)
                elif item is EOF or item is INTERRUPT:
                    return self._leave(0)
                continue
            if prompt_shown:  # the agent started working without a line from us (e.g. after a restore)
                self.screen.close_prompt()
                prompt_shown = False
            question = self.conv.questions[0] if self.conv.questions else None
            if question is None:
                # Working: wait for a change; lines typed meanwhile wait their turn.
                item = await self._received()
                if isinstance(item, Line):
                    self.typeahead.append(item.text)
                elif item is EOF:
                    self.eof = True  # finish the turn, then leave
                elif item is INTERRUPT and not await self.interrupt():
                    return self._leave(0)
                continue
            if not question.shown:
                for text in question.text:
                    self.screen.line(text, "yellow")
                self.screen.prompt(question.ask, "bold+yellow")
                question.shown = True
            if self.eof and not self.typeahead:
                # Nobody is left to answer: cancel the turn rather than leave it hanging.
                self.screen.close_prompt()
                self.screen.line("[input ended] nobody can answer, so the turn is cancelled.", "yellow")
                if not await self.interrupt():
                    return self._leave(0)
                continue
            item = await self._next()
            if isinstance(item, Line):
                if question in self.conv.questions:
                    self.screen.typed(item.text)
                    await self.commands.answer(question, item.text)
                else:
                    self.typeahead.appendleft(item.text)  # the question closed meanwhile: keep the line
            elif item is EOF:
                self.eof = True
            elif item is INTERRUPT:
                self.screen.close_prompt()
                if not await self.interrupt():
                    return self._leave(0)

    def _server_gone(self) -> int:
        self.server.report_gone()
        return 1

    async def interrupt(self) -> bool:
        """Ctrl-C while working: cancel the turn. A second Ctrl-C before it ends leaves. False = leave."""
        self.screen.close_prompt()
        if self.cancel_sent:
            self.screen.line("[cancel] the server has not ended the turn yet; leaving.", "yellow")
            return False
        self.cancel_sent = True
        self.screen.line("^C [cancel] cancelling the current turn...", "yellow")
        try:
            result = await asyncio.wait_for(
                self.server.request("phoenix/cancel", {"conversationId": self.conv.id}), START_TIMEOUT_S
            )
        except JsonRpcException as exc:
            self.screen.line(f"[error] {exc.message}", "red")
            return True
        except Exception as exc:
            self.screen.line(f"[error] the cancel request failed ({exc}); leaving.", "red")
            return False
        status = CancelResult.model_validate(result).status
        if status in RESTING:
            self.conv.status = status
            self.conv.drop_questions()
            self.screen.line(f"[cancel] turn cancelled; the conversation is {status}.", "yellow")
        return True


# ------------------------------------------------------------------------------------------------ entry


def _is_terminal(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def main(cwd: str, data_dir: str | None, resume: str | None = None) -> int:
    """``phoenix-lsp chat``: returns the process exit code (2 = cannot start: no API key or no folder)."""
    model = os.environ.get("PHOENIX_MODEL", "").strip()
    on_anthropic = "/" not in model or model.startswith("anthropic/")  # another provider needs no Anthropic key
    if on_anthropic and not os.environ.get("ANTHROPIC_API_KEY", "").strip():
        print(NO_API_KEY, file=sys.stderr)
        return 2
    try:  # REQ-URI-002: the server's one session-folder rule, said before the server starts (a shell word:
        # its ~ is the user's own, expanded as the shell would)
        directory = Path(uris.session_folder(os.path.abspath(os.path.expanduser(cwd))))
    except uris.UriError as exc:
        print(f"phoenix-lsp chat: --cwd: {exc}", file=sys.stderr)
        return 2
    # pygls logs protocol trouble at WARNING; only real errors should reach the terminal.
    logging.getLogger("pygls").setLevel(logging.ERROR)
    screen = Screen(sys.stdout, echo_input=not isatty(sys.stdin))
    chat = Chat(directory, data_dir, screen, resume=resume)
    try:
        return asyncio.run(chat.run())
    except KeyboardInterrupt:  # Ctrl-C before the handler was installed (during start-up)
        return 130
