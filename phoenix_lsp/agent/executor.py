"""The executor (REQ-AGENT-005/010/013/018/019): runs a prepared plan and reports what happened.

Nodes run one at a time in ``plan.order()``. Data passes only through the run's state: a script node's unit
gets ``params`` = its own params plus ``{key: state[key] for key in node.inputs}``; its result must be an
object holding every declared output (else ``CODE``/``MISSING_OUTPUT``), and only declared outputs enter the
state. A node whose dependency did not end ``ok`` is ``skipped`` and never runs; independent nodes still
run, so a failure gives a partial result that says what failed.

One engine per run (``make_engine(engine_name, functions)``): its functions are the plan's tools by the
name scripts call them, each a call through ``host.call`` for the URI the running unit allows, counted
against ``run.maxToolCalls``. Approval nodes are decided by ``host.approve``; a refusal fails the node and
so skips the write behind it.

Errors (REQ-AGENT-018): a node is tried once more when it is idempotent (none of its tools writes) and its
error is retryable (``ENGINE``/*, ``TOOL``/``TOOL_ERROR``, ``UNAVAILABLE`` or ``TIMEOUT``); never after
``NOT_FOUND``, ``CODE``, ``DENIED`` or ``BUDGET``, and never a write. The null engine's refusal
(``ENGINE``/``UNAVAILABLE``) is not retried: it is the configuration, not an accident; every node after it
is skipped as "no script engine", and on the null engine no approval is asked (nothing would run behind
it), so a plan on the null engine ends ``failed`` with that one clear reason.

Per run: ``wallClockS`` counts from the start, minus the time spent in ``host.approve`` and in the host's
per-call approvals (``host.approval_wait_s``, when it has one: approvals wait for a human), host calls
included; once it is spent, the remaining nodes fail with ``BUDGET``/``WALL_CLOCK``, a unit never gets more
CPU time than the run has left, no host call starts (and none may take longer than what is left: the unit
stops with ``BUDGET``/``WALL_CLOCK``), and the engine's watchdog ends a unit that runs past it.
``cancelled`` is checked between nodes (the rest are ``cancelled``), by every tool call, which then stops its
unit, and by the engine, which kills a running unit's process tree at once (the node is ``cancelled`` too).
A write node runs only behind approval nodes covering each of its write tools (the planner inserts them; a
plan that skipped the planner fails ``DENIED``/``APPROVAL_DENIED`` there).

Nodes started early (REQ-AGENT-044, ``early.py``): while the model still writes the plan, its read-only
nodes may already run, each stepped here on a run of their own (:func:`open_run`, :func:`step_alone`). The
run of the whole plan then takes such a node's report and outputs instead of running it again (``early``'s
``take``: waiting for it if it still runs), for the nodes before the first approval or write node in its
order; there every early node still running is stopped and none is taken after (what they read may predate
the write).

Over 300 lines: one run of a plan, step by step (approve, unit, check, finish) over one state; split, each part
would take the run's state as an argument.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from opentelemetry.trace import Tracer
from pydantic import ValidationError

from .artifacts import ArtifactStore, ArtifactTooLarge
from .cache import ResultCache, cache_key
from .contracts import (
    AgentError,
    BudgetsFile,
    EngineName,
    ErrorCode,
    ErrorKind,
    ExecutionUnit,
    Metrics,
    Plan,
    PlanNode,
    ResultEnvelope,
    function_name,
)
from .engine import ScriptEngine, make_engine
from .host import CallBudget, Host, host_functions
from .reducer import compact, summarize, summary_hash
from .report import ApprovalDecision, NodeReport, Outcome, RunReport, Totals
from .telemetry import NodeTiming, emit

log = logging.getLogger(__name__)

RETRYABLE_TOOL_CODES = frozenset({ErrorCode.TOOL_ERROR, ErrorCode.UNAVAILABLE, ErrorCode.TIMEOUT})
#: the least CPU time a unit is given when the run's wall clock is nearly spent
MIN_UNIT_CPU_S = 0.1


def retryable(error: AgentError) -> bool:
    """Whether an error may go away on a second try (for an idempotent node only)."""
    if error.kind == ErrorKind.ENGINE:
        return True
    return error.kind == ErrorKind.TOOL and error.code in RETRYABLE_TOOL_CODES


def _error(kind: ErrorKind, code: str, message: str) -> AgentError:
    return AgentError(kind=kind, code=code, message=message)


@dataclass
class _Run:
    """The mutable state of one run."""

    host: Host
    engine_name: EngineName
    budgets: BudgetsFile
    store: ArtifactStore
    cache: ResultCache | None
    cancelled: threading.Event | None
    clock: Callable[[], float]
    state: dict[str, Any]
    calls: CallBudget
    started: float = 0.0
    waited: float = 0.0  # seconds spent in host.approve
    current: ExecutionUnit | None = None
    engine_down: AgentError | None = None
    reports: dict[str, NodeReport] = field(default_factory=dict)
    timings: list[NodeTiming] = field(default_factory=list)
    approvals: list[ApprovalDecision] = field(default_factory=list)
    engine: ScriptEngine | None = None

    def elapsed(self) -> float:
        waited = getattr(self.host, "approval_wait_s", None)
        return self.clock() - self.started - self.waited - (waited() if callable(waited) else 0.0)

    def remaining(self) -> float:
        """Seconds of the run's wall clock left (negative once spent)."""
        return self.budgets.run.wall_clock_s - self.elapsed()

    def resolve(self, name: str) -> str:
        if self.current is None:
            raise RuntimeError(f"{name} called outside a unit")
        return self.current.functions()[name]

    def is_write(self, node: PlanNode) -> bool:
        tools = node.unit.allowed_tools if node.unit is not None else ()
        return any(self.host.tool_kind(tool) != "read" for tool in tools)


class Early(Protocol):
    """Nodes that started before the plan was complete (``early.EarlyStart``)."""

    def take(self, node: PlanNode) -> tuple[NodeReport, dict[str, Any], NodeTiming, int] | None:
        """This node's report, its outputs, its timing and its tool calls when it ran early exactly as planned
        and ended ok (waiting for it if it still runs); else None: the run runs it."""
        ...

    def stop(self) -> None:
        """No early node runs from now on (those running are stopped) and none is taken."""
        ...


def open_run(*, host: Host, engine_name: EngineName, budgets: BudgetsFile, artifacts: ArtifactStore,
             cancelled: threading.Event | None = None, clock: Callable[[], float] = time.monotonic) -> _Run:
    """A run of nodes given one at a time (:func:`step_alone`): the early nodes' (REQ-AGENT-044). Nothing is
    cached across its nodes (each reads afresh, as a read node of the whole run after a write would)."""
    r = _Run(host=host, engine_name=engine_name, budgets=budgets, store=artifacts, cache=None,
             cancelled=cancelled, clock=clock, state={}, calls=CallBudget(budgets.run.max_tool_calls))
    r.started = clock()
    return r


def step_alone(r: _Run, node: PlanNode, pool: Any = None) -> tuple[NodeReport, NodeTiming]:
    """One read-only script node of an :func:`open_run` run, on an engine offering its own tools only."""
    assert node.unit is not None and not r.is_write(node)
    names = sorted({function_name(tool) for tool in node.unit.allowed_tools})
    functions = host_functions(r.host, names, r.resolve, r.calls, r.cancelled, r.remaining,
                               r.budgets.run.wall_clock_s)
    r.engine = make_engine(r.engine_name, functions, cancelled=r.cancelled, remaining=r.remaining, pool=pool)
    started_ns = time.time_ns()
    report = _step(r, node)
    r.reports[node.id] = report
    return report, NodeTiming(node=node.id, start_ns=started_ns, end_ns=max(time.time_ns(), started_ns))


def run(plan: Plan, *, host: Host, engine_name: EngineName, budgets: BudgetsFile, artifacts: ArtifactStore,
        cache: bool = True, cancelled: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic, tracer: Tracer | None = None,
        inputs: Mapping[str, Any] | None = None, sample_rate: float = 0.1,
        redact: Callable[[str], str] | None = None, pool: Any = None, early: Early | None = None) -> RunReport:
    """Run a prepared plan (``planner.prepare``) to its end and report it, with the reducer's summary.

    `inputs` are the plan's input state keys; `tracer`, `sample_rate` and `redact` go to the telemetry
    (``telemetry.emit``: node spans on failure or when sampled, the run span always). ``cache``: keep the
    results of nodes that write nothing for the rest of this run (REQ-AGENT-019); the cache is the run's
    own, never shared with another run, and it is emptied after every node that may write. ``pool``: the
    server's warm engine workers (REQ-AGENT-037), each of which runs one unit and ends. ``early``: the nodes
    started while the model still wrote the plan (REQ-AGENT-044; see the module docstring)."""
    state = dict(inputs or {})
    r = _Run(host=host, engine_name=engine_name, budgets=budgets, store=artifacts,
             cache=ResultCache() if cache else None,
             cancelled=cancelled, clock=clock, state=state, calls=CallBudget(budgets.run.max_tool_calls))
    names = sorted({function_name(tool) for node in plan.nodes if node.unit is not None
                    for tool in node.unit.allowed_tools})
    functions = host_functions(host, names, r.resolve, r.calls, cancelled, r.remaining,
                               budgets.run.wall_clock_s)
    r.engine = make_engine(engine_name, functions, cancelled=cancelled, remaining=r.remaining, pool=pool)
    by_id = {node.id: node for node in plan.nodes}
    taken: set[str] = set()  # the nodes whose early run stands
    run_started_ns = time.time_ns()
    r.started = clock()
    for node_id in plan.order():
        node = by_id[node_id]
        if early is not None and (node.kind == "approval" or r.is_write(node)):
            early.stop()  # nothing read early runs beside a write, nor stands for a read after one
            early = None
        kept = early.take(node) if early is not None else None
        if kept is not None and all(dep in taken for dep in node.depends_on):
            done, outputs, timing, calls = kept
            taken.add(node_id)
            r.state.update(outputs)
            r.reports[node_id] = done
            r.timings.append(timing)
            r.calls.used += calls
            continue
        started_ns = time.time_ns()
        r.reports[node_id] = _step(r, node)
        r.timings.append(NodeTiming(node=node_id, start_ns=started_ns, end_ns=max(time.time_ns(), started_ns)))
    nodes = tuple(r.reports[node.id] for node in plan.nodes)
    report = RunReport(plan_hash=plan.hash(), goal=plan.goal, engine=engine_name, outcome=_outcome(nodes),
                       nodes=nodes, totals=_totals(nodes, r), approvals=tuple(r.approvals))
    summary = summarize(report)
    report = report.model_copy(update={"summary": summary, "summary_hash": summary_hash(summary)})
    try:
        emit(report, r.timings, tracer=tracer, sample_rate=sample_rate, redact=redact,
             start_ns=run_started_ns, end_ns=max(time.time_ns(), run_started_ns))
    except Exception as exc:  # telemetry never costs a run its result
        log.warning("agent: telemetry failed: %s: %s", type(exc).__name__, exc)
    return report


def _base(node: PlanNode, r: _Run) -> dict[str, Any]:
    unit = node.unit
    return {"id": node.id, "kind": node.kind, "outputs": node.outputs,
            "tools": unit.allowed_tools if unit is not None else (
                (node.approval.tool,) if node.approval is not None else ()),
            "max_context_bytes": (unit.budgets.max_context_bytes if unit is not None
                                  else r.budgets.node.max_context_bytes)}


def _stopped(r: _Run) -> bool:
    return r.cancelled is not None and r.cancelled.is_set()


def _step(r: _Run, node: PlanNode) -> NodeReport:
    """One node: skipped, cancelled, out of time, or run."""
    base = _base(node, r)
    if _stopped(r):
        return NodeReport(**base, status="cancelled", reason="the run was cancelled before this node started")
    for dep in node.depends_on:
        upstream = r.reports[dep]
        if upstream.status != "ok":
            how = {"failed": "failed", "skipped": "was skipped", "cancelled": "was cancelled"}[upstream.status]
            return NodeReport(**base, status="skipped", reason=f"it depends on {dep}, which {how}")
    if r.engine_down is not None:
        return NodeReport(**base, status="skipped", reason=f"no script engine: {r.engine_down.message}")
    if node.kind == "approval" and r.engine is not None and r.engine.name == "null":
        return NodeReport(**base, status="skipped", reason="no script engine (PHOENIX_AGENT_ENGINE=null): the "
                          "write it guards cannot run, so nobody was asked")
    if r.elapsed() >= r.budgets.run.wall_clock_s:
        return NodeReport(**base, status="failed", error=_error(
            ErrorKind.BUDGET, ErrorCode.WALL_CLOCK,
            f"the run's {r.budgets.run.wall_clock_s:g} s (run.wallClockS, approvals excluded) were spent "
            "before this node started; it did not run"))
    if node.kind == "approval":
        return _approve(r, node, base)
    return _script(r, node, base)


def _approve(r: _Run, node: PlanNode, base: dict[str, Any]) -> NodeReport:
    tool = node.approval.tool if node.approval is not None else ""
    asked = r.clock()
    try:
        refused = r.host.approve(node)
    except Exception as exc:  # the approval flow broke: not a grant
        refused = _error(ErrorKind.DENIED, ErrorCode.APPROVAL_DENIED,
                         f"the approval could not be obtained ({type(exc).__name__}: {exc}); treated as refused")
    waited = max(0.0, r.clock() - asked)
    r.waited += waited
    r.approvals.append(ApprovalDecision(node=node.id, tool=tool, granted=refused is None, error=refused))
    metrics = Metrics(wall_ms=waited * 1000)
    if refused is None:
        return NodeReport(**base, status="ok", attempts=1, metrics=metrics)
    return NodeReport(**base, status="failed", attempts=1, error=refused, metrics=metrics)


def _unit(r: _Run, node: PlanNode) -> ExecutionUnit | AgentError:
    assert node.unit is not None
    missing = [key for key in node.inputs if key not in r.state]
    if missing:
        return _error(ErrorKind.CODE, ErrorCode.PLAN_INVALID,
                      f"the plan inputs {missing} were not given to the run; give them or re-plan without them")
    params = {**node.unit.params, **{key: r.state[key] for key in node.inputs}}
    left = r.budgets.run.wall_clock_s - r.elapsed()
    budgets = node.unit.budgets
    if left < budgets.cpu_s:
        budgets = budgets.model_copy(update={"cpu_s": max(MIN_UNIT_CPU_S, left)})
    try:
        return ExecutionUnit(engine=r.engine_name, code=node.unit.code, params=params,
                             allowed_tools=node.unit.allowed_tools, budgets=budgets)
    except ValidationError as exc:
        return _error(ErrorKind.CODE, ErrorCode.PLAN_INVALID,
                      f"node {node.id!r} cannot be run: {exc.errors()[0]['msg']}; fix it and re-plan")


def _checked(node: PlanNode, envelope: ResultEnvelope) -> ResultEnvelope:
    """An ok envelope whose result lacks a declared output becomes CODE/MISSING_OUTPUT."""
    if not envelope.ok or not node.outputs:
        return envelope
    result = envelope.result
    missing = list(node.outputs) if not isinstance(result, dict) else [k for k in node.outputs if k not in result]
    if not missing:
        return envelope
    got = f"an object with keys {sorted(result)[:12]}" if isinstance(result, dict) else type(result).__name__
    return ResultEnvelope.failure(
        ErrorKind.CODE, ErrorCode.MISSING_OUTPUT,
        f"node {node.id!r} must end with an object holding its outputs {list(node.outputs)}; it returned {got}, "
        f"without {missing}", envelope.metrics)


def _unapproved(r: _Run, node: PlanNode) -> list[str]:
    """The write tools of a script node that no approval node it depends on covers (a plan that did not go
    through the planner): such a node never runs."""
    assert node.unit is not None
    approved = {r.reports[dep].tools[0] for dep in node.depends_on
                if r.reports[dep].kind == "approval" and r.reports[dep].tools}
    return [tool for tool in node.unit.allowed_tools if r.host.tool_kind(tool) != "read" and tool not in approved]


def _script(r: _Run, node: PlanNode, base: dict[str, Any]) -> NodeReport:
    unapproved = _unapproved(r, node)
    if unapproved:
        return NodeReport(**base, status="failed", error=_error(
            ErrorKind.DENIED, ErrorCode.APPROVAL_DENIED,
            f"node {node.id!r} may call the write tools {unapproved}, and no approval node before it covers "
            "them; nothing was run. Submit the plan through the planner, which inserts them"))
    unit = _unit(r, node)
    if isinstance(unit, AgentError):
        return NodeReport(**base, status="failed", attempts=0, error=unit)
    write = r.is_write(node)
    key = None
    if r.cache is not None and not write:
        try:
            versions = r.host.versions(list(unit.allowed_tools))
        except Exception as exc:  # no versions, no safe key: run it, uncached
            log.warning("agent: no tool versions for node %s (%s); not cached", node.id, exc)
        else:
            key = cache_key(unit, r.engine_name, versions)
            hit = r.cache.get(key)
            if hit is not None:
                return _finish(r, node, base, hit, attempts=0, cached=True)
    assert r.engine is not None
    attempts = 0
    metrics = Metrics()
    while True:
        attempts += 1
        r.current = unit
        try:
            envelope = _checked(node, r.engine.execute(unit))
        except Exception as exc:  # an engine must not raise (ScriptEngine.execute); if it does, it crashed
            envelope = ResultEnvelope.failure(ErrorKind.ENGINE, ErrorCode.PROC_CRASH,
                                              f"the engine failed: {type(exc).__name__}: {exc}")
        finally:
            r.current = None
        metrics = _add(metrics, envelope.metrics)
        error = envelope.error
        if error is None or write or attempts >= 2 or not retryable(error) or r.engine.name == "null":
            break
        if _stopped(r) or r.elapsed() >= r.budgets.run.wall_clock_s:
            break  # no second try past a cancellation or the run's time
    if write and r.cache is not None:
        r.cache.clear()  # what was read before may have changed: no later node is answered from it
    if error is not None and error.kind == ErrorKind.ENGINE and error.code == ErrorCode.UNAVAILABLE:
        r.engine_down = error
    if error is not None and error.code == ErrorCode.CANCELLED and _stopped(r):
        return NodeReport(**base, status="cancelled", attempts=attempts, metrics=metrics,
                          reason="the run was cancelled while this node ran; its tool calls after that were not made")
    if key is not None and r.cache is not None and envelope.ok:
        r.cache.put(key, envelope)
    return _finish(r, node, base, envelope, attempts=attempts, cached=False, metrics=metrics)


def _add(a: Metrics, b: Metrics) -> Metrics:
    mems = [m for m in (a.mem_mb, b.mem_mb) if m is not None]
    return Metrics(cpu_ms=a.cpu_ms + b.cpu_ms, wall_ms=a.wall_ms + b.wall_ms, mem_mb=max(mems) if mems else None,
                   tool_calls=a.tool_calls + b.tool_calls, tokens=a.tokens + b.tokens)


def _finish(r: _Run, node: PlanNode, base: dict[str, Any], envelope: ResultEnvelope, *, attempts: int,
            cached: bool, metrics: Metrics | None = None) -> NodeReport:
    """State updates, compaction into artifacts, and the node's report."""
    metrics = metrics or envelope.metrics
    if not envelope.ok:
        return NodeReport(**base, status="failed", attempts=attempts, cached=cached, envelope=envelope,
                          error=envelope.error, metrics=metrics)
    result = envelope.result
    for key in node.outputs:
        r.state[key] = result[key]
    try:
        inline, printed, spilled = compact(result, node.outputs, envelope.output, base["max_context_bytes"],
                                           r.store)
    except (ArtifactTooLarge, OSError) as exc:
        error = _error(ErrorKind.BUDGET, ErrorCode.OUTPUT_LIMIT,
                       f"node {node.id!r}'s result could not be kept as an artifact: {exc}")
        return NodeReport(**base, status="failed", attempts=attempts, cached=cached, error=error, metrics=metrics)
    compacted = envelope.model_copy(update={
        "result": inline, "output": printed, "artifacts": tuple(s.artifact for s in spilled)})
    return NodeReport(**base, status="ok", attempts=attempts, cached=cached, envelope=compacted, spilled=spilled,
                      metrics=metrics)


def _outcome(nodes: tuple[NodeReport, ...]) -> Outcome:
    if any(node.status == "cancelled" for node in nodes):
        return "cancelled"
    if all(node.status == "ok" for node in nodes):
        return "ok"
    scripts_ok = [node for node in nodes if node.kind == "script" and node.status == "ok"]
    return "partial" if scripts_ok else "failed"


def _totals(nodes: tuple[NodeReport, ...], r: _Run) -> Totals:
    ran = [node for node in nodes if node.kind == "script" and node.attempts > 0 and not node.cached]
    return Totals(cpu_ms=sum(node.metrics.cpu_ms for node in ran),
                  wall_ms=max(0.0, r.clock() - r.started) * 1000,
                  approval_wait_ms=r.waited * 1000,
                  tool_calls=r.calls.used,
                  nodes_run=len(ran) + sum(node.kind == "approval" and node.attempts > 0 for node in nodes),
                  nodes_cached=sum(node.cached for node in nodes))
