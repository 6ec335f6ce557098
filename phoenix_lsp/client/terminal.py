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
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import logging
import os
import re
import signal
import sys
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, cast

from lsprotocol import types
from pydantic import ValidationError
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient

from ..protocol import events as ev
from ..protocol.catch_up import EventSeq
from ..protocol.converter import plain_converter
from ..protocol.results import (
    CancelResult,
    GetConversationResult,
    ListModelsResult,
    NewConversationResult,
    SendMessageResult,
    SetModelResult,
    SetStyleResult,
)
from ..protocol.statuses import RESTING, StatusKind
from ..protocol.views import PendingApproval, TokenUsage
from ..safe_text import terminal_safe
from .workspace_edit import EditError, plan_workspace_edit, write_plan

__all__ = ["NO_API_KEY", "Chat", "Screen", "main"]

def group_by_provider(models: list[Any]) -> list[tuple[str, list[Any]]]:
    """The listed models under their providers, in the order the server listed them (Anthropic's first)."""
    groups: dict[str, list[Any]] = {}
    for model in models:
        groups.setdefault(model.provider or "anthropic", []).append(model)
    return list(groups.items())

NO_API_KEY = (
    "phoenix-lsp chat: ANTHROPIC_API_KEY is not set, so the agent cannot reach the model. "
    "Export it (export ANTHROPIC_API_KEY=sk-ant-...) and run again, or choose another provider's model "
    "(export PHOENIX_MODEL=openai/... or ollama/...)."
)

HELP = """\
Type a message and press Enter; the answer streams below. Commands:
  /execute          switch to Unrestricted mode (the agent may change files, after your approvals)
  /plan             switch back to Restricted mode (read-only, sandboxed)
  /style NAME       chat | discussion | plan | development | task
  /policy POLICY    interactive (ask before each write or command) | auto (do not ask)
  /model [ID]       list the models this key can use, or switch to one from the next turn
  /usage            tokens used so far (sub-agents included), how much came from the cache, estimated cost
  /help             this text
  /quit             leave (Ctrl-D at the prompt does the same)
While the agent works, Ctrl-C cancels the current turn. Approvals: y = allow, n = deny, a = always allow
this tool in this conversation. Upgrade requests: y = approve, n = deny."""

STYLES = ("chat", "discussion", "plan", "development", "task")
POLICIES = ("auto", "interactive")

#: How long to wait for the server to start, answer a request or shut down before giving up on it.
START_TIMEOUT_S = 30.0
SHUTDOWN_TIMEOUT_S = 5.0

_COMMAND = re.compile(r"^/[a-z]+$")


# ------------------------------------------------------------------------------------------------ output


class Screen:
    """Plain-text output that knows whether the cursor is at the start of a line; colours only on a TTY."""

    COLORS = {"dim": "2", "bold": "1", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}

    def __init__(self, stream: TextIO, color: bool | None = None, echo_input: bool = False) -> None:
        self.stream = stream
        if color is None:
            color = _isatty(stream) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        self.color = color
        #: when stdin is not a terminal nothing echoes the typed line, so the client does (readable logs)
        self.echo_input = echo_input
        self.at_line_start = True
        #: the prompt the user is typing at, redrawn when other output interrupts it
        self.open_prompt: str | None = None

    def paint(self, text: str, style: str | None) -> str:
        """``text`` wrapped in the ANSI colour ``style`` when colours are on."""
        if not style or not self.color:
            return text
        codes = ";".join(self.COLORS[s] for s in style.split("+"))
        return f"\x1b[{codes}m{text}\x1b[0m"

    def text(self, text: str) -> None:
        """Streamed text, written as it comes (control sequences made inert: REQ-SEC-004)."""
        if not text:
            return
        text = terminal_safe(text)
        self.stream.write(text)
        self.stream.flush()
        self.at_line_start = text.endswith("\n")

    def end_line(self) -> None:
        """Finish a partly written line, so the next output starts on a fresh one."""
        if not self.at_line_start:
            self.stream.write("\n")
            self.stream.flush()
            self.at_line_start = True

    def line(self, text: str, style: str | None = None) -> None:
        """One full line (or several), on a fresh line; an open prompt is drawn again below it. The text
        may come from the model, a tool or a file: its control sequences are made inert (REQ-SEC-004)."""
        self.end_line()
        self.stream.write(self.paint(terminal_safe(text), style) + "\n")
        self.at_line_start = True
        if self.open_prompt is not None:
            self.stream.write(self.open_prompt)
            self.at_line_start = False
        self.stream.flush()

    def prompt(self, text: str, style: str | None = None) -> None:
        """A prompt, without a newline: the user types after it."""
        self.end_line()
        self.open_prompt = self.paint(terminal_safe(text), style)
        self.stream.write(self.open_prompt)
        self.stream.flush()
        self.at_line_start = False

    def typed(self, line: str) -> None:
        """The user's line was consumed: on a terminal it already echoed, from a pipe we echo it."""
        if self.echo_input and not self.at_line_start:
            self.stream.write(line + "\n")
            self.stream.flush()
        self.at_line_start = True
        self.open_prompt = None

    def close_prompt(self) -> None:
        """The prompt is no longer waiting for input (the question closed; the client is leaving)."""
        self.open_prompt = None


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def compact(value: Any, limit: int = 200) -> str:
    """Compact JSON of ``value``, cut to ``limit`` characters."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def whole(value: Any) -> str:
    """All of ``value`` as compact JSON on one line (an approval's arguments: never cut)."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def first_line(text: str, limit: int = 120) -> str:
    """The first non-empty line of ``text``, cut to ``limit`` characters."""
    for line in str(text).splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return ""


def usage_lines(usage: TokenUsage) -> list[str]:
    """The ``/usage`` report from getConversation's ``usage`` (issue 16): totals, cache share, cost estimate."""
    total, agents = usage.total, usage.sub_agents
    read, write, fresh = total.cache_read_tokens, total.cache_write_tokens, total.input_tokens
    input_all = read + write + fresh
    share = f"{read / input_all:.0%}" if input_all else "0%"
    lines = [
        f"[usage] {total.requests or 0} requests ({agents.requests or 0} by sub-agents): "
        f"{input_all:,} input tokens ({fresh:,} uncached, {write:,} written to and {read:,} read from the cache: "
        f"{share} cached), {total.output_tokens:,} output tokens",
    ]
    if usage.estimated_cost is not None:
        lines.append(f"[usage] estimated cost: ${usage.estimated_cost.usd:.4f} (an estimate from list prices)")
    else:
        lines.append("[usage] estimated cost: unknown for this model (set modelPrices to get an estimate)")
    return lines


def tool_summary(name: str, arguments: Any) -> str:
    """How a tool call is shown: the command for bash, the path for file tools, else compact JSON."""
    args = arguments if isinstance(arguments, dict) else {}
    if name == "bash" and isinstance(args.get("command"), str):
        return f"$ {first_line(args['command'], 160)}"
    if isinstance(args.get("path"), str) and len(args) <= 2:
        return str(args["path"])
    return compact(arguments, 160)


# ------------------------------------------------------------------------------------------------ input


@dataclass(frozen=True)
class Line:
    """A line the user typed (without its newline)."""

    text: str


class _Signal:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


EOF = _Signal("EOF")  # stdin ended (Ctrl-D, or the pipe closed)
INTERRUPT = _Signal("INTERRUPT")  # Ctrl-C
CHANGED = _Signal("CHANGED")  # the conversation's state changed: status, a question opened or closed
GONE = _Signal("GONE")  # the server process exited

Item = Line | _Signal


def read_lines(fd: int, post: Any) -> None:
    """Read ``fd`` until EOF, calling ``post(Line(...))`` per line and ``post(EOF)`` at the end (a thread).

    ``os.read`` (not ``sys.stdin``) so that the daemon thread holds no Python buffer lock at exit.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            pending += decoder.decode(b"", final=True)
            if pending:
                post(Line(pending.rstrip("\r")))
            post(EOF)
            return
        pending += decoder.decode(chunk)
        while "\n" in pending:
            line, pending = pending.split("\n", 1)
            post(Line(line.rstrip("\r")))


# ------------------------------------------------------------------------------------------------ the chat


@dataclass
class Question:
    """An open approval or upgrade request waiting for the user's answer."""

    kind: str  # "approval" | "upgrade"
    conversation_id: str
    tool_use_id: str
    text: list[str] = field(default_factory=list)
    shown: bool = False
    #: Always Allow's scopes as (rule, label), narrowest first: `a` takes the first, `t` the whole tool
    scopes: list[tuple[str, str]] = field(default_factory=list)

    @property
    def retry_prompt(self) -> str:
        if len(self.scopes) > 1:
            return (f"Please answer y (allow), n (deny), a (always allow {self.scopes[0][1]}) or t (always allow "
                    f"{self.scopes[-1][1]}, every call): ")
        return "Please answer y (allow), n (deny) or a (always allow): "


class Chat:
    """One terminal session: the server subprocess, one conversation, and the prompt loop."""

    def __init__(
        self,
        cwd: Path,
        data_dir: str | None,
        screen: Screen,
        stdin_fd: int = 0,
        server_command: list[str] | None = None,
    ) -> None:
        self.cwd = cwd
        self.data_dir = data_dir
        self.screen = screen
        self.stdin_fd = stdin_fd
        self.server_command = server_command or [
            sys.executable, "-m", "phoenix_lsp", "serve", *(["--data-dir", data_dir] if data_dir else []),
        ]
        self.client = LanguageClient("phoenix-lsp chat", "1", converter_factory=plain_converter)
        self.ui: asyncio.Queue[Item] = asyncio.Queue()
        self.typeahead: deque[str] = deque()
        self.conversation_id = ""
        self.status: StatusKind = "idle"
        self.mode = ""
        self.questions: list[Question] = []
        self.tool_names: dict[str, str] = {}
        self.seq = EventSeq()  # the catch-up rule (REQ-PROTO-007)
        self.cancel_sent = False
        #: the status turned to ``error``; its ``error`` event (sent just after) is shown before the prompt
        self.error_pending = False
        self.eof = False
        self.gone = False
        self.stopping = False
        self.stderr_tail: deque[str] = deque(maxlen=20)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._register()

    # -------------------------------------------------------------------------------- LSP plumbing

    def _register(self) -> None:
        client = self.client
        # pygls' decorator is unannotated; a typed alias keeps the handlers checked
        feature = cast(Callable[[str], Callable[[Callable[..., Any]], Any]], client.feature)

        @feature("phoenix/event")
        def on_event(params: Any) -> None:
            try:
                self.on_event(params if isinstance(params, dict) else dict(params))
            except Exception as exc:  # a malformed event must not end the session
                self.screen.line(f"[client] could not show an event: {exc}", "red")

        @feature(types.WORKSPACE_APPLY_EDIT)
        def on_apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            return self.apply_edit(params)

        @feature(types.WINDOW_SHOW_MESSAGE)
        def on_show_message(params: types.ShowMessageParams) -> None:
            style = "yellow" if params.type in (types.MessageType.Warning, types.MessageType.Error) else "dim"
            self.screen.line(f"[server] {params.message}", style)

        @feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def on_show_message_request(params: types.ShowMessageRequestParams) -> None:
            # Only plain clients get these; a rich client answers through phoenix/* requests instead.
            self.screen.line(f"[server] {params.message}", "yellow")

        @feature(types.WINDOW_LOG_MESSAGE)
        def on_log_message(params: types.LogMessageParams) -> None:
            return None  # the server's log is in its data directory; the chat stays readable

        original_exit = client.server_exit

        async def server_exit(server: asyncio.subprocess.Process) -> None:
            await original_exit(server)
            if not self.stopping:
                self.gone = True
                self.ui.put_nowait(GONE)

        client.server_exit = server_exit  # type: ignore[method-assign]

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send one request and wait for its result (JSON-RPC errors raise ``JsonRpcException``)."""
        return await self.client.protocol.send_request_async(method, params)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        """Keep the server's last stderr lines (for a crash report) and keep its pipe from filling up."""
        while True:
            raw = await stream.readline()
            if not raw:
                return
            self.stderr_tail.append(raw.decode("utf-8", "replace").rstrip())

    def _log_hint(self) -> str:
        if self.data_dir:
            return str(Path(self.data_dir) / "phoenix-lsp.log")
        from ..store import default_data_dir

        return str(default_data_dir() / "phoenix-lsp.log")

    # -------------------------------------------------------------------------------- run

    async def run(self) -> int:
        """Start the server, open a conversation, run the prompt loop, shut down. Returns the exit code."""
        loop = asyncio.get_running_loop()
        try:
            # A session of its own: a Ctrl-C in the terminal goes to this client only, which turns it into
            # phoenix/cancel; the server must not be killed by it.
            await self.client.start_io(*self.server_command, start_new_session=True, cwd=str(self.cwd))
        except OSError as exc:
            self.screen.line(f"phoenix-lsp chat: could not start the server ({exc}).", "red")
            return 1
        process = getattr(self.client, "_server", None)  # pygls keeps the process private
        if process is not None and process.stderr is not None:
            self._spawn(self._drain_stderr(process.stderr))
        try:
            if not await self._start():
                return 1
            threading.Thread(
                target=read_lines, args=(self.stdin_fd, self._post_threadsafe(loop)), daemon=True,
                name="phoenix-chat-stdin",
            ).start()
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signal.SIGINT, self.ui.put_nowait, INTERRUPT)
            return await self._loop()
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
            await self._stop()

    def _post_threadsafe(self, loop: asyncio.AbstractEventLoop) -> Any:
        def post(item: Item) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed while the thread was reading
                loop.call_soon_threadsafe(self.ui.put_nowait, item)

        return post

    async def _start(self) -> bool:
        capabilities = types.ClientCapabilities(
            workspace=types.WorkspaceClientCapabilities(
                apply_edit=True,
                workspace_edit=types.WorkspaceEditClientCapabilities(
                    document_changes=True,
                    resource_operations=[
                        types.ResourceOperationKind.Create,
                        types.ResourceOperationKind.Rename,
                        types.ResourceOperationKind.Delete,
                    ],
                ),
            ),
            window=types.WindowClientCapabilities(work_done_progress=False),
            general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
            experimental={"phoenix": {"version": 1}},
        )
        params = types.InitializeParams(
            capabilities=capabilities,
            process_id=os.getpid(),
            client_info=types.ClientInfo(name="phoenix-lsp chat"),
            root_uri=self.cwd.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=self.cwd.as_uri(), name=self.cwd.name or "/")],
        )
        try:
            await asyncio.wait_for(self.client.initialize_async(params), START_TIMEOUT_S)
            self.client.initialized(types.InitializedParams())
            result = await asyncio.wait_for(
                self.request("phoenix/newConversation", {"workingDirectory": str(self.cwd)}), START_TIMEOUT_S
            )
        except (Exception, asyncio.CancelledError) as exc:
            detail = exc.message if isinstance(exc, JsonRpcException) else (str(exc) or type(exc).__name__)
            tail = "; ".join(list(self.stderr_tail)[-3:])
            self.screen.line(
                f"phoenix-lsp chat: the server did not start a conversation ({detail}). "
                f"{'Server said: ' + tail + '. ' if tail else ''}See its log in {self._log_hint()}.",
                "red",
            )
            return False
        started = NewConversationResult.model_validate(result)
        self.conversation_id = started.conversation_id
        self.mode = started.mode.value
        where = started.working_directory
        self.screen.line(f"phoenix-lsp chat · conversation {self.conversation_id[:8]} · {where}", "bold")
        self.screen.line(self._mode_line(started))
        self.screen.line("Type a message; /help lists the commands; Ctrl-C cancels a turn; Ctrl-D quits.", "dim")
        return True

    @staticmethod
    def _mode_line(started: NewConversationResult) -> str:
        sandbox = started.sandbox
        mode = started.mode.value
        if sandbox.available:
            shield = f"kernel sandbox: Landlock ABI {sandbox.landlock_abi}"
            if sandbox.missing:
                shield += f", missing: {', '.join(sandbox.missing)}"
        else:
            shield = f"no kernel sandbox: {sandbox.reason or 'unavailable'}; only Unrestricted mode"
        what = "read-only" if mode == "restricted" else "may change files, with your approval"
        return (
            f"mode: {mode} ({what}) · {shield} · style: {started.style.value} · "
            f"approvals: {started.approval_policy.value}"
        )

    async def _stop(self) -> None:
        """Shut the server down politely (shutdown + exit), and firmly if it does not go."""
        self.stopping = True
        process: asyncio.subprocess.Process | None = getattr(self.client, "_server", None)
        if process is not None and process.returncode is None and not self.gone:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.client.shutdown_async(None), SHUTDOWN_TIMEOUT_S)
            with contextlib.suppress(Exception):
                self.client.exit(None)
        if process is not None:
            try:
                await asyncio.wait_for(process.wait(), SHUTDOWN_TIMEOUT_S)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        with contextlib.suppress(Exception):
            stop = cast(Callable[[], Awaitable[None]], self.client.stop)  # unannotated in pygls
            await asyncio.wait_for(stop(), SHUTDOWN_TIMEOUT_S)
        for task in list(self._tasks):
            task.cancel()

    # -------------------------------------------------------------------------------- the loop

    @property
    def busy(self) -> bool:
        """The agent is working on a turn (or waiting for an answer, or about to report its error)."""
        return self.status not in RESTING or bool(self.questions) or self.error_pending

    async def _next(self) -> Item:
        """The next input item; typed lines that came early are used first."""
        if self.typeahead:
            return Line(self.typeahead.popleft())
        return await self.ui.get()

    def _leave(self, code: int) -> int:
        self.screen.close_prompt()
        self.screen.end_line()
        return code

    async def _loop(self) -> int:
        prompt_shown = False
        while True:
            if self.gone:
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
                    if not await self.handle_line(item.text):
                        return self._leave(0)
                elif item is EOF or item is INTERRUPT:
                    return self._leave(0)
                continue
            if prompt_shown:  # the agent started working without a line from us (e.g. after a restore)
                self.screen.close_prompt()
                prompt_shown = False
            question = self.questions[0] if self.questions else None
            if question is None:
                # Working: wait for a change; lines typed meanwhile wait their turn.
                item = await self.ui.get()
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
                if question.kind == "approval":
                    ask = "Allow? [y]es / [n]o / [a]lways / [t]ool: " if len(question.scopes) > 1 else \
                        "Allow? [y]es / [n]o / [a]lways: "
                else:
                    ask = "Approve? [y/n]: "
                self.screen.prompt(ask, "bold+yellow")
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
                if question in self.questions:
                    self.screen.typed(item.text)
                    await self.answer(question, item.text)
                else:
                    self.typeahead.appendleft(item.text)  # the question closed meanwhile: keep the line
            elif item is EOF:
                self.eof = True
            elif item is INTERRUPT:
                self.screen.close_prompt()
                if not await self.interrupt():
                    return self._leave(0)

    def _server_gone(self) -> int:
        process = getattr(self.client, "_server", None)
        code = process.returncode if process is not None else None
        tail = "; ".join(list(self.stderr_tail)[-3:])
        self.screen.line(
            f"phoenix-lsp chat: the server stopped unexpectedly (exit code {code}). "
            f"{'It said: ' + tail + '. ' if tail else ''}Its log is in {self._log_hint()}; "
            "your conversation is saved there too.",
            "red",
        )
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
                self.request("phoenix/cancel", {"conversationId": self.conversation_id}), START_TIMEOUT_S
            )
        except JsonRpcException as exc:
            self.screen.line(f"[error] {exc.message}", "red")
            return True
        except Exception as exc:
            self.screen.line(f"[error] the cancel request failed ({exc}); leaving.", "red")
            return False
        status = CancelResult.model_validate(result).status
        if status in RESTING:
            self.status = status
            self.questions = [q for q in self.questions if q.conversation_id != self.conversation_id]
            self.screen.line(f"[cancel] turn cancelled; the conversation is {status}.", "yellow")
        return True

    # -------------------------------------------------------------------------------- lines and commands

    async def handle_line(self, line: str) -> bool:
        """A line typed at the prompt: a command or a message. False = leave."""
        text = line.strip()
        if not text:
            return True
        command, _, argument = text.partition(" ")
        argument = argument.strip()
        if not _COMMAND.match(command):
            await self.send(line)
            return True
        if command in ("/quit", "/exit"):
            return False
        if command == "/help":
            self.screen.line(HELP)
        elif command in ("/execute", "/plan"):
            if argument:
                self.screen.line(f"{command} takes no argument; send it alone, then your message.", "yellow")
            else:
                await self.send(command)
        elif command == "/style":
            if argument not in STYLES:
                self.screen.line(f"Usage: /style NAME, where NAME is one of {', '.join(STYLES)}.", "yellow")
            else:
                result = await self._call("phoenix/setStyle", style=argument)
                suggestion = SetStyleResult.model_validate(result).suggestion if result is not None else None
                if suggestion is not None:
                    self.screen.line(f"[style] tip: type {suggestion.command} to switch modes.", "dim")
        elif command == "/model":
            await self._model(argument)
        elif command == "/usage":
            result = await self._call("phoenix/getConversation", limit=1)
            if result is not None:
                for line in usage_lines(GetConversationResult.model_validate(result).usage):
                    self.screen.line(line, "dim")
        elif command == "/policy":
            if argument not in POLICIES:
                self.screen.line("Usage: /policy auto|interactive.", "yellow")
            else:
                await self._call("phoenix/setApprovalPolicy", policy=argument)
        else:
            self.screen.line(f"Unknown command {command}; /help lists the commands.", "yellow")
        return True

    async def _model(self, model: str) -> None:
        """``/model``: the models to choose from (the one in use marked); ``/model ID``: switch to it."""
        if model:
            result = await self._call("phoenix/setModel", model=model)
            if result is not None and not SetModelResult.model_validate(result).changed:
                self.screen.line(f"[model] already {model}", "dim")
            return
        current = await self._call("phoenix/getConversation", limit=1)
        try:
            listed = ListModelsResult.model_validate(await self.request("phoenix/listModels", {}))
        except JsonRpcException as exc:
            self.screen.line(f"[error] {exc.message}", "red")
            return
        in_use = GetConversationResult.model_validate(current).model if current is not None else None
        for provider, models in group_by_provider(listed.models):  # one heading per provider (issue 27)
            self.screen.line(f"{provider}:", "bold")
            for m in models:
                mark = "*" if m.id == in_use else " "
                unknown = m.context_window_known is False
                window = f"{m.context_window:,} tokens" + (", assumed: set it in the providers file" if unknown else "")
                self.screen.line(f"{mark} {m.id:<28} {m.name} ({window})", "dim")
        if listed.reason:
            self.screen.line(listed.reason, "yellow")
        for listing in listed.providers or []:
            if listing.reason:
                self.screen.line(listing.reason, "yellow")
        self.screen.line("Switch with /model ID (from the next turn).", "dim")

    async def _call(self, method: str, **params: Any) -> dict[str, Any] | None:
        try:
            result = await self.request(method, {"conversationId": self.conversation_id, **params})
        except JsonRpcException as exc:
            self.screen.line(f"[error] {exc.message}", "red")
            return None
        except Exception as exc:  # the server went away mid-request: the loop reports it
            self.screen.line(f"[error] {method} failed: {exc}", "red")
            return None
        return result if isinstance(result, dict) else {}

    async def send(self, text: str) -> None:
        """Send a message (or /execute, /plan); the turn's progress arrives as events."""
        mode_before = self.mode
        result = await self._call("phoenix/sendMessage", text=text)
        if result is None:
            return
        sent = SendMessageResult.model_validate(result)
        if sent.command:
            mode = sent.mode.value if sent.mode else self.mode
            self.mode = mode
            if mode == mode_before:
                self.screen.line(f"[mode] already {mode}.", "cyan")

    async def answer(self, question: Question, text: str) -> None:
        """Answer the open question with the user's line (asks again on anything but a valid answer)."""
        word = text.strip().lower()
        params: dict[str, Any]
        if question.kind == "approval":
            words = {"y": "allow", "yes": "allow", "n": "deny", "no": "deny", "a": "alwaysAllow",
                     "always": "alwaysAllow"}
            if len(question.scopes) > 1:
                words |= {"t": "alwaysAllow", "tool": "alwaysAllow"}
            decision = words.get(word)
            if decision is None:
                self.screen.prompt(question.retry_prompt, "bold+yellow")
                return
            method = "phoenix/respondToApproval"
            params = {"conversationId": question.conversation_id, "toolUseId": question.tool_use_id,
                      "decision": decision}
            if decision == "alwaysAllow" and question.scopes:  # REQ-PERM-020: the scope the user chose
                params["rule"] = question.scopes[-1 if word in ("t", "tool") else 0][0]
        else:
            approve = {"y": True, "yes": True, "n": False, "no": False}.get(word)
            if approve is None:
                self.screen.prompt("Please answer y (approve) or n (deny): ", "bold+yellow")
                return
            method = "phoenix/respondToModeUpgrade"
            params = {"conversationId": question.conversation_id, "approve": approve,
                      "toolUseId": question.tool_use_id}
        if question in self.questions:
            self.questions.remove(question)
        try:
            await self.request(method, params)
        except JsonRpcException as exc:
            self.screen.line(f"[error] {exc.message}", "red")
        except Exception as exc:
            self.screen.line(f"[error] the answer could not be sent ({exc}).", "red")

    # -------------------------------------------------------------------------------- events

    def on_event(self, params: dict[str, Any]) -> None:
        """Show one ``phoenix/event`` and track the conversation's state."""
        try:
            event = ev.parse_event(params)
        except ValidationError:  # a kind this client does not know (a newer server): nothing to show
            return
        cid = event.conversation_id
        if cid != self.conversation_id:
            self._agent_event(event)
            return
        missed = self.seq.arrive(event.seq)
        if missed is not None:
            self._spawn(self.catch_up(missed))  # a gap: restore the view (REQ-PROTO-007)
        screen = self.screen
        match event:
            case ev.TextDelta():
                screen.text(event.text)
            case ev.Status():
                self._set_status(event.status)
            case ev.ToolStart():
                self.tool_names[event.tool_use_id] = event.tool_name
                screen.line(f"[tool] {event.tool_name} {tool_summary(event.tool_name, event.arguments)}", "cyan")
            case ev.ToolEnd():
                name = self.tool_names.pop(event.tool_use_id, "tool")
                summary = first_line(event.summary)
                if event.is_error:
                    screen.line(f"[tool] {name} failed: {summary}", "red")
                else:
                    screen.line(f"[tool] {name} done{': ' + summary if summary else ''}", "dim")
            case ev.ToolRefused():
                screen.line(f"[tool] {event.tool_name} refused: not allowed in {self.mode or 'this'} mode", "yellow")
            case ev.ModeChanged():
                self.mode = event.mode.value
                what = "read-only, sandboxed" if self.mode == "restricted" else "may change files, with your approval"
                screen.line(f"[mode] {self.mode} ({what}); was {event.previous.value}", "cyan")
            case ev.StyleChanged():
                screen.line(f"[style] {event.style.value} (was {event.previous.value})", "cyan")
            case ev.StyleSuggestionEvent():
                text = event.text or f"This style works best in {event.mode.value} mode."
                screen.line(f"[style] {text} Type {event.command} to switch.", "dim")
            case ev.PolicyChanged():
                screen.line(f"[approvals] {event.policy.value} (was {event.previous.value})", "cyan")
            case ev.ModelChanged():
                screen.line(f"[model] {event.model} answers from the next turn (was {event.previous}; "
                            f"context window {event.context_window:,} tokens)", "cyan")
            case ev.ApprovalRequested():
                self._open_approval(cid, event)
            case ev.UpgradeRequested():
                self._open_upgrade(cid, event.tool_use_id, event.reason)
            case ev.ApprovalResolved() | ev.UpgradeResolved():
                self._resolved(cid, event)
            case ev.AlwaysAllowChanged():
                verb = "always allowed" if event.allowed else "asks again"
                what = event.tool_name
                if event.scope == "prefix" and event.rule:
                    what = f"{event.tool_name}: {event.rule}"
                screen.line(f"[approvals] {what} {verb} in this conversation", "dim")
            case ev.Retry():
                asked = "" if event.retry_after_ms is None else f" (the API asked for {event.retry_after_ms} ms)"
                screen.line(
                    f"[retry] attempt {event.attempt}/{event.max_attempts} in {event.delay_ms} ms{asked}: "
                    f"{first_line(event.reason)}",
                    "yellow",
                )
            case ev.ContextWarning():
                screen.line(
                    f"[context] {round(100 * event.fraction)}% of the context window is used; the conversation "
                    "will be summarized and continued when it is full.",
                    "yellow",
                )
            case ev.ContinuationStarted():
                screen.line("[context] the context window is full: summarizing the conversation...", "yellow")
            case ev.Continuation():
                screen.line("[context] the conversation was summarized; its context is exhausted. Start a new "
                            "chat to continue from the summary.", "yellow")
            case ev.SubAgentsSpawned():
                screen.line(f"[agents] {len(event.agents)} sub-agent(s) started", "cyan")
                for agent in event.agents:
                    screen.line(f"  [{agent.conversation_id[:8]}] {first_line(agent.task)}", "dim")
            case ev.SubAgentFinished():
                reason = f": {first_line(event.reason)}" if event.reason else ""
                screen.line(f"[agents] {event.agent_id[:8]} {event.outcome}{reason}",
                            "dim" if event.outcome == "submitted" else "yellow")
            case ev.Error():
                screen.line(f"[error] {event.message}", "red")
                self._error_shown()
            case _:
                pass  # message, usage, diff: the deltas, the diff shown at applyEdit and the status cover them

    def _set_status(self, status: StatusKind) -> None:
        previous, self.status = self.status, status
        if status in RESTING and previous not in RESTING:
            self.screen.close_prompt()  # an open question's prompt: the turn ended without the answer
            self.screen.end_line()
            self.questions = [q for q in self.questions if q.conversation_id != self.conversation_id]
            if status == "error":
                # The server sends the `error` event right after this status; show it before the prompt
                # (and give up waiting for it after a moment).
                self.error_pending = True
                asyncio.get_running_loop().call_later(0.5, self._error_shown)
            if status == "exhausted":
                self.screen.line("[context] this conversation is full. Run phoenix-lsp chat again for a new one.",
                                 "yellow")
        elif status == "summarizing" and previous != status:
            self.screen.line("[context] summarizing the conversation...", "dim")
        self.ui.put_nowait(CHANGED)

    def _error_shown(self) -> None:
        if self.error_pending:
            self.error_pending = False
            self.ui.put_nowait(CHANGED)

    def _open_approval(self, cid: str, event: ev.ApprovalRequested | PendingApproval) -> None:
        description = first_line(event.description, 140)
        name = event.tool_name
        # All of the arguments and all of the diff: the user approves only what they saw (REQ-PERM-023); a long
        # call scrolls the terminal, it is never cut.
        lines = [f"[approval] {name}: {description}" if description else f"[approval] {name}",
                 f"  arguments: {whole(event.arguments)}"]
        if event.diff:
            lines += ["  " + d for d in event.diff.splitlines()]
        scopes = [(s.rule, s.label) for s in event.scopes]
        if len(scopes) > 1:
            lines.append(f"  always allow: [a] {scopes[0][1]}   [t] {scopes[-1][1]} (every call of the tool)")
        if cid != self.conversation_id:
            lines[0] = f"[agent {cid[:8]}] " + lines[0]
        self._add_question(Question("approval", cid, event.tool_use_id, lines, scopes=scopes))

    def _open_upgrade(self, cid: str, tool_use_id: str, reason: str) -> None:
        lines = [f"[upgrade] the agent asks for Unrestricted mode (it may change files): {reason.strip()}"]
        self._add_question(Question("upgrade", cid, tool_use_id, lines))

    def _add_question(self, question: Question) -> None:
        if any(q.tool_use_id == question.tool_use_id and q.kind == question.kind for q in self.questions):
            return
        self.questions.append(question)
        self.ui.put_nowait(CHANGED)

    def _resolved(self, cid: str, event: ev.ApprovalResolved | ev.UpgradeResolved) -> None:
        upgrade = isinstance(event, ev.UpgradeResolved)
        tool_use_id = event.tool_use_id
        if isinstance(event, ev.UpgradeResolved):
            verdict = "approved" if event.approved else ("cancelled" if event.cancelled else "denied")
        else:
            verdict = event.decision
        for question in list(self.questions):
            if question.tool_use_id == tool_use_id and question.conversation_id == cid:
                self.questions.remove(question)
                if question.shown:
                    self.screen.close_prompt()
                    self.screen.line(f"[{question.kind}] closed by the server ({verdict})", "dim")
        if upgrade:
            self.screen.line(f"[upgrade] {verdict}", "cyan")
        else:
            label = {"allow": "allowed", "deny": "denied", "alwaysAllow": "always allowed"}.get(verdict)
            self.screen.line(f"[approval] {label or verdict}", "cyan" if label else "dim")
        self.ui.put_nowait(CHANGED)

    def _agent_event(self, event: ev.EventKinds) -> None:
        """Events of a sub-agent (tagged with its parent): shown briefly and nested."""
        cid = event.conversation_id
        tag = f"  [agent {cid[:8]}]"
        match event:
            case ev.ToolStart():
                self.tool_names[event.tool_use_id] = event.tool_name
                self.screen.line(f"{tag} {event.tool_name} {tool_summary(event.tool_name, event.arguments)}", "dim")
            case ev.ToolEnd() if event.is_error:
                name = self.tool_names.pop(event.tool_use_id, "tool")
                self.screen.line(f"{tag} {name} failed: {first_line(event.summary)}", "dim")
            case ev.ApprovalRequested():
                self._open_approval(cid, event)
            case ev.UpgradeRequested():
                self._open_upgrade(cid, event.tool_use_id, event.reason)
            case ev.ApprovalResolved() | ev.UpgradeResolved():
                self._resolved(cid, event)
            case ev.Error():
                self.screen.line(f"{tag} error: {event.message}", "yellow")
            case _:
                pass

    async def catch_up(self, after_seq: int) -> None:
        """After a gap in ``seq``: restore status and open questions from ``phoenix/getConversation``."""
        try:
            result = await self.request(
                "phoenix/getConversation", {"conversationId": self.conversation_id, "afterSeq": after_seq}
            )
        except Exception:
            return
        conversation = GetConversationResult.model_validate(result)
        self.mode = conversation.mode.value
        if conversation.pending_approval is not None:
            self._open_approval(self.conversation_id, conversation.pending_approval)
        if conversation.pending_upgrade is not None:
            upgrade = conversation.pending_upgrade
            self._open_upgrade(self.conversation_id, upgrade.tool_use_id, upgrade.reason)
        self._set_status(conversation.status)

    # -------------------------------------------------------------------------------- the editor role

    def apply_edit(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        """``workspace/applyEdit``: show the change, write it, and say whether it was applied."""
        label = params.label or "workspace edit"
        try:
            plan = plan_workspace_edit(params.edit, root=self.cwd)
            diff = plan.diff(self.cwd)
            self.screen.line(f"[edit] {label}", "cyan")
            for line in diff.splitlines()[:200]:
                style = None
                if line.startswith("+") and not line.startswith("+++"):
                    style = "green"
                elif line.startswith("-") and not line.startswith("---"):
                    style = "red"
                self.screen.line(f"  {line}", style)
            if diff.count("\n") > 200:
                self.screen.line(f"  ... {diff.count(chr(10)) - 200} more diff lines", "dim")
            write_plan(plan)
        except EditError as exc:
            self.screen.line(f"[edit] not applied: {exc}", "red")
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason=str(exc))
        except OSError as exc:
            reason = f"writing the file failed ({exc.strerror or exc})"
            self.screen.line(f"[edit] not applied: {reason}", "red")
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason=reason)
        return types.ApplyWorkspaceEditResult(applied=True)


# ------------------------------------------------------------------------------------------------ entry


def main(cwd: str, data_dir: str | None) -> int:
    """``phoenix-lsp chat``: returns the process exit code (2 = cannot start: no API key or no folder)."""
    model = os.environ.get("PHOENIX_MODEL", "").strip()
    on_anthropic = "/" not in model or model.startswith("anthropic/")  # another provider needs no Anthropic key
    if on_anthropic and not os.environ.get("ANTHROPIC_API_KEY", "").strip():
        print(NO_API_KEY, file=sys.stderr)
        return 2
    directory = Path(cwd).expanduser()
    if not directory.is_dir():
        print(
            f"phoenix-lsp chat: --cwd {cwd!r} is not an existing directory. Give the folder the agent should "
            "work in.",
            file=sys.stderr,
        )
        return 2
    # pygls logs protocol trouble at WARNING; only real errors should reach the terminal.
    logging.getLogger("pygls").setLevel(logging.ERROR)
    screen = Screen(sys.stdout, echo_input=not _isatty(sys.stdin))
    chat = Chat(directory.resolve(), data_dir, screen)
    try:
        return asyncio.run(chat.run())
    except KeyboardInterrupt:  # Ctrl-C before the handler was installed (during start-up)
        return 130
