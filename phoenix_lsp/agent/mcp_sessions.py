"""The MCP client's sessions (REQ-AGENT-016/017): each server of the registry connected on first need with the
official SDK (stdio or streamable HTTP, its ``secretsRef`` resolved into its environment or headers) within a
bounded time, kept while it lives, and ended. A server that cannot be reached is ``TOOL``/``UNAVAILABLE`` with
the end of its stderr. See ``mcp_hub.py``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from dataclasses import dataclass, field
from typing import IO, Any, TextIO, cast

import httpx2
from mcp.client._probe import negotiate_auto
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import SecretStr

from .. import bounded_http, limits
from . import mcp_relay
from .agent_config import SECRET_REF, HttpServer, McpRegistry, StdioServer
from .contracts import AgentError, ErrorCode, ErrorKind, ToolFailure
from .mcp_secrets import McpSecrets
from .server_secrets import server_secrets

log = logging.getLogger(__name__)

DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_MAX_RESULT_BYTES = 1 << 20
#: of a server's stderr, what is kept to explain why it did not start
MAX_SERVER_STDERR = 2048


def fail(code: str, message: str) -> ToolFailure:
    return ToolFailure(AgentError(kind=ErrorKind.TOOL, code=code, message=message))


def describe(exc: BaseException) -> str:
    """An exception in one line: its type and message, cut."""
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return describe(exc.exceptions[0])
    text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass
class Server:
    """One server's state; touched only on the hub's loop."""

    name: str
    config: StdioServer | HttpServer
    session: Any = None  # ClientSession while connected
    task: asyncio.Task[None] | None = None
    stop: asyncio.Event | None = None
    version: str | None = None
    tools: dict[str, Any] | None = None  # name -> mcp_types.Tool of the current listing
    listed_at: float = 0.0
    ttl_s: float | None = None
    error: str | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    connects: int = 0
    stderr: IO[str] | None = None  # a stdio server's stderr, kept while it runs
    http_status: int | None = None  # the last HTTP error status an HTTP server answered


class _Session(ClientSession):
    """The SDK's session without its own check of a result against the tool's output schema: the hub makes
    that check itself, once, after the result's depth is bounded (``mcp_output.py``, ``mcp_calls.py``)."""

    async def validate_tool_result(self, name: str, result: Any) -> None:
        return None


class McpSessions(McpSecrets):
    """The sessions of one MCP client, on its event loop (see ``McpHub``)."""

    #: the SDK's session, less its output-schema check (``bench/mcp_tools.py`` measures the SDK's own beside it)
    session_class: type[ClientSession] = _Session

    def __init__(self, registry: McpRegistry, *, environ: Any, redact: Any, connect_timeout_s: float,
                 max_result_bytes: int) -> None:
        super().__init__(environ=environ, redact=redact)
        self._registry = registry
        self._connect_timeout_s = connect_timeout_s
        self._max_result_bytes = max_result_bytes
        self._servers: dict[str, Server] = {}  # made on the client's loop (asyncio.Lock binds to it)

    def _forget_version(self, key: str) -> None:
        """A server's version ``key`` (``name@version``) was replaced: what the layers above keep of it goes
        (the listings' cached tool schemas)."""

    def _connect_s(self, config: StdioServer | HttpServer) -> float:
        """How long one server may take to connect (and to list its tools): its registry entry's
        ``connectTimeoutS``, else the hub's."""
        return config.connect_timeout_s or self._connect_timeout_s

    def _longest_connect_s(self) -> float:
        """The bound a blocking call waits for a connection: the longest any server may take, so that a
        server's own ``connectTimeoutS`` is never cut short by the hub's default."""
        return max([self._connect_timeout_s, *(self._connect_s(c) for c in self._registry.servers.values())])

    async def _make_states(self) -> dict[str, Server]:  # asyncio.Lock binds to the running loop
        return {name: Server(name, config) for name, config in self._registry.servers.items()}

    async def _add(self, name: str, config: StdioServer | HttpServer) -> None:
        self._servers.setdefault(name, Server(name, config))

    async def _remove(self, name: str) -> None:
        """The server left the registry (its definition changed, or its consent was withdrawn): its session
        ends and what was cached of its tools goes."""
        server = self._servers.pop(name, None)
        for key in [k for k in getattr(self, "_schemas", {}) if k.startswith(f"{name}@")]:
            self._forget_version(key)
        if server is not None:
            await self._disconnect(server)

    def _resolve(self, server: Server) -> dict[str, SecretStr]:
        """The server's ``secretsRef``, resolved from the environment; names what is missing, never a value."""
        resolved: dict[str, SecretStr] = dict(server.config.inline_secrets)  # given inline by their source
        for key, reference in server.config.secrets_ref.items():
            match = SECRET_REF.match(reference)
            assert match is not None  # validated with the registry
            value = self._environ.get(match["name"])
            if not value:
                server.error = (  # health() and the catalogue say it: not "no tool is available"
                    f"MCP server {server.name!r} was not started: its secretsRef {key!r} refers to the environment "
                    f"variable {match['name']}, which is not set; set it in the environment of phoenix-lsp (and "
                    "restart it)")
                log.warning("%s", server.error)
                raise fail(ErrorCode.UNAVAILABLE, server.error)
            resolved[key] = SecretStr(value)
        found = [SecretStr(value) for value, _ in server_secrets(server.name, server.config, self._environ)]
        with self._secrets_lock:  # scrubbed from every result and message: all of them, by the one function
            known = {s.get_secret_value() for s in self._secrets}
            self._secrets.extend(s for s in found if s.get_secret_value() not in known)
        return resolved

    def _get(self, name: str) -> Server:
        server = self._servers.get(name)
        if server is None:
            known = ", ".join(sorted(self._servers)) or "none"
            raise fail(ErrorCode.NOT_FOUND, f"there is no MCP server named {name!r} in the registry (servers: "
                        f"{known}); use a tool of the catalogue")
        return server

    # ------------------------------------------------------------------------------------------ sessions

    async def _session(self, server: Server) -> Any:
        """The server's live session, connecting if there is none."""
        async with server.lock:
            if server.session is not None and server.task is not None and not server.task.done():
                return server.session
            await self._disconnect(server)
            secrets = self._resolve(server)
            ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            server.http_status = None
            server.stop = asyncio.Event()
            stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed by the session
            server.task = asyncio.create_task(self._run_session(server, secrets, ready, server.stop, stderr))
            timeout = self._connect_s(server.config)
            try:
                session, version = await asyncio.wait_for(asyncio.shield(ready), timeout)
            except TimeoutError:
                # It never answered, so there is no session to end gracefully: stopped at once. Waiting for it
                # (the grace of a live session) would outlast the catalogue's bound when the bound is short.
                await self._disconnect(server, grace_s=0.0)
                why = f"did not connect and initialize within {timeout:g} s"
                raise self._unavailable(server, why, stderr) from None
            except Exception as exc:  # whatever the transport raised, the server is unusable
                await self._disconnect(server)  # first: the server's stderr is then complete
                why = f"could not be started or reached ({describe(exc)})"
                if server.http_status is not None:
                    why = f"answered HTTP {server.http_status} ({describe(exc)})"
                    if server.http_status in (401, 403):
                        why += "; check the credentials its secretsRef refers to"
                raise self._unavailable(server, why, stderr) from None
            server.stderr = stderr
            server.connects += 1
            if server.version != version:
                if server.version is not None:
                    self._forget_version(f"{server.name}@{server.version}")
                    log.info("MCP server %s: version %s replaces %s; its cached tools are dropped",
                             server.name, version, server.version)
                server.tools = None
            server.version = version
            server.session = session
            server.error = None
            log.info("MCP server %s connected (%s, version %s)", server.name, server.config.transport, version)
            return session

    def _unavailable(self, server: Server, why: str, stderr: IO[str] | None = None) -> ToolFailure:
        detail = ""
        if stderr is not None:
            with contextlib.suppress(OSError, ValueError):
                stderr.seek(0, os.SEEK_END)
                stderr.seek(max(0, stderr.tell() - MAX_SERVER_STDERR))
                tail = stderr.read().strip()
                if tail:
                    detail = f"; its stderr ends with: {tail[-500:]!r}"
            stderr.close()
        message = self._scrub(f"MCP server {server.name!r} {why}{detail}. Check its entry in the MCP registry "
                              "and that it runs; the next call tries again")
        server.error = message
        log.warning("%s", message)
        return fail(ErrorCode.UNAVAILABLE, message)

    async def _run_session(self, server: Server, secrets: dict[str, SecretStr], ready: asyncio.Future[Any],
                           stop: asyncio.Event, stderr: IO[str]) -> None:
        """One connection, from start to end, in one task (the SDK's contexts are entered and left here)."""
        try:
            async with contextlib.AsyncExitStack() as stack:
                config = server.config
                if isinstance(config, StdioServer):
                    env = {**config.env, **{k: v.get_secret_value() for k, v in secrets.items()}}
                    # its stdout reaches the SDK through the relay, a line at a time within a message's bounds
                    bounds = limits.mcp_message(self._max_result_bytes)
                    argv = mcp_relay.command(config.argv(), bounds.max_bytes, bounds.max_tokens, bounds.max_depth)
                    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env,
                                                   cwd=str(config.cwd) if config.cwd else None)
                    read, write = await stack.enter_async_context(stdio_client(params, errlog=cast(TextIO, stderr)))
                else:
                    headers = {**config.headers, **{k: v.get_secret_value() for k, v in secrets.items()}}
                    client = create_mcp_http_client(headers=headers, timeout=httpx2.Timeout(
                        self._connect_timeout_s, read=300.0))
                    async def record(response: Any) -> None:
                        if response.status_code >= 400:
                            server.http_status = response.status_code

                    client.event_hooks["response"].append(record)
                    # each answer (a JSON answer, an SSE event) bounded as it arrives, before the SDK reads it
                    client.event_hooks["response"].append(bounded_http.response_hook(
                        lambda _request: limits.mcp_http(self._max_result_bytes)))
                    await stack.enter_async_context(client)
                    read, write = await stack.enter_async_context(streamable_http_client(
                        config.url, http_client=client,
                        max_sse_event_size=limits.mcp_message(self._max_result_bytes).max_bytes))
                session = await stack.enter_async_context(self.session_class(read, write))
                # the SDK's own connect policy (its Client's mode="auto"): server/discover for servers of the
                # 2026 protocol (whose listings carry ttlMs hints), else the initialize handshake
                await negotiate_auto(session)
                info = session.server_info
                version = (info.version if info is not None else "") or "unversioned"
                if not ready.done():
                    ready.set_result((session, version))
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError("cancelled"))
            if not isinstance(exc, Exception):
                raise
            log.debug("MCP server %s: session ended (%s)", server.name, self._scrub(describe(exc)))
        finally:
            if server.task is asyncio.current_task():
                server.session = None

    async def _disconnect(self, server: Server, grace_s: float = 10.0) -> None:
        """End the server's session: asked to stop, and cancelled when it has not ended within ``grace_s``."""
        task, server.task, server.session = server.task, None, None
        stderr, server.stderr = server.stderr, None
        if server.stop is not None:
            server.stop.set()
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), grace_s)
            except (TimeoutError, Exception):  # ending it is all that matters now
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if stderr is not None:
            stderr.close()

    async def _close_all(self) -> None:
        await asyncio.gather(*(self._disconnect(s) for s in self._servers.values()), return_exceptions=True)

    async def _lost(self, server: Server, why: str) -> ToolFailure:
        await self._disconnect(server)
        return self._unavailable(server, why)
