"""The agent route's tools for one conversation (seed 004, ``specs/agent-mode.md``): ``describe_tools`` and
``run_plan``, and the orchestrator's ``Host`` while a plan runs. The server-wide route it is given (the MCP
client, the capability gate, budgets, artifacts, warm workers) is ``agent_route.AgentRoute``:

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
from types import ModuleType
from typing import Any, Literal, Protocol

from ..agent.contracts import AgentError, EngineName, ErrorCode, ErrorKind, PlanNode, ToolFailure, function_name
from ..agent.executor import run
from ..agent.host import Cancellation
from ..agent.mcp_values import compact_schema
from ..agent.planner import PlanRefused, prepare
from ..agent.timing import Stopwatch
from ..core.tools import ToolKind
from ..core.values import ToolUse
from ..tools.inputs import RunPlanInput
from .plan_input import plan_goal, plan_node, raw_node
from .runtime.base import AgentHost

log = logging.getLogger(__name__)

#: the longest one MCP call may take before it is a TOOL/TIMEOUT
CALL_TIMEOUT_S = 60.0



def _mcp_tools() -> ModuleType:
    """The MCP tools, with the MCP SDK under them, loaded by the first tool call rather than in ``initialized``."""
    from ..agent import mcp_tools  # lazy: the MCP SDK takes about 0.7 s to import

    return mcp_tools

class Route(Protocol):
    """What a conversation's agent takes from the server's route (``agent_route.AgentRoute``)."""

    engine: EngineName
    settings: Any  # agent.agent_config.AgentConfig
    unavailable: str | None
    redact: Callable[[str], str]
    sample_rate: float
    hub: Any  # agent.mcp_hub.McpHub
    gate: Any  # agent.capability_gate.CapabilityGate
    artifacts: Any  # agent.artifacts.ArtifactStore
    pool: Any  # agent.warm_pool.WarmPool, or None
    early: Any  # early_plans.EarlyCalls: the plans' nodes started as the model wrote them (REQ-AGENT-044)


class ConversationAgent:
    """The agent route's tools for one conversation, and the orchestrator's Host while a plan runs."""

    def __init__(self, route: Route, runtime: AgentHost) -> None:
        self.route = route
        self.runtime = runtime
        self.loop = asyncio.get_running_loop()
        self.tool_use_id = ""
        self._ids = itertools.count(1)
        self._waited_s = 0.0  # seconds host calls spent waiting for the core's answer (a person, under interactive)
        self._waited_lock = threading.Lock()
        self._summaries: dict[str, str] = {}  # write tool -> its approval node's summary
        self.call_prefix = ""  # before the number in its host calls' ids ("early." for nodes started early)
        self._functions: dict[str, str] | None = None  # catalogue function name -> URI (REQ-AGENT-045)

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

    def functions(self) -> Mapping[str, str]:
        """Each catalogue tool's function name -> its URI, once per agent (blocking: the hub's listing)."""
        if self._functions is None:
            try:
                self._functions = {function_name(t.uri): t.uri for t in self.route.hub.catalogue()}
            except Exception as exc:  # no listing: a script's tool names stay unknown names, refused as such
                log.warning("agent route: the catalogue for a plan's scripts is unavailable: %s", exc)
                return {}
        return self._functions

    def plan_node(self, raw: Any, earlier: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """``plan_node`` with this conversation's catalogue (a node started early, REQ-AGENT-044)."""
        return plan_node(raw, earlier, self.functions)

    def raw_plan(self, plan: RunPlanInput) -> dict[str, Any]:
        """run_plan's input (the model's compact form) as the contracts' Plan (blocking: see ``functions``)."""
        nodes: list[dict[str, Any]] = []
        for node in plan.nodes:
            nodes.append(raw_node(node, nodes, self.functions))
        return {"goal": plan_goal(plan), "constraints": list(plan.constraints), "nodes": nodes}

    async def run_plan(self, plan: RunPlanInput, call: ToolUse) -> tuple[str, bool, str | None]:
        """The plan's compact report for the model, whether it failed, and its rendered answer: with
        ``answer`` set, the last node's ``answer`` string when every node succeeded (REQ-AGENT-039), else None."""
        route = self.route
        self.tool_use_id = call.id
        early = route.early.take(self.runtime.id, call.id)  # its nodes started as it streamed (REQ-AGENT-044)
        timing = Stopwatch("plan")
        try:
            prepared = await asyncio.to_thread(lambda: prepare(self.raw_plan(plan), self, route.settings.budgets))
            timing.mark("prepare")
        except PlanRefused as refused:
            if early is not None:
                early.stop()  # what it started only read; nothing of the plan runs
            error = refused.error
            return route.redact(f"The plan was not run: {error.kind}/{error.code}: {error.message}"), True, None
        except BaseException:
            if early is not None:
                early.stop()
            raise

        cancelled = Cancellation()  # setting it kills a running unit's process tree at once
        if early is not None:
            cancelled.on_cancel(early.stop)  # and the nodes started early
        try:
            report = await asyncio.to_thread(
                run, prepared, host=self, engine_name=route.engine, budgets=route.settings.budgets,
                artifacts=route.artifacts.scoped(self.runtime.id), cancelled=cancelled,
                sample_rate=route.sample_rate, redact=route.redact, pool=route.pool, early=early)
        except asyncio.CancelledError:
            cancelled.set()  # the unit's tree is killed now, the executor stops; a waiting host call was answered no
            raise
        finally:
            if early is not None:
                early.finish()
            timing.mark("run")
            timing.log(log)
        log.info("agent run %s: plan %s, %s, %d nodes, %d tool calls, %.0f ms", call.id, report.plan_hash[:12],
                 report.outcome, len(report.nodes), report.totals.tool_calls, report.totals.wall_ms)
        renders = plan.answer or isinstance(plan.nodes[-1], str)  # a script's last expression (REQ-AGENT-045)
        answer = rendered_answer(report) if renders else None
        return (route.redact(report.summary), report.outcome == "failed",
                None if answer is None else route.redact(answer))

    # ------------------------------------------------------------------------------------------ Host

    def tool_kind(self, tool: str) -> Literal["read", "write"]:
        kind: Literal["read", "write"] = _mcp_tools().tool_kind(self.route.hub, self.route.gate, tool)
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
        limit = CALL_TIMEOUT_S if timeout_s is None else max(0.001, min(CALL_TIMEOUT_S, timeout_s))
        return _mcp_tools().call_tool(self.route.hub, self.route.gate, tool, arguments, timeout_s=limit,
                                      permit=self._permit)

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
        call = ToolUse(f"{self.tool_use_id}.{self.call_prefix}{next(self._ids)}", tool, dict(arguments))
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


#: the longest answer a plan may render (REQ-AGENT-039); a longer one goes to the model as results do
MAX_ANSWER_CHARS = 16_000


def rendered_answer(report: Any) -> str | None:
    """A plan's rendered answer (REQ-AGENT-039): the ``answer`` string of its last node's result, when the run
    succeeded as a whole, that node is a script that ran ok, and the string is non-blank and at most
    ``MAX_ANSWER_CHARS``; else None (the model gets the results and writes the reply itself)."""
    if report.outcome != "ok" or not report.nodes:
        return None
    last = report.nodes[-1]
    envelope = last.envelope
    if last.status != "ok" or envelope is None or not isinstance(envelope.result, dict):
        return None
    answer = envelope.result.get("answer")
    if not isinstance(answer, str) or not answer.strip() or len(answer) > MAX_ANSWER_CHARS:
        return None
    return answer


def _schema_text(schema: Any) -> str:
    return json.dumps(compact_schema(schema), sort_keys=True, separators=(",", ":"))
