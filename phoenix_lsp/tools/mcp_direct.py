"""MCP tools in the ordinary conversation (issue 37, specs/mcp.md): their definitions, their kinds, their calls.

One :class:`McpDirect` per server, on the agent route's MCP client and capability gate (one registry for both
routes: ``PHOENIX_MCP_REGISTRY`` with ``PHOENIX_CAPABILITIES`` and ``secretsRef``):

- :meth:`McpDirect.definitions` gathers, once, every tool the manifest allows of every server the registry
  lists, named ``mcp__<server>__<tool>`` (``core/mcp_names.py``, REQ-MCP-001), with its description and input
  schema, and keeps them byte-stable for the server's life (REQ-MCP-002); a server that could not be reached
  is tried again at the next turn. :func:`with_mcp` puts them after the built-in tools, before the agent
  route's two, so the ask route's list stays a prefix of the agent route's (REQ-AGENT-002).
- :meth:`McpDirect.offered` is what the model is offered: the definitions, or, when they would take more than a
  tenth of the model's context window, the one tool that searches them (``mcp_search.py``, REQ-MCP-022).
- :meth:`McpDirect.kind` is a tool's effective kind as the capability gate decided it (REQ-AGENT-027), which
  the turn puts on the call (``ToolUse.mcp_kind``) for the core's decision (``core/mcp_rules.py``); None for a
  name no server offers.
- :meth:`McpDirect.run` runs a call the core allowed: the gate's check of the call (allow, deny, scope, rate),
  then the MCP client's call (bounded, scrubbed of the server's credentials and the known secrets,
  ``structuredContent`` unwrapped: ``agent/mcp_calls.py``), then the text for the model, capped like bash's
  output with the whole kept as an artifact (REQ-MCP-005), and the result's images through their gate
  (``mcp_images.py``, REQ-MCP-021): each one the model is given, or a note saying why not. Every failure is one
  tool error.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .. import safe_json
from ..agent.contracts import ToolFailure, function_name
from ..core.mcp_names import is_mcp, server_names, tool_names
from ..core.tools import DESCRIBE_TOOLS
from ..core.values import ToolUse
from . import mcp_search
from .mcp_images import Picture, gate
from .patch import estimate_tokens

log = logging.getLogger(__name__)

#: the longest one call may take before it is a TOOL/TIMEOUT by default (the agent route's host calls wait as long)
CALL_TIMEOUT_S = 60.0
#: the longest gathering the tools may take (servers starting) before a turn goes on without them, unless a
#: server's own ``connectTimeoutS`` is longer (:meth:`McpDirect.gather_bound_s`)
GATHER_TIMEOUT_S = 20.0
#: what the model is shown of a longer result: its first and last 4 KB, like bash's output
SHOWN_BYTES = 4096
#: the most of a tool's description, and of its input schema, one definition carries
MAX_DESCRIPTION = 1024
MAX_SCHEMA_BYTES = 32 * 1024


class Route(Protocol):
    """What the MCP tools take from the server's agent route (``server/agent_route.AgentRoute``)."""

    settings: Any  # agent.agent_config.AgentConfig, or None: the route is unavailable
    hub: Any  # agent.mcp_hub.McpHub, once started
    gate: Any  # agent.capability_gate.CapabilityGate, once started
    artifacts: Any  # agent.artifacts.ArtifactStore

    def redact(self, text: str) -> str: ...

    def start(self) -> None: ...


@dataclass(frozen=True)
class McpOutcome:
    """What one call gives the model: its text, whether it is an error, and its images (REQ-MCP-021)."""

    text: str
    is_error: bool = False
    pictures: list[Picture] = field(default_factory=list)


class McpDirect:
    """The MCP tools of the conversations of one server (see the module docstring)."""

    def __init__(self, route: Route, *, call_timeout_s: float = CALL_TIMEOUT_S) -> None:
        """``call_timeout_s``: the longest one call may take (``PHOENIX_MCP_CALL_TIMEOUT_S``)."""
        self.route = route
        self.call_timeout_s = call_timeout_s
        self._lock = asyncio.Lock()
        self._definitions: list[dict[str, Any]] | None = None
        self._uris: dict[str, str] = {}  # name -> mcp://server/tool
        self._kinds: dict[str, Literal["read", "write"]] = {}  # name -> its effective kind
        self._index: mcp_search.Index | None = None  # the search's words of the definitions (REQ-MCP-022)

    @property
    def configured(self) -> bool:
        """Whether any MCP server is configured (nothing is started when none is)."""
        settings = self.route.settings
        return settings is not None and bool(settings.registry.servers)

    async def definitions(self) -> list[dict[str, Any]]:
        """The tool definitions of every server's allowed tools (fresh dicts, equal on every call once every
        server answered); [] when no server is configured."""
        if not self.configured:
            return []
        async with self._lock:
            if self._definitions is None:
                try:
                    found, complete = await asyncio.wait_for(asyncio.to_thread(self._gather), self.gather_bound_s())
                except Exception as exc:  # a server that does not start must not stop the turn
                    log.warning("MCP tools unavailable for this turn: %s", self.route.redact(str(exc))[:300])
                    return []
                if not complete:
                    return found
                self._definitions = found
            return copy.deepcopy(self._definitions)

    def gather_bound_s(self) -> float:
        """How long a turn waits for the tools: ``GATHER_TIMEOUT_S``, or a server's own ``connectTimeoutS`` when
        that is longer, which the hub grants it to connect and list its tools: the turn must not cut it short (a
        server given 60 s that took 24 s to start on a loaded machine was left out of the turn at 20 s)."""
        settings = self.route.settings
        servers = settings.registry.servers.values() if settings is not None else ()
        return max([GATHER_TIMEOUT_S, *(server.connect_timeout_s or 0.0 for server in servers)])

    async def offered(self, context_window: int) -> list[dict[str, Any]]:
        """What the model is offered of the MCP tools: their definitions, or only the search tool when they would
        take more than a tenth of ``context_window`` (REQ-MCP-022). Equal on every call while the definitions
        are (byte-stable for the server's life)."""
        found = await self.definitions()
        if found and mcp_search.too_many(estimate_tokens(found), context_window):
            return [mcp_search.definition(found)]
        return found

    def kind(self, name: str) -> Literal["read", "write"] | None:
        """The effective kind of the tool offered as ``name`` (``read`` or ``write``), or None: not offered. The
        search tool reads."""
        if name == mcp_search.SEARCH_TOOL and self._kinds:
            return "read"
        return self._kinds.get(name)

    def uri(self, name: str) -> str | None:
        """The tool offered as ``name``, as the agent route names it (``mcp://server/tool``), or None."""
        return self._uris.get(name)

    def direct_call(self, call_id: str, tool_input: object) -> ToolUse | str:
        """A ``call_tool`` call of the agent route (REQ-AGENT-041) as the MCP tool's own call, ``mcp__<server>__<tool>``
        with the tool's arguments and kind, so the core decides it, every client shows it and it runs exactly as the
        ask route's direct call does; or why it cannot be (the model's input error). ``tool_input`` is
        ``{"server_tool": {arguments}}``, the key the catalogue's function name, its ``mcp://`` URI or the direct
        name."""
        if not isinstance(tool_input, dict) or len(tool_input) != 1:
            return ('Invalid call_tool input: it must be one catalogue tool and its arguments, {"server_tool": '
                    "{...}}. The call was not run; send it again fixed, or plan several calls with run_plan.")
        ((key, arguments),) = tool_input.items()
        if not isinstance(arguments, dict):
            return (f"Invalid call_tool input: the arguments of {str(key)[:100]!r} must be an object. The call was "
                    "not run; send it again fixed.")
        found = [name for name, uri in self._uris.items() if key in (name, uri, function_name(uri))]
        if len(found) != 1:
            why = "names no tool of the catalogue" if not found else "names more than one tool: use its mcp:// URI"
            return (f"call_tool: {str(key)[:100]!r} {why}. The call was not run; use a tool of run_plan's catalogue "
                    "(server_tool or mcp://server/tool).")
        return ToolUse(call_id, found[0], arguments, mcp_kind=self._kinds[found[0]])

    def describe(self, name: str) -> str:
        """The description of the tool offered as ``name`` (for its approval question), or ""."""
        found = next((d for d in self._definitions or () if d["name"] == name), None)
        return str(found["description"]) if found else ""

    def reset(self) -> None:
        """Servers joined or left the registry (an ACP session's, a project's): the tools are gathered again at
        the next turn, and a name of a server that left is no longer offered."""
        self._definitions = None
        self._uris = {}
        self._kinds = {}

    def _gather(self) -> tuple[list[dict[str, Any]], bool]:
        """(definitions, whether every server answered): blocking, off the event loop."""
        route = self.route
        route.start()
        hub, gate = route.hub, route.gate
        tools = [tool for tool in hub.catalogue() if gate.check_tool(tool.uri) is None]
        parts = server_names(route.settings.registry.servers)
        by_server: dict[str, list[Any]] = {}
        for tool in tools:
            by_server.setdefault(tool.server, []).append(tool)
        found: list[dict[str, Any]] = []
        for server, listed in by_server.items():
            names = tool_names(parts.get(server) or server_names([server])[server], [t.name for t in listed])
            for tool in listed:
                name = names[tool.name]
                try:
                    schema = hub.schema(tool.uri)
                except ToolFailure as failure:
                    log.warning("MCP tool %s left out: %s", tool.uri, route.redact(failure.error.message)[:300])
                    continue
                problem = _schema_problem(schema)
                if problem is not None:
                    log.warning("MCP tool %s left out: its input schema %s", tool.uri, problem)
                    continue
                description = " ".join((tool.description or "").split())[:MAX_DESCRIPTION]
                found.append({"name": name, "description": route.redact(description or f"{tool.name} ({server})"),
                              "input_schema": schema})
                self._uris[name] = tool.uri
                self._kinds[name] = tool.kind
        complete = not any(h.error for h in hub.health())
        return found, complete

    async def run(self, call: ToolUse, conversation_id: str) -> McpOutcome:
        """Run one call the core allowed: the text for the model, whether it is an error, its images."""
        if self._definitions is None:  # a call restored after a restart: its server is gathered first
            await self.definitions()
        if call.name == mcp_search.SEARCH_TOOL:  # the model looks for tools (REQ-MCP-022): no server is called
            if self._index is None or self._index.definitions is not self._definitions:
                self._index = mcp_search.Index(self._definitions or [])  # once per gathering
            text, is_error = mcp_search.answer(self._index, self._kinds, call.input)
            return McpOutcome(self.route.redact(text), is_error)
        uri = self._uris.get(call.name)
        if uri is None or self.route.hub is None:
            return McpOutcome(f"Unknown tool '{call.name}': no MCP server of this conversation offers it. Nothing "
                              "was sent to any server.", True)
        refused = self.route.gate.check_call(uri, call.input)
        if refused is not None:
            return McpOutcome(self.route.redact(f"{call.name} was not called: {refused.kind}/{refused.code}: "
                                                f"{refused.message}"), True)
        try:
            value, images = await asyncio.to_thread(self.route.hub.call_with_images, uri, dict(call.input),
                                                    self.call_timeout_s)
        except Exception as exc:  # ToolFailure, or anything a broken server caused: one tool error
            error = getattr(exc, "error", None)
            what = (f"{error.kind}/{error.code}: {error.message}" if error is not None else
                    f"{type(exc).__name__}: {exc}")
            return McpOutcome(self.route.redact(f"{call.name} failed: {what}")[:4000], True)
        text = await asyncio.to_thread(self._text, value, conversation_id)
        if not images.total:
            return McpOutcome(text)
        pictures, notes = await asyncio.to_thread(gate, images.kept, images.total)
        if notes:
            text = "\n\n".join(part for part in (text, *notes) if part)
        return McpOutcome(text, False, pictures)

    def _text(self, value: Any, conversation_id: str) -> str:
        """The result as the model reads it: capped like bash's output, the whole kept as an artifact."""
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        text = self.route.redact(text)
        data = text.encode("utf-8", "replace")
        if len(data) <= 2 * SHOWN_BYTES:
            return text
        kept = "it could not be kept"
        if self.route.artifacts is not None:
            try:
                handle = self.route.artifacts.scoped(conversation_id).put(text)
            except Exception as exc:  # over the artifact cap, a full disk: the model still gets the ends
                kept = f"it could not be kept ({exc})"
            else:
                kept = f"the whole result is kept as {handle.handle} ({handle.size:,} bytes)"
        head = data[:SHOWN_BYTES].decode("utf-8", "ignore")
        tail = data[-SHOWN_BYTES:].decode("utf-8", "ignore")
        return (f"{head}\n\n[... {len(data) - 2 * SHOWN_BYTES:,} bytes cut from the middle of {len(data):,} bytes "
                f"of result: the first and last 4 KB are shown; {kept}. Ask the tool for less (filter, or page "
                f"through it) to see more ...]\n\n{tail}")


def _schema_problem(schema: Any) -> str | None:
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return "is not a JSON Schema of an object"
    if safe_json.value_deeper_than(schema):
        return f"is nested deeper than {safe_json.MAX_DEPTH} levels"
    if len(json.dumps(schema)) > MAX_SCHEMA_BYTES:
        return f"is over {MAX_SCHEMA_BYTES:,} bytes"
    return None


def with_mcp(definitions: Sequence[dict[str, Any]], mcp: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation's tools with the MCP tools after the built-in ones and before the agent route's two
    (``describe_tools``, ``run_plan``): the ask route's list stays a prefix of the agent route's."""
    names = [d.get("name") for d in definitions]
    at = names.index(DESCRIBE_TOOLS) if DESCRIBE_TOOLS in names else len(names)
    return [*definitions[:at], *mcp, *definitions[at:]]


__all__ = ["CALL_TIMEOUT_S", "McpDirect", "McpOutcome", "is_mcp", "with_mcp"]
