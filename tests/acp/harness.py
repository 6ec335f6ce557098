"""``phoenix-lsp acp`` as a subprocess, driven by the ACP SDK's own client side (``acp.spawn_agent_process``),
against the fake Anthropic Messages API. The :class:`Editor` records every message the agent sends and answers
its requests as a test scripts them; waits are on what it records, never on time."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
from acp.connection import StreamEvent
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from tests.e2e.zygote import ForkedServer, Zygote, zygote
from tests.fake_anthropic import FakeAnthropic

ROOT = Path(__file__).resolve().parents[2]
API_KEY = "sk-ant-api03-acp-test-key-that-must-never-leak-0123456789"
TIMEOUT = 60.0  # generous: the machine is loaded


@dataclass
class Asked:
    """One session/request_permission the agent sent, answered when the test says."""

    session_id: str
    tool_call: Any
    options: list[Any]
    answer: asyncio.Future[str | None]  # an option id, or None for ``cancelled``


@dataclass
class Editor:
    """The client side: what it announced, what it received, what it answers."""

    read: bool = True
    write: bool = True
    updates: list[Any] = field(default_factory=list)
    asked: list[Asked] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)  # path, content
    reads: list[str] = field(default_factory=list)
    buffers: dict[str, str] = field(default_factory=dict)  # unsaved editor text by absolute path
    wire: list[dict[str, Any]] = field(default_factory=list)  # every message, both ways, in order
    answer: Callable[[Asked], str | None] | None = None  # answers at once when set
    save: bool = False  # fs/write_text_file writes the disk too, as an editor saving the file would
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def _changed(self) -> None:
        self.changed.set()

    async def wait_until(self, predicate: Callable[[], Any], timeout: float = TIMEOUT) -> Any:
        async def wait() -> Any:
            while True:
                self.changed.clear()
                found = predicate()
                if found:
                    return found
                await self.changed.wait()

        return await asyncio.wait_for(wait(), timeout)

    def observe(self, event: StreamEvent) -> None:
        self.wire.append({"direction": event.direction.value, **event.message})
        self._changed()

    # the ACP Client methods
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self._changed()

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> RequestPermissionResponse:
        asked = Asked(session_id, tool_call, options, asyncio.get_running_loop().create_future())
        self.asked.append(asked)
        if self.answer is not None:
            asked.answer.set_result(self.answer(asked))
        self._changed()
        choice = await asked.answer
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=choice))

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.writes.append((path, content))
        if self.save:
            Path(path).write_text(content)
        self._changed()
        return WriteTextFileResponse()

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        self._changed()
        text = self.buffers.get(path)
        if text is None:
            text = Path(path).read_text()
        return ReadTextFileResponse(content=text)

    # what was received
    def kinds(self) -> list[str]:
        return [u.session_update for u in self.updates]

    def text(self) -> str:
        return "".join(u.content.text for u in self.updates if u.session_update == "agent_message_chunk")

    def call_updates(self, call_id: str) -> list[Any]:
        return [u for u in self.updates if getattr(u, "tool_call_id", None) == call_id]

    def statuses(self, call_id: str) -> list[str]:
        return [u.status for u in self.call_updates(call_id) if u.status]

    def call_text(self, call_id: str) -> str:
        texts = []
        for u in self.call_updates(call_id):
            for c in u.content or []:
                if c.type == "content" and c.content.type == "text":
                    texts.append(c.content.text)
        return "\n".join(texts)

    def option_kinds(self, asked: Asked) -> list[str]:
        return [o.kind for o in asked.options]

    def option(self, asked: Asked, kind: str) -> str:
        return next(o.option_id for o in asked.options if o.kind == kind)


def _tool_results(body_messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for m in body_messages if isinstance(m.get("content"), list) for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"]


def tool_result(fake: FakeAnthropic, call_id: str) -> dict[str, Any]:
    """The tool result the model received for a call."""
    for request in fake.requests:
        for block in _tool_results(request.messages):
            if block.get("tool_use_id") == call_id:
                return block
    raise AssertionError(f"the model never received a result for {call_id}")


@dataclass
class Agent:
    conn: Any
    process: Any
    editor: Editor
    workdir: Path
    data_dir: Path

    async def new(self) -> Any:
        return await asyncio.wait_for(self.conn.new_session(cwd=str(self.workdir), mcp_servers=[]), TIMEOUT)

    def prompt(self, session_id: str, text: str) -> asyncio.Task[Any]:
        return asyncio.ensure_future(asyncio.wait_for(
            self.conn.prompt(session_id=session_id, prompt=[acp.text_block(text)]), TIMEOUT))


@contextlib.asynccontextmanager
async def agent(fake: FakeAnthropic, tmp_path: Path, editor: Editor | None = None,
                env: dict[str, str] | None = None, launcher: list[str] | None = None,
                exit_wait: float = 15.0) -> AsyncIterator[Agent]:
    """``phoenix-lsp acp --data-dir`` started (under ``launcher``'s command when given), initialized with the
    editor's fs capabilities. At the end the SDK closes the agent's stdin and waits ``exit_wait`` seconds for it
    to exit before it terminates it: as long as an editor would, since on a loaded machine a clean exit can take
    over the SDK's 2 s, and the SDK then terminates a process that may have just exited (ProcessLookupError: a
    whole-suite flake). A clean exit costs no more than it takes."""
    editor = editor or Editor()
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    data_dir = tmp_path / "data"
    # the editor here answers fs/read_text_file from the test's own process, which on a loaded machine (load 20)
    # can answer later than the server's 5 s default; the server would then read the disk instead and a test of
    # the editor's unsaved text would fail: the wait is the hang guard's. The tests of the wait set their own.
    server_env = {**os.environ, **fake.env(API_KEY), "PYTHONPATH": str(ROOT), "PHOENIX_RETRY_BASE_MS": "20",
                  "PHOENIX_CONFIG_DIR": str(tmp_path / "user-config"), "PHOENIX_ACP_READ_TIMEOUT_S": str(TIMEOUT),
                  **(env or {})}
    args = ["acp", "--data-dir", str(data_dir)]
    forks = zygote() if launcher is None else None
    if forks is None:
        command = [*(launcher or []), sys.executable]
        spawned = acp.spawn_agent_process(editor, command[0], *command[1:], "-m", "phoenix_lsp", *args,
                                          env=server_env, cwd=str(workdir), observers=[editor.observe],
                                          transport_kwargs={"shutdown_timeout": exit_wait})
    else:
        spawned = _forked_agent(editor, forks, args, server_env, workdir, exit_wait)
    async with spawned as (conn, process):
        capabilities = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=editor.read,
                                                                    write_text_file=editor.write))
        editor.initialized = await asyncio.wait_for(  # type: ignore[attr-defined]
            conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities), TIMEOUT)
        yield Agent(conn, process, editor, workdir, data_dir)


@contextlib.asynccontextmanager
async def _forked_agent(editor: Editor, forks: Zygote, args: list[str], env: dict[str, str], workdir: Path,
                        exit_wait: float) -> AsyncIterator[tuple[Any, ForkedServer]]:
    """``acp.spawn_agent_process`` with the agent forked by this worker's zygote (tests/e2e/zygote.py: the
    imports done once per worker, not once a session): the same connection over the same pipes, and the same
    end as the SDK's (stdin closed, ``exit_wait`` seconds for a clean exit, then terminate, then kill)."""
    # the SDK's reader has asyncio's default line limit; the fork's keeps it, so a test sees what it would
    process = await forks.spawn(args, env, cwd=str(workdir), limit=2**16)
    conn = acp.connect_to_agent(editor, process.stdin, process.stdout, observers=[editor.observe])
    try:
        yield conn, process
    finally:
        await conn.close()
        with contextlib.suppress(Exception):
            process.stdin.write_eof()
        with contextlib.suppress(Exception):
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), exit_wait)
        except TimeoutError:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), exit_wait)
            except TimeoutError:
                process.kill()
                await process.wait()


def received(editor: Editor) -> str:
    """Everything the agent sent the client, as JSON."""
    return json.dumps([m for m in editor.wire if m["direction"] == "incoming"])
