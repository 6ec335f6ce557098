"""The MCP client of the agent route (REQ-AGENT-016/017): the servers of the registry, their tools, calls.

``McpHub`` is built on the official MCP SDK (``mcp.client.stdio``, ``mcp.client.streamable_http``,
``ClientSession``). It owns a private asyncio event loop in a daemon thread; its public methods are
blocking and thread-safe, because the engine's host functions are synchronous and run in worker threads. A
call's result goes through its gate (below) in the calling thread, once the loop has the server's answer: the
loop is not held by one large result while other calls and lookups wait (issue 37).

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
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, TypeVar

from .agent_config import CapabilityManifest, HttpServer, McpRegistry, StdioServer
from .contracts import ErrorCode
from .mcp_calls import McpCalls, ResultImages
from .mcp_listings import McpServerHealth, ToolInfo
from .mcp_secrets import MIN_SECRET_CHARS
from .mcp_sessions import DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_MAX_RESULT_BYTES, MAX_SERVER_STDERR, fail
from .mcp_values import unwrap, unwrapped_schema

__all__ = ["DEFAULT_CONNECT_TIMEOUT_S", "DEFAULT_MAX_RESULT_BYTES", "MAX_SERVER_STDERR", "MIN_SECRET_CHARS",
           "McpHub", "McpServerHealth", "ResultImages", "ToolInfo", "unwrap", "unwrapped_schema"]

T = TypeVar("T")

#: extra time the blocking wrappers give the event loop beyond a call's own timeouts
_GRACE_S = 5.0


class McpHub(McpCalls):
    """The MCP servers of a registry, behind thread-safe blocking methods (see the module docstring). Its parts,
    on its private event loop: sessions (``mcp_sessions.py``), listings (``mcp_listings.py``), calls
    (``mcp_calls.py``), secrets (``mcp_secrets.py``)."""

    def __init__(self, registry: McpRegistry, *, manifest: CapabilityManifest | None = None,
                 environ: Mapping[str, str] | None = None,
                 connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
                 max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
                 clock: Callable[[], float] = time.monotonic,
                 redact: Callable[[str], str] | None = None) -> None:
        """``environ``: where ``secretsRef`` is resolved (default: this process's environment); ``clock``
        (monotonic seconds): what ``ttlMs`` freshness hints are measured on; ``redact``: the server's own
        redactor, applied to every string of a tool result besides the hub's own credentials."""
        super().__init__(registry, manifest=manifest, clock=clock, environ=environ, redact=redact,
                         connect_timeout_s=connect_timeout_s, max_result_bytes=max_result_bytes)
        self._closed = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="phoenix-mcp-hub", daemon=True)
        self._thread.start()
        self._servers = self._submit(self._make_states(), 5.0)

    def add_server(self, name: str, config: StdioServer | HttpServer) -> None:
        """A server that joined the registry after the hub started (an ACP session's): connected on first use."""
        self._submit(self._add(name, config), 5.0)

    def remove_server(self, name: str) -> None:
        """A server that left the registry: its session ends (a stdio server is stopped)."""
        self._submit(self._remove(name), 20.0)

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
        return self._gated(self._submit(self._answer(uri, dict(arguments or {}), timeout_s),
                                        self._longest_connect_s() * 2 + timeout_s + _GRACE_S))[0]

    def call_with_images(self, uri: str, arguments: Mapping[str, Any] | None = None,
                         timeout_s: float = 30.0) -> tuple[Any, ResultImages]:
        """``call``, with the result's image blocks as the server sent them (the first few, and their count:
        ``ResultImages``), for the conversation's MCP tools (REQ-MCP-021); a script's call gets the value only."""
        return self._gated(self._submit(self._answer(uri, dict(arguments or {}), timeout_s),
                                        self._longest_connect_s() * 2 + timeout_s + _GRACE_S))

    def versions(self, uris: Iterable[str]) -> dict[str, str]:
        """``uri -> "server@version"`` for these tools (connecting as needed): what a node's result depends
        on, for caching (REQ-AGENT-019). Raises ``ToolFailure`` as ``call`` does."""
        return self._submit(self._versions(list(uris)), self._longest_connect_s() * 2 + _GRACE_S)

    def cached_schemas(self) -> dict[str, list[str]]:
        """``"server@version" -> the tools whose schema was handed out``: what the schema cache holds."""
        return self._submit(self._cached(), 5.0)

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
            raise fail(ErrorCode.UNAVAILABLE, "the MCP client is closed (the server is shutting down); no "
                        "tool can be called")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise fail(ErrorCode.TIMEOUT, f"the MCP client did not answer within {timeout_s:g} s") from None
