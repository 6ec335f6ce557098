"""The MCP client's listings (REQ-AGENT-004/017): each server's tools, cached per ``server@version`` (listed
again once a ``ttlMs`` hint says they are stale), the catalogue with each tool's kind under the manifest, and a
tool's schema handed out on first use. See ``mcp_hub.py``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Literal

from mcp_types import PaginatedRequestParams

from ..protocol.base import Wire
from .agent_config import CapabilityManifest, McpRegistry, tool_parts
from .capability_gate import resolve_kind
from .contracts import ErrorCode, ToolFailure
from .mcp_sessions import McpSessions, Server, describe, fail
from .mcp_values import unwrapped_schema

log = logging.getLogger(__name__)


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


class McpListings(McpSessions):
    """The listings of one MCP client, on its event loop (see ``McpHub``): ``clock`` (monotonic seconds) is
    what ``ttlMs`` freshness hints are measured on."""

    def __init__(self, registry: McpRegistry, *, manifest: CapabilityManifest | None, clock: Callable[[], float],
                 **sessions: Any) -> None:
        super().__init__(registry, **sessions)
        self._manifest = manifest or CapabilityManifest()
        self._clock = clock
        self._schemas: dict[str, dict[str, dict[str, Any]]] = {}  # server@version -> tool -> input schema

    def _forget_version(self, key: str) -> None:
        self._schemas.pop(key, None)

    async def _tools(self, server: Server) -> dict[str, Any]:
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
            raise await self._lost(server, f"failed to list its tools ({describe(exc)})") from None
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

    def _tool_info(self, server: Server, tool: Any) -> ToolInfo:
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

    async def _tool(self, uri: str) -> tuple[Server, Any]:
        try:
            server_name, tool_name, _ = tool_parts(uri)
        except ValueError as exc:
            raise fail(ErrorCode.NOT_FOUND, f"{exc}; use a tool URI of the catalogue") from None
        server = self._get(server_name)
        tools = await self._tools(server)
        tool = tools.get(tool_name)
        if tool is None:
            raise fail(ErrorCode.NOT_FOUND, f"the MCP server {server_name!r} has no tool {tool_name!r} (its "
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

    async def _cached(self) -> dict[str, list[str]]:
        return {key: sorted(tools) for key, tools in self._schemas.items() if tools}
