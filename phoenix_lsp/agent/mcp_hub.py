"""The MCP client of the agent route (REQ-AGENT-016/017): the servers of the registry, their tools, calls.

``McpHub`` is built on the official MCP SDK (``mcp.client.stdio``, ``mcp.client.streamable_http``,
``ClientSession``). It owns a private asyncio event loop in a daemon thread; its public methods are
blocking and thread-safe, because the engine's host functions are synchronous and run in worker threads.

- Servers are connected lazily (on the first ``catalogue``, ``schema``, ``call`` or ``versions`` that needs
  them) and the sessions persist. A connection that is lost (the server died, the HTTP endpoint went away)
  fails the call in flight with ``TOOL``/``UNAVAILABLE``; the next call connects again.
- Tool listings (``tools/list``, which in MCP carries every tool's input schema) are cached per
  ``server@version`` (``serverInfo.version`` from ``server/discover`` or ``initialize``): a reconnection
  that finds a new version drops the old version's entries. A listing with a ``ttlMs`` cache hint (2026
  protocol) is listed again once it is stale; without one it lasts as long as the version. ``catalogue()``
  gives no schemas; ``schema(uri)`` hands one out on first use (REQ-AGENT-004: the planner loads a schema
  only when a node uses the tool).
- Secrets: a server's ``secretsRef`` (``env:NAME``) is resolved here, from ``environ``, when the hub
  connects: into the stdio server's environment, or into HTTP headers. The values are held as ``SecretStr``
  and scrubbed from every message the hub produces (errors, logs, the catalogue) and from every tool result,
  here where it enters (REQ-AGENT-016): every string of the result value, object keys included, at any
  depth, before the engine, the reducer, the artifact store or the model can see it (a script could
  otherwise reverse or split a credential past any later redaction). ``redact``, when given (the server's
  redactor), is applied to the same strings, so a result cannot carry the server's other secrets either.
- Bounds: a connect timeout (connect + handshake), a per-call timeout, a result size cap
  (``TOOL``/``RESULT_TOO_LARGE``), at most ``MAX_SERVER_STDERR`` bytes of a server's stderr kept to explain a
  failed start. The cap is checked on the decoded result: over HTTP the SDK also bounds each streamed event
  (cap + 64 KiB), but over stdio it reads a message whole before the hub sees it.

Error mapping (all ``ToolFailure(AgentError(kind=TOOL, ...))``): unknown server or tool, or a tool result
that says not found: ``NOT_FOUND``; arguments that do not fit the input schema (checked here with
``jsonschema``, and by the server): ``INVALID_ARGUMENTS``; any other ``isError`` result: ``TOOL_ERROR``;
server down, died, cannot start, or connection lost: ``UNAVAILABLE``; no answer in time: ``TIMEOUT``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Literal, TextIO, TypeVar, cast

from pydantic import SecretStr

from .. import safe_json
from ..protocol.base import Wire
from .agent_config import SECRET_REF, CapabilityManifest, HttpServer, McpRegistry, StdioServer, tool_parts
from .capability_gate import resolve_kind
from .contracts import AgentError, ErrorCode, ErrorKind, ToolFailure

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_MAX_RESULT_BYTES = 1 << 20
#: of a server's stderr, what is kept to explain why it did not start
MAX_SERVER_STDERR = 2048
#: resolved secrets shorter than this are not scrubbed from messages (they would garble every word)
MIN_SECRET_CHARS = 4
#: extra time the blocking wrappers give the event loop beyond a call's own timeouts
_GRACE_S = 5.0
#: JSON-RPC error codes the SDK uses
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001
_INVALID_PARAMS = -32602
_METHOD_NOT_FOUND = -32601
_NOT_FOUND_TEXT = re.compile(r"\b(not found|unknown tool|no such|does not exist)\b", re.IGNORECASE)
_INVALID_TEXT = re.compile(r"\bvalidation error|invalid (argument|param)", re.IGNORECASE)


class ToolInfo(Wire):
    """One tool of the catalogue (no schema: see ``McpHub.schema``)."""

    uri: str
    server: str
    name: str
    description: str = ""
    kind: Literal["read", "write"]
    #: where ``kind`` came from: the capability manifest, the server's ``readOnlyHint``, or the safe default
    kind_source: Literal["manifest", "annotation", "default"]
    #: the server's ``readOnlyHint`` annotation, if it gave one
    read_only_hint: bool | None = None


class McpServerHealth(Wire):
    """What the hub knows of one server, without connecting to it."""

    server: str
    transport: Literal["stdio", "http"]
    connected: bool
    version: str | None = None
    tools: int | None = None
    error: str | None = None


def _fail(code: str, message: str) -> ToolFailure:
    return ToolFailure(AgentError(kind=ErrorKind.TOOL, code=code, message=message))


@dataclass
class _Server:
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


class McpHub:
    """The MCP servers of a registry, behind thread-safe blocking methods (see the module docstring)."""

    def __init__(self, registry: McpRegistry, *, manifest: CapabilityManifest | None = None,
                 environ: Mapping[str, str] | None = None,
                 connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
                 max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
                 clock: Callable[[], float] = time.monotonic,
                 redact: Callable[[str], str] | None = None) -> None:
        """``environ``: where ``secretsRef`` is resolved (default: this process's environment); ``clock``
        (monotonic seconds): what ``ttlMs`` freshness hints are measured on; ``redact``: the server's own
        redactor, applied to every string of a tool result besides the hub's own credentials."""
        self._registry = registry
        self._manifest = manifest or CapabilityManifest()
        self._environ = dict(os.environ if environ is None else environ)
        self._connect_timeout_s = connect_timeout_s
        self._max_result_bytes = max_result_bytes
        self._clock = clock
        self._redact = redact
        self._secrets: list[SecretStr] = []
        self._secrets_lock = threading.Lock()
        self._schemas: dict[str, dict[str, dict[str, Any]]] = {}  # server@version -> tool -> input schema
        self._closed = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="phoenix-mcp-hub", daemon=True)
        self._thread.start()
        self._servers: dict[str, _Server] = self._submit(self._make_states(), 5.0)

    def _connect_s(self, config: StdioServer | HttpServer) -> float:
        """How long one server may take to connect (and to list its tools): its registry entry's
        ``connectTimeoutS``, else the hub's."""
        return config.connect_timeout_s or self._connect_timeout_s

    def _longest_connect_s(self) -> float:
        """The bound a blocking call waits for a connection: the longest any server may take, so that a
        server's own ``connectTimeoutS`` is never cut short by the hub's default."""
        return max([self._connect_timeout_s, *(self._connect_s(c) for c in self._registry.servers.values())])

    async def _make_states(self) -> dict[str, _Server]:  # asyncio.Lock binds to the running loop
        return {name: _Server(name, config) for name, config in self._registry.servers.items()}

    def add_server(self, name: str, config: StdioServer | HttpServer) -> None:
        """A server that joined the registry after the hub started (an ACP session's): connected on first use."""
        self._submit(self._add(name, config), 5.0)

    async def _add(self, name: str, config: StdioServer | HttpServer) -> None:
        self._servers.setdefault(name, _Server(name, config))

    # ------------------------------------------------------------------------------------------ public API

    def catalogue(self) -> list[ToolInfo]:
        """Every tool of every server that can be reached, in registry then listing order. A server that
        cannot be reached is left out (and logged; ``health()`` says why)."""
        # each server in turn: its connection, then its listing
        bound = sum(2 * self._connect_s(config) for config in self._registry.servers.values())
        return self._submit(self._catalogue(), max(bound, self._connect_timeout_s) + _GRACE_S)

    def info(self, uri: str) -> ToolInfo:
        """One tool's catalogue entry (its kind included). Raises ``ToolFailure`` (``NOT_FOUND``,
        ``UNAVAILABLE``)."""
        return self._submit(self._info(uri), self._longest_connect_s() * 2 + _GRACE_S)

    def schema(self, uri: str) -> dict[str, Any]:
        """The input schema (JSON Schema) of a tool, loaded on first use and cached per ``server@version``."""
        return self._submit(self._schema(uri), self._longest_connect_s() * 2 + _GRACE_S)

    def output_schema(self, uri: str) -> dict[str, Any] | None:
        """The schema of what the tool returns to a script, if its server declares one: the declared output
        schema, or the wrapped value's schema when the server wraps its value (``unwrapped_schema``)."""
        return self._submit(self._output_schema(uri), self._longest_connect_s() * 2 + _GRACE_S)

    def call(self, uri: str, arguments: Mapping[str, Any] | None = None, timeout_s: float = 30.0) -> Any:
        """Call a tool; its JSON value (``structuredContent`` if any, unwrapped when the server wrapped a value
        that is not an object, see ``unwrapped_schema``; else its text content parsed as JSON when it is JSON,
        else the text). Raises ``ToolFailure`` (kind ``TOOL``, see the module docstring)."""
        return self._submit(self._call(uri, dict(arguments or {}), timeout_s),
                            self._longest_connect_s() * 2 + timeout_s + _GRACE_S)

    def versions(self, uris: Iterable[str]) -> dict[str, str]:
        """``uri -> "server@version"`` for these tools (connecting as needed): what a node's result depends
        on, for caching (REQ-AGENT-019). Raises ``ToolFailure`` as ``call`` does."""
        return self._submit(self._versions(list(uris)), self._longest_connect_s() * 2 + _GRACE_S)

    def cached_schemas(self) -> dict[str, list[str]]:
        """``"server@version" -> the tools whose schema was handed out``: what the schema cache holds."""
        return self._submit(self._cached(), 5.0)

    async def _cached(self) -> dict[str, list[str]]:
        return {key: sorted(tools) for key, tools in self._schemas.items() if tools}

    def health(self) -> list[McpServerHealth]:
        """The state of every server of the registry; connects to none."""
        return self._submit(self._health(), 5.0)

    def close(self) -> None:
        """End every session (stdio servers are stopped) and the hub's thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self._submit(self._close_all(), 30.0, closing=True)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10.0)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> McpHub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"McpHub(servers={sorted(self._servers)})"

    # ------------------------------------------------------------------------------------------ plumbing

    def _submit(self, coro: Coroutine[Any, Any, T], timeout_s: float, *, closing: bool = False) -> T:
        if self._closed and not closing:
            coro.close()
            raise _fail(ErrorCode.UNAVAILABLE, "the MCP client is closed (the server is shutting down); no "
                        "tool can be called")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise _fail(ErrorCode.TIMEOUT, f"the MCP client did not answer within {timeout_s:g} s") from None

    def _scrub(self, text: str) -> str:
        """``text`` with every resolved secret value replaced."""
        with self._secrets_lock:
            values = [s.get_secret_value() for s in self._secrets]
        for value in values:
            if len(value) >= MIN_SECRET_CHARS:
                text = text.replace(value, "[secret]")
        return text

    def _scrub_value(self, value: Any) -> Any:
        """A tool result with every secret gone from every string in it (object keys too), at any depth."""
        if isinstance(value, str):
            text = self._scrub(value)
            return self._redact(text) if self._redact is not None else text
        if isinstance(value, list):
            return [self._scrub_value(item) for item in value]
        if isinstance(value, dict):
            return {self._scrub_value(str(key)): self._scrub_value(item) for key, item in value.items()}
        return value

    def _resolve(self, server: _Server) -> dict[str, SecretStr]:
        """The server's ``secretsRef``, resolved from the environment; names what is missing, never a value."""
        resolved: dict[str, SecretStr] = {}
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
                raise _fail(ErrorCode.UNAVAILABLE, server.error)
            resolved[key] = SecretStr(value)
        with self._secrets_lock:
            known = {s.get_secret_value() for s in self._secrets}
            self._secrets.extend(s for s in resolved.values() if s.get_secret_value() not in known)
        return resolved

    def _get(self, name: str) -> _Server:
        server = self._servers.get(name)
        if server is None:
            known = ", ".join(sorted(self._servers)) or "none"
            raise _fail(ErrorCode.NOT_FOUND, f"there is no MCP server named {name!r} in the registry (servers: "
                        f"{known}); use a tool of the catalogue")
        return server

    # ------------------------------------------------------------------------------------------ sessions

    async def _session(self, server: _Server) -> Any:
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
                why = f"could not be started or reached ({_describe(exc)})"
                if server.http_status is not None:
                    why = f"answered HTTP {server.http_status} ({_describe(exc)})"
                    if server.http_status in (401, 403):
                        why += "; check the credentials its secretsRef refers to"
                raise self._unavailable(server, why, stderr) from None
            server.stderr = stderr
            server.connects += 1
            if server.version != version:
                if server.version is not None:
                    self._schemas.pop(f"{server.name}@{server.version}", None)
                    log.info("MCP server %s: version %s replaces %s; its cached tools are dropped",
                             server.name, version, server.version)
                server.tools = None
            server.version = version
            server.session = session
            server.error = None
            log.info("MCP server %s connected (%s, version %s)", server.name, server.config.transport, version)
            return session

    def _unavailable(self, server: _Server, why: str, stderr: IO[str] | None = None) -> ToolFailure:
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
        return _fail(ErrorCode.UNAVAILABLE, message)

    async def _run_session(self, server: _Server, secrets: dict[str, SecretStr], ready: asyncio.Future[Any],
                           stop: asyncio.Event, stderr: IO[str]) -> None:
        """One connection, from start to end, in one task (the SDK's contexts are entered and left here)."""
        from mcp.client._probe import negotiate_auto
        from mcp.client.session import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                config = server.config
                if isinstance(config, StdioServer):
                    from mcp.client.stdio import StdioServerParameters, stdio_client

                    env = {**config.env, **{k: v.get_secret_value() for k, v in secrets.items()}}
                    argv = config.argv()
                    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env,
                                                   cwd=str(config.cwd) if config.cwd else None)
                    read, write = await stack.enter_async_context(stdio_client(params, errlog=cast(TextIO, stderr)))
                else:
                    import httpx2
                    from mcp.client.streamable_http import streamable_http_client
                    from mcp.shared._httpx_utils import create_mcp_http_client

                    headers = {**config.headers, **{k: v.get_secret_value() for k, v in secrets.items()}}
                    client = create_mcp_http_client(headers=headers, timeout=httpx2.Timeout(
                        self._connect_timeout_s, read=300.0))
                    async def record(response: Any) -> None:
                        if response.status_code >= 400:
                            server.http_status = response.status_code

                    client.event_hooks["response"].append(record)
                    await stack.enter_async_context(client)
                    read, write = await stack.enter_async_context(streamable_http_client(
                        config.url, http_client=client, max_sse_event_size=self._max_result_bytes + 65536))
                session = await stack.enter_async_context(ClientSession(read, write))
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
            log.debug("MCP server %s: session ended (%s)", server.name, self._scrub(_describe(exc)))
        finally:
            if server.task is asyncio.current_task():
                server.session = None

    async def _disconnect(self, server: _Server, grace_s: float = 10.0) -> None:
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

    async def _lost(self, server: _Server, why: str) -> ToolFailure:
        await self._disconnect(server)
        return self._unavailable(server, why)

    # ------------------------------------------------------------------------------------------ listings

    async def _tools(self, server: _Server) -> dict[str, Any]:
        """The server's tools (a cached listing while fresh and of the same version)."""
        session = await self._session(server)
        fresh = server.tools is not None and (
            server.ttl_s is None or self._clock() - server.listed_at < server.ttl_s)
        if fresh:
            assert server.tools is not None
            return server.tools
        tools: dict[str, Any] = {}
        cursor: str | None = None
        ttl_ms: int | None = None
        try:
            from mcp_types import PaginatedRequestParams

            for _ in range(100):  # pages
                page = await asyncio.wait_for(
                    session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None),
                    self._connect_s(server.config))
                tools.update((tool.name, tool) for tool in page.tools)
                if page.ttl_ms:
                    ttl_ms = page.ttl_ms if ttl_ms is None else min(ttl_ms, page.ttl_ms)
                cursor = page.next_cursor
                if not cursor:
                    break
        except TimeoutError:
            raise await self._lost(server, f"did not list its tools within {self._connect_s(server.config):g} s"
                                   ) from None
        except Exception as exc:  # any failure of the listing
            raise await self._lost(server, f"failed to list its tools ({_describe(exc)})") from None
        server.tools, server.listed_at = tools, self._clock()
        server.ttl_s = ttl_ms / 1000 if ttl_ms else None
        key = f"{server.name}@{server.version}"
        cached = self._schemas.get(key, {})
        for name in list(cached):  # a schema that changed under the same version is not served stale
            if name not in tools or tools[name].input_schema != cached[name]:
                del cached[name]
        return tools

    async def _catalogue(self) -> list[ToolInfo]:
        out: list[ToolInfo] = []
        for server in self._servers.values():
            try:
                tools = await self._tools(server)
            except ToolFailure as failure:
                log.warning("catalogue: %s", failure.error.message)
                continue
            out.extend(self._tool_info(server, tool) for tool in tools.values())
        return out

    def _tool_info(self, server: _Server, tool: Any) -> ToolInfo:
        uri = f"mcp://{server.name}/{tool.name}"
        hint = tool.annotations.read_only_hint if tool.annotations is not None else None
        # a server's annotation, and a read glob over its tools' names, count only if the registry trusts that
        # server: both are the server's own claim
        kind, source = resolve_kind(self._manifest, uri, hint, server.config.trust_annotations)
        return ToolInfo(uri=uri, server=server.name, name=tool.name, kind=kind, kind_source=source,
                        read_only_hint=hint, description=self._scrub(tool.description or ""))

    async def _info(self, uri: str) -> ToolInfo:
        server, tool = await self._tool(uri)
        return self._tool_info(server, tool)

    async def _tool(self, uri: str) -> tuple[_Server, Any]:
        try:
            server_name, tool_name, _ = tool_parts(uri)
        except ValueError as exc:
            raise _fail(ErrorCode.NOT_FOUND, f"{exc}; use a tool URI of the catalogue") from None
        server = self._get(server_name)
        tools = await self._tools(server)
        tool = tools.get(tool_name)
        if tool is None:
            raise _fail(ErrorCode.NOT_FOUND, f"the MCP server {server_name!r} has no tool {tool_name!r} (its "
                        f"tools: {', '.join(sorted(tools)) or 'none'}); use a tool of the catalogue")
        return server, tool

    async def _schema(self, uri: str) -> dict[str, Any]:
        server, tool = await self._tool(uri)
        cache = self._schemas.setdefault(f"{server.name}@{server.version}", {})
        if tool.name not in cache:
            cache[tool.name] = dict(tool.input_schema)
            log.debug("schema of %s loaded (%s@%s)", uri, server.name, server.version)
        return cache[tool.name]

    async def _output_schema(self, uri: str) -> dict[str, Any] | None:
        _, tool = await self._tool(uri)
        declared = tool.output_schema
        if declared is None:
            return None
        inner = unwrapped_schema(dict(declared))
        return dict(declared) if inner is None else inner

    async def _versions(self, uris: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for uri in uris:
            server, _ = await self._tool(uri)
            out[uri] = f"{server.name}@{server.version}"
        return out

    async def _health(self) -> list[McpServerHealth]:
        return [McpServerHealth(server=s.name, transport=s.config.transport,
                                connected=s.session is not None and s.task is not None and not s.task.done(),
                                version=s.version, tools=None if s.tools is None else len(s.tools), error=s.error)
                for s in self._servers.values()]

    # ------------------------------------------------------------------------------------------ calls

    async def _call(self, uri: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        server, tool = await self._tool(uri)
        bare = uri.split("?", 1)[0]
        problem = _schema_problem(await self._schema(uri), arguments)
        if problem is not None:
            raise _fail(ErrorCode.INVALID_ARGUMENTS, self._scrub(
                f"{bare}: the arguments do not fit its input schema ({problem}); fix them (see its schema)"))
        session = server.session
        from mcp.shared.exceptions import MCPError

        started = time.monotonic()
        try:
            result = await session.call_tool(tool.name, arguments, read_timeout_seconds=timeout_s)
        except MCPError as exc:
            if exc.code == _REQUEST_TIMEOUT:
                raise _fail(ErrorCode.TIMEOUT, f"{bare} did not answer within {timeout_s:g} s; it may still be "
                            "running on the server. Retry with a longer timeout or ask for less") from None
            if exc.code == _CONNECTION_CLOSED:
                raise await self._lost(server, f"closed the connection during a call of {tool.name}") from None
            code = {_INVALID_PARAMS: ErrorCode.INVALID_ARGUMENTS,
                    _METHOD_NOT_FOUND: ErrorCode.NOT_FOUND}.get(exc.code, ErrorCode.TOOL_ERROR)
            raise _fail(code, self._scrub(f"{bare} failed: MCP error {exc.code}: {exc.message[:500]}")) from None
        except Exception as exc:  # a broken transport
            raise await self._lost(server, f"failed during a call of {tool.name} ({_describe(exc)})") from None
        log.debug("called %s in %.0f ms", bare, (time.monotonic() - started) * 1000)
        text = "\n".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", "") == "text")
        if result.is_error:
            code = (ErrorCode.NOT_FOUND if _NOT_FOUND_TEXT.search(text) else
                    ErrorCode.INVALID_ARGUMENTS if _INVALID_TEXT.search(text) else ErrorCode.TOOL_ERROR)
            raise _fail(code, self._scrub(f"{bare} failed: {text[:1000] or '(no message)'}"))
        if result.structured_content is not None:
            value: Any = result.structured_content
            if safe_json.value_deeper_than(value):  # every walk of it (size, scrub, engine) would recurse
                too_deep = safe_json.TooDeep(safe_json.MAX_DEPTH, "its structured result")
                raise _fail(ErrorCode.TOOL_ERROR, f"{bare} failed: {too_deep}")
            value = unwrap(value, tool.output_schema)
        else:
            try:
                value = safe_json.loads(text)
            except safe_json.TooDeep as exc:
                raise _fail(ErrorCode.TOOL_ERROR, f"{bare} failed: {exc}") from None
            except ValueError:
                value = text
        value = self._scrub_value(value)  # before anything else sees it: engine, reducer, artifacts, model
        size = len(json.dumps(value, ensure_ascii=False).encode())
        if size > self._max_result_bytes:
            raise _fail(ErrorCode.RESULT_TOO_LARGE, (
                f"{bare} answered {size:,} bytes, over the MCP client's cap of {self._max_result_bytes:,}; the "
                "result was dropped. Ask for less (filter, or fetch items one by one)"))
        return value


def unwrapped_schema(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """If ``schema`` is the MCP SDKs' wrapper of a value that is not an object (MCP's ``structuredContent`` must
    be an object, so a tool returning a list, a string or a number declares ``{"type": "object", "properties":
    {"result": S}, "required": ["result"]}``), the wrapped value's schema ``S`` (with the wrapper's ``$defs``);
    else None. The SDKs title the wrapper ``<function>Output``; a tool of another origin whose object really has
    one ``result`` key and no such title is left as it is."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return None
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or list(properties) != ["result"] or schema.get("required") != ["result"]:
        return None
    if not str(schema.get("title", "")).endswith("Output"):
        return None
    inner = dict(properties["result"]) if isinstance(properties["result"], Mapping) else {}
    if "$defs" in schema:
        inner["$defs"] = schema["$defs"]
    return inner


def unwrap(structured: Any, output_schema: Mapping[str, Any] | None) -> Any:
    """The value the tool returned: ``structuredContent`` without the SDK's ``{"result": ...}`` wrapper, where
    the tool's output schema is that wrapper or, with no output schema, where it holds a value that is not an
    object (a list, a string, a number: what only a wrapper can carry)."""
    if not isinstance(structured, dict) or list(structured) != ["result"]:
        return structured
    if output_schema is not None:
        return structured["result"] if unwrapped_schema(output_schema) is not None else structured
    return structured if isinstance(structured["result"], dict) else structured["result"]


def _describe(exc: BaseException) -> str:
    """An exception in one line: its type and message, cut."""
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _schema_problem(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """The first way ``arguments`` break the input schema, or None (or None if the schema is unusable)."""
    try:
        import jsonschema  # type: ignore[import-untyped]
    except ImportError:  # the server checks them too
        return None
    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except jsonschema.exceptions.SchemaError:
        return None
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path) or "(arguments)"
    return f"{where}: {error.message[:300]}"
