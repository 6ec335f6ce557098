"""The language server object: what it knows about its client, and the way from conversations to it.

Rich clients (``capabilities.experimental.phoenix``) get ``phoenix/event``; plain clients get the
standard-LSP fallbacks of ``plain.PlainClient``. The server is the runtime's ``Sink``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from ..protocol.converter import plain_converter
from .plain import PlainClient

if TYPE_CHECKING:
    from ..core.values import ToolUse
    from ..protocol.events import EventKinds
    from .runtime import Hub, Runtime

VERSION = "0.1.0"


class PhoenixProtocol(LanguageServerProtocol):
    """Adds ``capabilities.experimental.phoenix`` to the InitializeResult (pygls builds it after our handler)."""

    _server: PhoenixServer

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = self._server.experimental
        return result


class PhoenixServer(LanguageServer):
    """One hub of conversations, and what the server knows about its client."""

    def __init__(self, data_dir: str | None = None) -> None:
        super().__init__("phoenix-lsp", VERSION, protocol_cls=PhoenixProtocol, converter_factory=plain_converter)
        self.experimental: dict[str, Any] = {}
        self.init_options: Any = None
        self.setup_error: str | None = None
        self.sandbox: Any = None
        self.data_dir = data_dir
        self.hub: Hub | None = None
        self.rich = False
        self.plain = PlainClient(self, self.spawn)

    def spawn(self, coro: Any) -> Any:
        assert self.hub is not None
        return self.hub.spawn(coro)

    # --------------------------------------------------------------------------- the runtime's sink

    def event(self, event: EventKinds, params: dict[str, Any]) -> None:
        if self.rich:
            self.protocol.notify("phoenix/event", params)
        else:
            self.plain.event(event, params)

    def event_batch(self, batch: Sequence[tuple[EventKinds, dict[str, Any]]], texts: Sequence[str]) -> None:
        """Events already stored, ``texts`` being each one's params as JSON (REQ-PROTO-049). To a rich client
        on stdio or TCP they go in one write, framed as pygls frames every message, around the JSON already
        made: one write instead of one per event keeps many streams cheap (each write is a system call, and
        blocks while the client reads), and a 20 MB answer is not serialised a second time."""
        protocol = self.protocol
        writer = protocol.writer
        if not self.rich or writer is None or not getattr(protocol, "_include_headers", False):
            for event, params in batch:
                self.event(event, params)
            return
        header = f"Content-Type: {protocol.CONTENT_TYPE}; charset={protocol.CHARSET}\r\n\r\n"
        frames = []
        for text in texts:  # json.dumps escapes everything beyond ASCII: characters are bytes
            body = f'{{"jsonrpc": "2.0", "method": "phoenix/event", "params": {text}}}'
            frames.append(f"Content-Length: {len(body)}\r\n{header}{body}")
        writer.write("".join(frames).encode(protocol.CHARSET))  # stdio and TCP writers write at once

    def ask_approval(self, runtime: Runtime, tool_use_id: str, call: ToolUse) -> None:
        if not self.rich and self.hub is not None:
            from .runtime import describe_tool

            self.plain.ask_approval(runtime, tool_use_id, call, describe_tool(call.name))

    def ask_upgrade(self, runtime: Runtime, tool_use_id: str, reason: str) -> None:
        if not self.rich and self.hub is not None:
            self.plain.ask_upgrade(runtime, tool_use_id, reason)

    def withdraw(self, runtime: Runtime, tool_use_id: str) -> None:
        self.plain.withdraw(tool_use_id)

    def open_documents(self) -> Mapping[Path, str]:
        docs: dict[Path, str] = {}
        for uri, doc in self.workspace.text_documents.items():
            if uri.startswith("file://"):
                docs[Path(doc.path)] = doc.source
        return docs

    async def apply_patch(self, runtime: Runtime, call: ToolUse) -> tuple[str, bool]:
        from .edits import apply_patch

        return await apply_patch(self, runtime, call)
