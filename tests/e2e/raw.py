"""A raw LSP client: bytes in, messages out, for what pytest-lsp cannot send (broken framing, bad JSON,
requests without ``params``, hostile ids) and for counting what the server sends back (answers, popups).

It drives the real server as a subprocess (``python -m phoenix_lsp serve``), answers the server's own
requests (progress, dialogs) with ``null``, and records every answer by id and every notification. Waits are
on what arrives (an ``asyncio.Event`` per id, the process's exit), never on a clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WAIT_S = 30.0


def frame(body: bytes) -> bytes:
    """``body`` with the LSP header."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def encode(message: dict[str, Any]) -> bytes:
    """A message as a framed LSP message (lone surrogates are kept as JSON escapes)."""
    return frame(json.dumps(message).encode())


@dataclass
class RawServer:
    """One server process, spoken to in raw bytes."""

    proc: asyncio.subprocess.Process
    answers: dict[Any, dict[str, Any]] = field(default_factory=dict)  # the last answer to each id
    received: list[dict[str, Any]] = field(default_factory=list)  # every answer, in order (id null ones too)
    notifications: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)  # the server's own requests
    unparsable: int = 0  # frames whose body was not JSON
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _reader: asyncio.Task[None] | None = None
    stderr: bytes = b""

    @property
    def popups(self) -> list[dict[str, Any]]:
        """``window/showMessage`` notifications and ``window/showMessageRequest`` requests received."""
        shown = [n for n in self.notifications if n.get("method") == "window/showMessage"]
        return shown + [r for r in self.requests if r.get("method") == "window/showMessageRequest"]

    @property
    def logs(self) -> list[str]:
        return [str(n["params"]["message"]) for n in self.notifications if n.get("method") == "window/logMessage"]

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    async def drain(self) -> None:
        assert self.proc.stdin is not None
        await self.proc.stdin.drain()

    def next_id(self) -> int:
        return next(self._ids)

    def send(self, method: str, params: Any = None, *, msg_id: Any = None, omit_params: bool = False) -> Any:
        """Send a request (``msg_id`` given or the next number) and return its id; see :meth:`answer`."""
        msg_id = self.next_id() if msg_id is None else msg_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if not omit_params:
            message["params"] = params
        self.write(encode(message))
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        self.write(encode({"jsonrpc": "2.0", "method": method, "params": params}))

    async def answer(self, msg_id: Any, timeout: float = WAIT_S) -> dict[str, Any]:
        """The server's answer to request ``msg_id`` (result or error), once it arrives."""
        key = _key(msg_id)
        await self.wait_until(lambda: key in self.answers, timeout, f"an answer to request {msg_id!r}")
        return self.answers[key]

    async def request(self, method: str, params: Any = None, **kwargs: Any) -> dict[str, Any]:
        msg_id = self.send(method, params, **kwargs)
        await self.drain()
        return await self.answer(msg_id)

    async def wait_until(self, predicate: Any, timeout: float = WAIT_S, what: str = "") -> None:
        """Until ``predicate()`` holds, re-checked whenever a message arrives or the process ends."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            if self.proc.returncode is not None or (self._reader is not None and self._reader.done()):
                raise AssertionError(f"the server exited ({self.proc.returncode}) before {what}: "
                                     f"{self.stderr.decode(errors='replace')[-3000:]}")
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"not within {timeout}s: {what}")
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), remaining)

    async def initialize(self, workdir: Path, *, rich: bool = True) -> dict[str, Any]:
        capabilities: dict[str, Any] = {"experimental": {"phoenix": {"version": 1}}} if rich else {}
        answer = await self.request(
            "initialize", {"processId": None, "rootUri": workdir.as_uri(), "capabilities": capabilities}
        )
        self.notify("initialized", {})
        return answer

    async def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while True:
                length = None
                while True:
                    line = await stdout.readline()
                    if not line:
                        return
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                    elif line == b"\r\n" and length is not None:
                        break
                body = await stdout.readexactly(length)
                try:
                    message = json.loads(body)
                except ValueError:
                    self.unparsable += 1
                    continue
                self._receive(message)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            self._arrived.set()

    def _receive(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:  # the server asks: answer null (no dialog choice)
            self.requests.append(message)
            self.write(encode({"jsonrpc": "2.0", "id": message["id"], "result": None}))
        elif "method" in message:
            self.notifications.append(message)
        else:
            self.answers[_key(message.get("id"))] = message
            self.received.append(message)
        self._arrived.set()


def route_of(data_dir: Path, workdir: Path) -> str:
    """The route a NEW server process on ``data_dir`` reports (phoenix/getRoute), beside any server running on it:
    what every other client of the machine would be told."""

    async def ask() -> str:
        async with raw_server(data_dir) as server:
            await server.initialize(workdir)
            answer = await server.request("phoenix/getRoute", {})
            assert "result" in answer, answer
            return str(answer["result"]["route"])

    return asyncio.run(ask())


def _key(msg_id: Any) -> Any:
    """Answers are kept by (type, id): the request ``1`` and the request ``"1"`` are different requests."""
    return (type(msg_id).__name__, msg_id)


@contextlib.asynccontextmanager
async def raw_server(data_dir: Path, env: dict[str, str] | None = None) -> AsyncIterator[RawServer]:
    """A server process on stdio; shut down (or killed) on the way out. ``stderr`` keeps what it printed."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "phoenix_lsp", "serve", "--data-dir", str(data_dir),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})}, limit=2**26,
    )
    server = RawServer(proc)
    server._reader = asyncio.create_task(server._read())

    async def pump_stderr() -> None:
        assert proc.stderr is not None
        while chunk := await proc.stderr.read(65536):
            server.stderr = (server.stderr + chunk)[-200_000:]

    stderr_task = asyncio.create_task(pump_stderr())
    try:
        yield server
    finally:
        if proc.returncode is None:
            with contextlib.suppress(Exception):
                msg_id = server.send("shutdown", None)
                await server.drain()
                await server.answer(msg_id, timeout=10)
                server.notify("exit")
                await server.drain()
                await asyncio.wait_for(proc.wait(), 10)
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
        for task in (server._reader, stderr_task):
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, 5)
