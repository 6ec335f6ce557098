"""A real LSP client (pytest-lsp) driving the real server as a subprocess, with the fake Anthropic server.

``Session`` collects every ``phoenix/event``, answers ``workspace/applyEdit`` and
``window/showMessageRequest`` with scriptable handlers, and offers ``request`` / ``wait_event``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage, default_converter
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from tests.fake_anthropic import FakeAnthropic

EDITORS = ["visual_studio_code", "neovim"]
API_KEY = "sk-ant-e2e-secret-key-0123456789"


def _plain_converter() -> Any:
    converter = default_converter()

    def keep(obj: dict[str, Any], cls: type) -> Any:
        return cls(**obj)

    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        converter.register_structure_hook(cls, keep)
    return converter


@dataclass
class Session:
    client: LanguageClient
    fake: FakeAnthropic
    data_dir: Path
    workdir: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    edits: list[types.ApplyWorkspaceEditParams] = field(default_factory=list)
    shown: list[types.ShowMessageRequestParams] = field(default_factory=list)
    on_apply_edit: Callable[[types.ApplyWorkspaceEditParams], types.ApplyWorkspaceEditResult] | None = None
    on_show: Callable[[types.ShowMessageRequestParams], str | None] | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return await self.client.protocol.send_request_async(method, params or {})

    async def new(self, **params: Any) -> str:
        params.setdefault("workingDirectory", str(self.workdir))
        result = await self.request("phoenix/newConversation", params)
        return str(result["conversationId"])

    def of(self, kind: str, conversation_id: str | None = None) -> list[dict[str, Any]]:
        return [
            e for e in self.events if e["kind"] == kind and (conversation_id is None or e["conversationId"] == conversation_id)
        ]

    async def wait_event(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10.0) -> dict[str, Any]:
        """The first event (already received or arriving) that satisfies ``predicate``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        seen = 0
        while True:
            for event in self.events[seen:]:
                if predicate(event):
                    return event
            seen = len(self.events)
            remaining = deadline - loop.time()
            if remaining <= 0:
                kinds = [(e["kind"], e.get("status")) for e in self.events[-15:]]
                raise TimeoutError(f"no matching phoenix/event within {timeout}s; last events: {kinds}")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def wait_status(self, conversation_id: str, status: str, timeout: float = 10.0) -> dict[str, Any]:
        return await self.wait_event(
            lambda e: e["kind"] == "status" and e["conversationId"] == conversation_id and e["status"] == status,
            timeout,
        )


@contextlib.asynccontextmanager
async def session(
    fake: FakeAnthropic,
    tmp_path: Path,
    editor: str = "visual_studio_code",
    *,
    rich: bool = True,
    init_options: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    data_dir: Path | None = None,
    apply_edit: bool = True,
) -> AsyncIterator[Session]:
    client = LanguageClient(converter_factory=_plain_converter)
    register_lsp_features(client)
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    data = data_dir or tmp_path / "data"
    s = Session(client, fake, data, workdir)

    @client.feature("phoenix/event")
    def on_event(params: dict[str, Any]) -> None:
        s.events.append(params)
        s._changed.set()

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def on_apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        s.edits.append(params)
        s._changed.set()
        if s.on_apply_edit is not None:
            return s.on_apply_edit(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    async def on_show(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        s.shown.append(params)
        s._changed.set()
        choice = s.on_show(params) if s.on_show else None
        return types.MessageActionItem(title=choice) if choice else None

    server_env = {**os.environ, **fake.env(API_KEY), "PHOENIX_RETRY_BASE_MS": "20", **(env or {})}
    await client.start_io(sys.executable, "-m", "phoenix_lsp", "serve", "--data-dir", str(data), env=server_env)
    caps = client_capabilities(editor)
    if rich:
        caps.experimental = {"phoenix": {"version": 1}}
    if not apply_edit and caps.workspace is not None:
        caps.workspace.apply_edit = False
    await client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            root_uri=workdir.as_uri(),
            initialization_options=init_options,
        )
    )
    try:
        yield s
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_session(), 10)
        with contextlib.suppress(Exception):
            await client.stop()
