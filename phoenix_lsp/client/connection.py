"""The terminal client's server: the subprocess (``python -m phoenix_lsp serve``) and the LSP connection to it
as a *rich* client (``capabilities.experimental.phoenix``): starting it and opening the conversation, the
requests the server sends the client, and shutting it down politely, or firmly when it does not go."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient

from ..protocol.converter import plain_converter
from ..protocol.results import NewConversationResult
from ..store import default_data_dir
from .approval import ApprovedDiffs
from .editor import apply_edit
from .screen import Screen

#: How long to wait for the server to start, answer a request or shut down before giving up on it.
START_TIMEOUT_S = 30.0
SHUTDOWN_TIMEOUT_S = 5.0


class Connection:
    """The server subprocess of one terminal session and the LSP client talking to it."""

    def __init__(
        self,
        cwd: Path,
        data_dir: str | None,
        screen: Screen,
        server_command: list[str] | None,
        on_event: Callable[[dict[str, Any]], None],
        on_gone: Callable[[], None],
        on_choice: Callable[[str, list[str]], Awaitable[str | None]] | None = None,
    ) -> None:
        self.cwd = cwd
        self.data_dir = data_dir
        self.screen = screen
        self.server_command = server_command or [
            sys.executable, "-m", "phoenix_lsp", "serve", *(["--data-dir", data_dir] if data_dir else []),
        ]
        self.client = LanguageClient("phoenix-lsp chat", "1", converter_factory=plain_converter)
        self.gone = False
        self.stopping = False
        #: the diffs the user approved (the chat's): their edits are written without drawing them again
        self.approved: ApprovedDiffs | None = None
        self.stderr_tail: deque[str] = deque(maxlen=20)
        self._tasks: set[asyncio.Task[Any]] = set()
        self.on_choice = on_choice  # the server's window/showMessageRequest, asked at the chat's prompt
        self._register(on_event, on_gone)

    def _register(self, on_event: Callable[[dict[str, Any]], None], on_gone: Callable[[], None]) -> None:
        client = self.client
        # pygls' decorator is unannotated; a typed alias keeps the handlers checked
        feature = cast(Callable[[str], Callable[[Callable[..., Any]], Any]], client.feature)

        @feature("phoenix/event")
        def on_phoenix_event(params: Any) -> None:
            try:
                on_event(params if isinstance(params, dict) else dict(params))
            except Exception as exc:  # a malformed event must not end the session
                self.screen.line(f"[client] could not show an event: {exc}", "red")

        @feature(types.WORKSPACE_APPLY_EDIT)
        def on_apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            return apply_edit(params, self.cwd, self.screen, self.approved)

        @feature(types.WINDOW_SHOW_MESSAGE)
        def on_show_message(params: types.ShowMessageParams) -> None:
            style = "yellow" if params.type in (types.MessageType.Warning, types.MessageType.Error) else "dim"
            self.screen.line(f"[server] {params.message}", style)

        @feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        async def on_show_message_request(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
            # approvals reach a rich client as phoenix/* events; what the server asks every client this way (a
            # project's MCP server asking for consent, REQ-MCP-009) is asked at the prompt
            titles = [action.title for action in params.actions or []]
            if self.on_choice is None or not titles:
                self.screen.line(f"[server] {params.message}", "yellow")
                return None
            title = await self.on_choice(params.message, titles)
            return types.MessageActionItem(title=title) if title in titles else None

        @feature(types.WINDOW_LOG_MESSAGE)
        def on_log_message(params: types.LogMessageParams) -> None:
            return None  # the server's log is in its data directory; the chat stays readable

        original_exit = client.server_exit

        async def server_exit(server: asyncio.subprocess.Process) -> None:
            await original_exit(server)
            if not self.stopping:
                self.gone = True
                on_gone()

        client.server_exit = server_exit  # type: ignore[method-assign]

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send one request and wait for its result (JSON-RPC errors raise ``JsonRpcException``)."""
        return await self.client.protocol.send_request_async(method, params)

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` in the background until it ends or the session stops."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        return getattr(self.client, "_server", None)  # pygls keeps the process private

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        """Keep the server's last stderr lines (for a crash report) and keep its pipe from filling up."""
        while True:
            raw = await stream.readline()
            if not raw:
                return
            self.stderr_tail.append(raw.decode("utf-8", "replace").rstrip())

    def log_hint(self) -> str:
        """Where the server's log is."""
        if self.data_dir:
            return str(Path(self.data_dir) / "phoenix-lsp.log")

        return str(default_data_dir() / "phoenix-lsp.log")

    async def start(self) -> bool:
        """Start the server subprocess; False (and a line saying why) when it cannot be started."""
        try:
            # A session of its own: a Ctrl-C in the terminal goes to this client only, which turns it into
            # phoenix/cancel; the server must not be killed by it.
            await self.client.start_io(*self.server_command, start_new_session=True, cwd=str(self.cwd))
        except OSError as exc:
            self.screen.line(f"phoenix-lsp chat: could not start the server ({exc}).", "red")
            return False
        process = self.process
        if process is not None and process.stderr is not None:
            self.spawn(self._drain_stderr(process.stderr))
        return True

    async def initialize(self) -> bool:
        """Initialize the server as a rich client of the working directory; False (and a line saying why, with
        the server's last words and where its log is) when that fails."""
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
        except (Exception, asyncio.CancelledError) as exc:
            self._failed("did not start", exc)
            return False
        return True

    async def new_conversation(self) -> NewConversationResult | None:
        """Start a conversation in the working directory; None (and a line saying why) when that fails."""
        try:
            result = await asyncio.wait_for(
                self.request("phoenix/newConversation", {"workingDirectory": str(self.cwd)}), START_TIMEOUT_S
            )
        except (Exception, asyncio.CancelledError) as exc:
            self._failed("did not start a conversation", exc)
            return None
        return NewConversationResult.model_validate(result)

    async def open_conversation(self) -> NewConversationResult | None:
        """Initialize the server and start a conversation in the working directory (None when either fails)."""
        if not await self.initialize():
            return None
        return await self.new_conversation()

    def _failed(self, what: str, exc: BaseException) -> None:
        detail = exc.message if isinstance(exc, JsonRpcException) else (str(exc) or type(exc).__name__)
        tail = "; ".join(list(self.stderr_tail)[-3:])
        self.screen.line(
            f"phoenix-lsp chat: the server {what} ({detail}). "
            f"{'Server said: ' + tail + '. ' if tail else ''}See its log in {self.log_hint()}.",
            "red",
        )

    def report_gone(self) -> None:
        """Say that the server stopped unexpectedly: its exit code, its last words, where its log is."""
        process = self.process
        code = process.returncode if process is not None else None
        tail = "; ".join(list(self.stderr_tail)[-3:])
        self.screen.line(
            f"phoenix-lsp chat: the server stopped unexpectedly (exit code {code}). "
            f"{'It said: ' + tail + '. ' if tail else ''}Its log is in {self.log_hint()}; "
            "your conversation is saved there too.",
            "red",
        )

    async def stop(self) -> None:
        """Shut the server down politely (shutdown + exit), and firmly if it does not go."""
        self.stopping = True
        process = self.process
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
