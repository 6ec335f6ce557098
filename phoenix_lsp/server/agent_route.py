"""The agent route in the server (seed 004, ``specs/agent-mode.md``): what its conversations share.

One :class:`AgentRoute` per server holds the MCP client (``agent/mcp_hub.py``), the capability manifest's
capability gate, the budgets, the artifact store (node results are cached only within one plan run, by the
executor: REQ-AGENT-029), the warm engine workers and ``run_plan``'s catalogue of tools.
:class:`ConversationAgent` (``conversation_agent.py``) binds it to one conversation: ``describe_tools``,
``run_plan`` and the orchestrator's ``Host``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..agent.agent_config import AgentConfigError, load_agent_config
from ..agent.artifacts import ArtifactStore
from ..agent.capability_gate import CapabilityGate
from ..agent.contracts import EngineName, ToolFailure, function_name
from ..agent.mcp_consent_store import ConsentStore
from ..agent.mcp_sources import Sourced
from ..agent.mcp_values import compact_schema
from ..agent.server_secrets import server_secrets
from ..agent.signatures import signature
from ..agent.warm_pool import WarmPool
from ..tools.mcp_direct import McpDirect
from .config import CATALOGUE_INLINE_MAX
from .conversation_agent import CALL_TIMEOUT_S, ConversationAgent, default_write_fix, why_write
from .early_plans import EarlyCalls
from .instructions import config_dir
from .mcp_consents import McpSources
from .runtime.base import AgentHost

__all__ = ["CALL_TIMEOUT_S", "CATALOGUE_INLINE_MAX", "CATALOGUE_TIMEOUT_S", "AgentRoute", "ConversationAgent",
           "compact_schema", "default_write_fix", "setup_route", "why_write"]

log = logging.getLogger(__name__)

#: the longest the catalogue may take to gather (MCP servers starting) before a turn goes on without it
CATALOGUE_TIMEOUT_S = 20.0


class AgentRoute:
    """The agent route of one server. ``unavailable`` says why the route cannot run (an invalid settings file,
    REQ-AGENT-022); the ask route never depends on any of this. ``ask_prompt``: measurement only (REQ-AGENT-040)."""

    def __init__(self, *, engine: EngineName, settings: Any, problem: str | None, redact: Callable[[str], str],
                 add_secret: Callable[..., None], sample_rate: float = 0.1,
                 catalogue_inline_max: int = CATALOGUE_INLINE_MAX, mcp_call_timeout_s: float = 60.0,
                 consents: ConsentStore | None = None, ask_prompt: bool = False, early_start: bool = True) -> None:
        self.engine = engine
        self.catalogue_inline_max = catalogue_inline_max  # bytes; above it the catalogue is an index (REQ-AGENT-038)
        self.settings = settings  # agent.settings.AgentConfig, or None when ``problem`` says why not
        self.unavailable = problem
        self.redact, self.add_secret, self.sample_rate, self.ask_prompt = redact, add_secret, sample_rate, ask_prompt
        self._catalogue: str | None = None
        self._lock, self._started = asyncio.Lock(), threading.Lock()
        self._closed = False  # closed at shutdown: nothing starts again
        self.hub: Any = None  # the MCP client and the gate start on first use: the SDK is a heavy import
        self.gate: Any = None
        self.artifacts: Any = None
        self.pool: Any = None  # warm engine workers (REQ-AGENT-037), from the first agent turn
        self.early = EarlyCalls(early_start)  # plans' nodes started while the model writes them (REQ-AGENT-044)
        #: the same servers' tools offered in the conversation itself, on both routes (issue 37, specs/mcp.md)
        self.direct = McpDirect(self, call_timeout_s=mcp_call_timeout_s)
        #: servers of the files other tools read (and ACP sessions'), which have no capability manifest: every
        #: tool of theirs is allowed (as a write unless the manifest calls it a read) where the manifest names
        #: none of them; a manifest that names such a server rules it as it rules the registry's
        self.implicit: set[str] = set()
        #: where each server not from the registry came from, and the project's servers' consent (REQ-MCP-008/009)
        self.sources = McpSources(self, consents)
        if settings is not None:
            self.artifacts = ArtifactStore(settings.artifact_dir)
            for secret, label in _referenced_secrets(settings.registry):  # an MCP credential is a secret like the key
                add_secret(secret, label)

    def start(self) -> None:
        """Create the MCP client and the capability gate (blocking: call it off the event loop)."""
        with self._started:
            if self.hub is None and self.settings is not None and not self._closed:
                from ..agent.mcp_hub import McpHub  # lazy: the MCP SDK takes about 0.7 s to import

                self.gate = CapabilityGate(self._manifest())
                self.hub = McpHub(self.settings.registry, manifest=self.settings.manifest, redact=self.redact)
                if self.engine == "monty":  # a worker starts now, off the path of the turn's first node
                    self.pool = WarmPool()
                    self.pool.warm_for(self.settings.budgets.node)

    # ------------------------------------------------------------------------------------ catalogue

    async def catalogue_text(self) -> str:
        """run_plan's list of the tools scripts may call: each tool's call in one line (REQ-AGENT-035) and its
        description's first 160 characters; the full schemas come with describe_tools. Gathered once per
        server, and kept while every server answered (the prompt cache wants it byte-stable)."""
        if self.settings is None:
            return f"No MCP tools: {self.unavailable}"
        async with self._lock:
            if self.hub is None:  # started once, off the event loop: later requests skip the thread hop
                await asyncio.to_thread(self.start)
            if self._catalogue is not None:
                return self._catalogue
            try:
                tools = await asyncio.wait_for(asyncio.to_thread(self.hub.catalogue), CATALOGUE_TIMEOUT_S)
            except Exception as exc:  # a server that does not start must not stop the turn
                log.warning("MCP catalogue unavailable: %s", exc)
                return f"The MCP tools are unavailable right now: {self.redact(str(exc))[:300]}."
            lines = ["MCP tools as scripts call them (full schemas: describe_tools):"]
            by_default: list[str] = []
            offered = [tool for tool in tools if self.gate.check_tool(tool.uri) is None]  # else not offered
            calls = await asyncio.to_thread(self._signatures, [tool.uri for tool in offered])
            for tool in offered:
                summary = " ".join((tool.description or "").split())[:160]
                lines.append(f"- {tool.uri} [{tool.kind}] {calls[tool.uri]}: {summary}")
                if tool.kind == "write" and tool.kind_source == "default":
                    by_default.append(tool.name)
            if by_default:
                lines.append(f"{len(by_default)} of them count as writes only because nothing says they read "
                             "(Restricted refuses them; interactive asks about each call): " + default_write_fix())
            down = [f"{h.server} ({h.error})" for h in self.hub.health() if h.error]
            if down:
                lines.append(f"Unreachable now: {'; '.join(down)[:300]}.")
            elif len(lines) == 1:
                lines = ["No MCP tool is available: the registry (PHOENIX_MCP_REGISTRY) lists none, or the manifest "
                         "(PHOENIX_CAPABILITIES) allows none. Plans can still compute."]
            text = self.redact("\n".join(lines))
            if len(text.encode()) > self.catalogue_inline_max:  # too big to send with every request: on demand
                text = self.redact("\n".join(_index(offered, lines[len(offered) + 1:])))
            if not down:  # kept for the server's life (the prompt cache wants it stable); gathered again if not
                self._catalogue = text
            return text

    def sweep_artifacts(self, conversation_ids: Sequence[str]) -> None:
        """Delete the artifacts of conversations that no longer exist (at start-up)."""
        if self.artifacts is not None:
            try:
                gone = self.artifacts.sweep(conversation_ids)
            except OSError as exc:
                log.warning("artifacts: could not sweep %s: %s", self.artifacts.directory, exc)
            else:
                if gone:
                    log.info("artifacts: deleted those of %d conversation(s) that no longer exist", gone)

    def forget(self, conversation_id: str) -> None:  # the conversation is over: its artifacts go with it
        if self.artifacts is not None:
            self.artifacts.remove_scope(conversation_id)

    def _signatures(self, uris: list[str]) -> dict[str, str]:
        """Each tool's call in one line (``agent/signatures.py``); the bare ``name()`` where its schemas
        cannot be had."""
        out: dict[str, str] = {}
        for uri in uris:
            try:
                out[uri] = signature(function_name(uri), self.hub.schema(uri), self.hub.output_schema(uri))
            except ToolFailure:
                out[uri] = f"{function_name(uri)}(...)"
        return out

    def add_servers(self, servers: Mapping[str, Any], secrets: Sequence[str] = ()) -> list[str]:
        """MCP servers a client brings (an ACP session's, issue 28) join the registry, under the same manifest
        (allow, deny, kinds, rates: REQ-AGENT-022); ``secrets`` (their environment's and headers' values) are
        kept out of every output like the key. Returns what could not be added, in words."""
        for secret in secrets:  # learned even when the servers cannot be used: the client gave them
            self.add_secret(secret, "a credential of the session's MCP servers")
        for name, server in servers.items():  # REQ-SEC-012, REQ-SEC-045: the one place that finds them
            for secret, label in server_secrets(name, server):
                self.add_secret(secret, label)
        if self.settings is None:
            return [f"the agent route is unavailable, so the session's MCP servers are not used: {self.unavailable}"]
        problems = []
        with self._started:
            registry = self.settings.registry.servers
            for name, server in servers.items():
                known = registry.get(name)
                if known is not None and known != server:
                    problems.append(f"the MCP server {name!r} of the session was not added: the registry has a "
                                    "server of that name (rename one of them)")
                    continue
                if known is None:
                    shown = " ".join(server.argv()) if server.transport == "stdio" else server.url
                    self._join(Sourced(name=name, origin="session", config=server, digest="", shown=shown))
        return problems

    # ------------------------------------------------------------------------- where servers come from

    def _manifest(self) -> Any:
        """The manifest the gate applies: the file's, and all tools of the ``implicit`` servers it does not name."""
        manifest = self.settings.manifest
        named = manifest.servers()
        extra = tuple(f"mcp://{name}/*" for name in sorted(self.implicit - named))
        return manifest.model_copy(update={"allow": (*manifest.allow, *extra)}) if extra else manifest

    def _join(self, server: Sourced) -> None:
        """A server joins the registry (call with ``_started`` held): started on first use."""
        self.settings.registry.servers[server.name] = server.config
        self.sources.origins[server.name] = server
        self.implicit.add(server.name)
        if self.hub is not None:
            self.hub.add_server(server.name, server.config)
        if self.gate is not None:
            self.gate = CapabilityGate(self._manifest())
        self._catalogue = None  # gathered again with the new server's tools
        self.direct.reset()

    def join(self, server: Sourced) -> None:
        """A server of a file joins the registry (``mcp_consents.McpSources``): started on first use."""
        with self._started:
            self._join(server)

    def leave(self, name: str) -> None:  # a server of a file leaves the registry (see _leave)
        with self._started:
            self._leave(name)

    def _leave(self, name: str) -> None:
        """A server leaves the registry (its definition changed): its session ends, its tools are no longer
        offered. Call with ``_started`` held."""
        self.settings.registry.servers.pop(name, None)
        self.sources.origins.pop(name, None)
        self.implicit.discard(name)
        if self.hub is not None:
            self.hub.remove_server(name)
        if self.gate is not None:
            self.gate = CapabilityGate(self._manifest())
        self._catalogue = None
        self.direct.reset()

    async def project(self, folder: str, ask: Callable[[Any], Awaitable[bool | None]],
                      notice: Callable[[str], None]) -> None:
        """The workspace folder's servers, with the user's consent (``mcp_consents.McpSources.project``)."""
        await self.sources.project(folder, ask, notice)

    def tools_for(self, runtime: AgentHost) -> ConversationAgent:
        self.start()  # already done by the turn's catalogue, unless the conversation was restored mid-turn
        return ConversationAgent(self, runtime)

    def close(self) -> None:
        """End the warm engine workers and the MCP servers (the server is shutting down): a start under way
        finishes first, and none comes after. Blocking; idempotent."""
        self.early.drop(None)
        with self._started:
            self._closed = True
            if self.pool is not None:
                self.pool.close()
            if self.hub is not None:
                self.hub.close()


def _index(tools: Sequence[Any], notes: Sequence[str]) -> list[str]:
    """The catalogue on demand (REQ-AGENT-038): each server's tools by name, writes marked, and what to ask."""
    by_server: dict[str, list[str]] = {}
    for tool in tools:
        server, name = tool.uri.removeprefix("mcp://").split("/", 1)
        by_server.setdefault(server, []).append(name + (" [write]" if tool.kind == "write" else ""))
    return ["MCP tools (mcp://<server>/<tool>, called in scripts as server_tool): before planning, call "
            "describe_tools with the ones you need for their calls and results.",
            *(f"- {server}: {', '.join(names)}" for server, names in by_server.items()), *notes]


def _referenced_secrets(registry: Any) -> list[tuple[str, str]]:
    """(value, label) of the registry's servers' secrets (``agent/server_secrets``, the one place they are found):
    the guard learns them before any MCP server starts, so no log, store, prompt or artifact can carry one
    (REQ-AGENT-016, REQ-SEC-012, REQ-SEC-045)."""
    return [found for name, server in registry.servers.items() for found in server_secrets(name, server)]


def setup_route(settings: Any, data_dir: Path, guard: Any) -> AgentRoute:
    """The server's agent route from its settings (REQ-AGENT-022): an invalid file makes it unavailable, with
    the file's setting, path and error; the ask route never depends on it."""
    loaded = load_agent_config(settings, data_dir)
    consents = ConsentStore(data_dir)
    if isinstance(loaded, AgentConfigError):
        log.warning("%s", loaded.describe())
        return AgentRoute(engine=settings.agent_engine, settings=None, problem=loaded.describe(),
                          redact=guard.redact, add_secret=guard.add_secret)
    for warning in loaded.warnings:
        log.warning("agent route: %s", warning)
    route = AgentRoute(engine=settings.agent_engine, settings=loaded, problem=None, redact=guard.redact,
                       add_secret=guard.add_secret, sample_rate=settings.agent_trace_sample,
                       catalogue_inline_max=settings.agent_catalogue_inline_max, ask_prompt=settings.agent_ask_prompt,
                       mcp_call_timeout_s=settings.mcp_call_timeout_s, consents=consents,
                       early_start=settings.agent_early_start)
    route.sources.add_user(config_dir(getattr(settings, "config_dir", None)))
    return route
