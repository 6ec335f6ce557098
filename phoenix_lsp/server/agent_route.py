"""The agent route in the server (seed 004, ``specs/agent-mode.md``): what ``describe_tools`` and ``run_plan`` do.

One :class:`AgentRoute` per server holds what its conversations share: the MCP client (``agent/mcp_hub.py``),
the capability manifest's capability gate, the budgets and the artifact store (node results are cached only
within one plan run, by the executor: REQ-AGENT-029).
:class:`ConversationAgent` binds it to one conversation and is the orchestrator's ``Host``:

- a plan is prepared (validated, approval nodes inserted, every tool checked against the manifest) and run by
  the executor in a worker thread, so the event loop keeps answering requests;
- every host call a script makes passes the manifest's gate (allow/deny, scope, rate) and then the core's
  permission function (``Runtime.host_call``: reads go ahead, writes are refused in Restricted and asked about
  per call under the interactive policy), and only then reaches the MCP server;
- the model gets the reducer's compact text, redacted like every tool output; big results stay in artifacts.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from ..agent.contracts import AgentError, EngineName, ErrorCode, ErrorKind, PlanNode, ToolFailure, function_name
from ..core.tools import ToolKind
from ..core.values import ToolUse
from ..tools.inputs import RunPlanInput
from .config import CATALOGUE_INLINE_MAX
from .runtime import Runtime

log = logging.getLogger(__name__)

#: the longest one MCP call may take before it is a TOOL/TIMEOUT
CALL_TIMEOUT_S = 60.0
#: the longest the catalogue may take to gather (MCP servers starting) before a turn goes on without it
CATALOGUE_TIMEOUT_S = 20.0


class AgentRoute:
    """The agent route of one server. ``unavailable`` says why the route cannot run (an invalid settings file,
    REQ-AGENT-022); the ask route never depends on any of this."""

    def __init__(self, *, engine: EngineName, settings: Any, problem: str | None, redact: Callable[[str], str],
                 add_secret: Callable[[str], None], sample_rate: float = 0.1,
                 catalogue_inline_max: int = CATALOGUE_INLINE_MAX) -> None:
        self.engine = engine
        self.catalogue_inline_max = catalogue_inline_max  # bytes; above it the catalogue is an index (REQ-AGENT-038)
        self.settings = settings  # agent.settings.AgentConfig, or None when ``problem`` says why not
        self.unavailable = problem
        self.redact = redact
        self.add_secret = add_secret
        self.sample_rate = sample_rate
        self._catalogue: str | None = None
        self._lock = asyncio.Lock()
        self._started = threading.Lock()
        self.hub: Any = None  # the MCP client and the gate start on first use: the SDK is a heavy import
        self.gate: Any = None
        self.artifacts: Any = None
        self.pool: Any = None  # warm engine workers (REQ-AGENT-037), from the first agent turn
        if settings is not None:
            from ..agent.artifacts import ArtifactStore

            self.artifacts = ArtifactStore(settings.artifact_dir)
            for secret in _referenced_secrets(settings.registry):  # an MCP credential is a secret like the key
                add_secret(secret)

    def start(self) -> None:
        """Create the MCP client and the capability gate (blocking: call it off the event loop)."""
        with self._started:
            if self.hub is None and self.settings is not None:
                from ..agent.capability_gate import CapabilityGate
                from ..agent.mcp_hub import McpHub

                self.gate = CapabilityGate(self.settings.manifest)
                self.hub = McpHub(self.settings.registry, manifest=self.settings.manifest, redact=self.redact)
                if self.engine == "monty":  # a worker starts now, off the path of the turn's first node
                    from ..agent.warm_pool import WarmPool

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

    def forget(self, conversation_id: str) -> None:
        """The conversation is over: its artifacts go with it."""
        if self.artifacts is not None:
            self.artifacts.remove_scope(conversation_id)

    def _signatures(self, uris: list[str]) -> dict[str, str]:
        """Each tool's call in one line (``agent/signatures.py``); the bare ``name()`` where its schemas
        cannot be had."""
        from ..agent.signatures import signature

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
        if self.settings is None:
            return [f"the agent route is unavailable, so the session's MCP servers are not used: {self.unavailable}"]
        for secret in secrets:
            self.add_secret(secret)
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
                    registry[name] = server
                    if self.hub is not None:
                        self.hub.add_server(name, server)
                    self._catalogue = None  # gathered again with the new server's tools
        return problems

    def tools_for(self, runtime: Runtime) -> ConversationAgent:
        self.start()  # already done by the turn's catalogue, unless the conversation was restored mid-turn
        return ConversationAgent(self, runtime)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        if self.hub is not None:
            self.hub.close()


class ConversationAgent:
    """The agent route's tools for one conversation, and the orchestrator's Host while a plan runs."""

    def __init__(self, route: AgentRoute, runtime: Runtime) -> None:
        self.route = route
        self.runtime = runtime
        self.loop = asyncio.get_running_loop()
        self.tool_use_id = ""
        self._ids = itertools.count(1)
        self._waited_s = 0.0  # seconds host calls spent waiting for the core's answer (a person, under interactive)
        self._waited_lock = threading.Lock()
        self._summaries: dict[str, str] = {}  # write tool -> its approval node's summary

    # --------------------------------------------------------------------------------- the two tools

    async def describe(self, tools: list[str]) -> tuple[str, bool]:
        route = self.route
        if route.hub is None:
            return f"No MCP tools are available: {route.unavailable or 'none are configured'}.", True
        parts: list[str] = []
        failures = 0
        for uri in tools:
            refused = route.gate.check_tool(uri)
            if refused is None:
                try:  # both may reach the MCP server: off the event loop
                    schema, returns, kind = await asyncio.to_thread(self._schemas_and_kind, uri)
                except ToolFailure as failure:
                    refused = failure.error
            if refused is not None:
                parts.append(f"{uri}: {refused.kind}/{refused.code}: {refused.message}")
                failures += 1
                continue
            line = f"{uri} [{kind}] {function_name(uri)}(**arguments); arguments: {_schema_text(schema)}"
            if returns is not None:
                line += f"; returns: {_schema_text(returns)}"
            parts.append(line)
        return route.redact("\n".join(parts)), failures == len(tools)

    def _schemas_and_kind(self, uri: str) -> tuple[dict[str, Any], dict[str, Any] | None, str]:
        hub = self.route.hub
        return hub.schema(uri), hub.output_schema(uri), self.tool_kind(uri)

    async def run_plan(self, plan: RunPlanInput, call: ToolUse) -> tuple[str, bool]:
        from ..agent.executor import run
        from ..agent.planner import PlanRefused, prepare

        route = self.route
        self.tool_use_id = call.id
        raw = _raw_plan(plan)
        try:
            prepared = await asyncio.to_thread(prepare, raw, self, route.settings.budgets)
        except PlanRefused as refused:
            error = refused.error
            return route.redact(f"The plan was not run: {error.kind}/{error.code}: {error.message}"), True
        from ..agent.host import Cancellation

        cancelled = Cancellation()  # setting it kills a running unit's process tree at once
        try:
            report = await asyncio.to_thread(
                run, prepared, host=self, engine_name=route.engine, budgets=route.settings.budgets,
                artifacts=route.artifacts.scoped(self.runtime.id), cancelled=cancelled,
                sample_rate=route.sample_rate, redact=route.redact, pool=route.pool)
        except asyncio.CancelledError:
            cancelled.set()  # the unit's tree is killed now, the executor stops; a waiting host call was answered no
            raise
        log.info("agent run %s: plan %s, %s, %d nodes, %d tool calls, %.0f ms", call.id, report.plan_hash[:12],
                 report.outcome, len(report.nodes), report.totals.tool_calls, report.totals.wall_ms)
        return route.redact(report.summary), report.outcome == "failed"

    # ------------------------------------------------------------------------------------------ Host

    def tool_kind(self, tool: str) -> Literal["read", "write"]:
        from ..agent.mcp_tools import tool_kind

        kind: Literal["read", "write"] = tool_kind(self.route.hub, self.route.gate, tool)
        return kind

    def check_tool(self, tool: str) -> AgentError | None:
        error: AgentError | None = self.route.gate.check_tool(tool)
        return error

    def versions(self, tools: Sequence[str]) -> dict[str, str]:
        versions: dict[str, str] = self.route.hub.versions(list(tools))
        return versions

    def call(self, tool: str, arguments: dict[str, Any], timeout_s: float | None = None) -> Any:
        """One host call from a script (a worker thread): the manifest's gate, the core's decision, then MCP
        (for at most ``timeout_s``, the run's time left, and ``CALL_TIMEOUT_S``)."""
        from ..agent.mcp_tools import call_tool

        limit = CALL_TIMEOUT_S if timeout_s is None else max(0.001, min(CALL_TIMEOUT_S, timeout_s))
        return call_tool(self.route.hub, self.route.gate, tool, arguments, timeout_s=limit, permit=self._permit)

    def approval_wait_s(self) -> float:
        """Seconds this conversation's host calls spent waiting for the core's answer (a person's, under the
        interactive policy): the run's wall clock does not count them."""
        with self._waited_lock:
            return self._waited_s

    def approve(self, node: PlanNode) -> AgentError | None:
        """An approval node (REQ-AGENT-015/031): the core refuses it in Restricted (the write behind it could not
        run) and passes it otherwise without a question: each write call it guards is asked about, once, with
        its arguments and this node's summary."""
        request = node.approval
        assert request is not None
        # not counted in approval_wait_s: the executor already leaves host.approve out of the run's clock
        self._summaries[request.tool.split("?", 1)[0]] = request.summary
        return self._permit(request.tool, "plan", {"approvalNode": node.id, "summary": request.summary},
                            timed=False)

    def _permit(self, tool: str, kind: str, arguments: Mapping[str, Any], *, timed: bool = True) -> AgentError | None:
        """The core's permission function decides (REQ-SEC-003), waiting for the user where it asks."""
        call = ToolUse(f"{self.tool_use_id}.{next(self._ids)}", tool, dict(arguments))
        kinds = {"read": ToolKind.READ, "write": ToolKind.WRITE, "plan": ToolKind.PLAN}
        description = self._question(tool) if kind == "write" else ""
        asked = time.monotonic()
        future = asyncio.run_coroutine_threadsafe(
            self.runtime.host_call(self.tool_use_id, call, kinds[kind], description), self.loop)
        try:
            allowed, message, by = future.result()
        finally:
            if timed:
                with self._waited_lock:
                    self._waited_s += time.monotonic() - asked
        if allowed:
            return None
        if by == "user":
            return AgentError(kind=ErrorKind.DENIED, code=ErrorCode.APPROVAL_DENIED, message=message)
        if by == "mode":
            return AgentError(kind=ErrorKind.DENIED, code=ErrorCode.MODE_DENIED,
                              message=f"{message}{self._why_write(tool)}")
        return AgentError(kind=ErrorKind.DENIED, code=ErrorCode.CAPABILITY_DENIED, message=message)

    def _question(self, tool: str) -> str:
        """What the approval question of a write call says beside its tool and arguments: the plan's node
        that makes it, and what the tool does."""
        bare = tool.split("?", 1)[0]
        what = ""
        with contextlib.suppress(ToolFailure):
            what = " ".join((self.route.hub.info(bare).description or "").split())[:300]
        node = self._summaries.get(bare, f"a plan calls {bare}, a write")
        return self.route.redact(f"{node[:1].upper()}{node[1:]}." + (f" The tool: {what}" if what else ""))

    def _why_write(self, tool: str) -> str:
        """Why a tool counts as a write when only the safe default says so, and what the user can change."""
        return why_write(self.route.hub, tool)


def _index(tools: Sequence[Any], notes: Sequence[str]) -> list[str]:
    """The catalogue on demand (REQ-AGENT-038): each server's tools by name, writes marked, and what to ask."""
    by_server: dict[str, list[str]] = {}
    for tool in tools:
        server, name = tool.uri.removeprefix("mcp://").split("/", 1)
        by_server.setdefault(server, []).append(name + (" [write]" if tool.kind == "write" else ""))
    return ["MCP tools (mcp://<server>/<tool>, called in scripts as server_tool): before planning, call "
            "describe_tools with the ones you need for their calls and results.",
            *(f"- {server}: {', '.join(names)}" for server, names in by_server.items()), *notes]


def default_write_fix() -> str:
    """What the user can change when tools count as writes only by the safe default."""
    return ("the capability manifest (PHOENIX_CAPABILITIES) gives them no kind and the registry "
            "(PHOENIX_MCP_REGISTRY) does not trust their server's readOnlyHint annotations. A tool that only "
            "reads can be named in the manifest's \"tools\" with {\"kind\": \"read\"}, or its server's entry in "
            "the registry given \"trustAnnotations\": true.")


def why_write(hub: Any, tool: str) -> str:
    """" (...)" naming why ``tool`` counts as a write when nothing says it reads (the manifest names no kind
    for it and its server is not trusted, or gave no ``readOnlyHint``), and what to change; "" otherwise."""
    bare = tool.split("?", 1)[0]
    try:
        info = hub.info(bare)
    except ToolFailure:
        return ""
    if info.kind != "write" or info.kind_source != "default":
        return ""
    return f" {bare} counts as a write only because nothing says it reads: {default_write_fix()}"


def compact_schema(schema: Any) -> Any:
    """A JSON Schema without what tells a script nothing: ``title`` annotations (the SDKs derive them from
    names already shown) and ``additionalProperties: true`` (the default). Property names are kept, even one
    called ``title``."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "additionalProperties" and value is True:
            continue
        if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(value, dict):
            out[key] = {name: compact_schema(sub) for name, sub in value.items()}
        else:
            out[key] = compact_schema(value)
    return out


def _schema_text(schema: Any) -> str:
    return json.dumps(compact_schema(schema), sort_keys=True, separators=(",", ":"))


def _raw_plan(plan: RunPlanInput) -> dict[str, Any]:
    """run_plan's input (the model's compact form) as the contracts' Plan: each node a script unit."""
    nodes = []
    for node in plan.nodes:
        nodes.append({
            "id": node.id, "kind": "script", "dependsOn": list(node.depends_on), "inputs": list(node.inputs),
            "outputs": list(node.outputs),
            "unit": {"code": node.code, "allowedTools": list(node.tools)},
        })
    return {"goal": plan.goal, "constraints": list(plan.constraints), "nodes": nodes}


def _referenced_secrets(registry: Any) -> list[str]:
    """The values the registry's ``secretsRef`` entries name (``env:NAME``), as they are now: the guard learns
    them before any MCP server starts, so no log, store, prompt or artifact can carry one (REQ-AGENT-016)."""
    import os

    found = []
    for server in registry.servers.values():
        for reference in (getattr(server, "secrets_ref", None) or {}).values():
            if isinstance(reference, str) and reference.startswith("env:"):
                value = os.environ.get(reference[4:])
                if value:
                    found.append(value)
    return found


def setup_route(settings: Any, data_dir: Path, guard: Any) -> AgentRoute:
    """The server's agent route from its settings (REQ-AGENT-022): an invalid file makes it unavailable, with
    the file's setting, path and error; the ask route never depends on it."""
    from ..agent.agent_config import AgentConfigError, load_agent_config

    loaded = load_agent_config(settings, data_dir)
    if isinstance(loaded, AgentConfigError):
        log.warning("%s", loaded.describe())
        return AgentRoute(engine=settings.agent_engine, settings=None, problem=loaded.describe(),
                          redact=guard.redact, add_secret=guard.add_secret)
    for warning in loaded.warnings:
        log.warning("agent route: %s", warning)
    return AgentRoute(engine=settings.agent_engine, settings=loaded, problem=None, redact=guard.redact,
                      add_secret=guard.add_secret, sample_rate=settings.agent_trace_sample,
                      catalogue_inline_max=settings.agent_catalogue_inline_max)
