"""Telemetry of the agent route (REQ-AGENT-020), through the OpenTelemetry API only.

Without an SDK the API's tracer does nothing and costs nearly nothing; the server (or a test) installs one.
The executor records each node's start and end during the run and ``emit`` writes the spans afterwards,
with those explicit times: one ``agent.run`` span always (goal cut short, plan hash, outcome, totals,
policy decisions), and one ``agent.node`` span per node, its child, only when the run did not end ``ok``
(full trace on errors) or when the run is sampled: ``sampled(plan_hash, rate)`` is deterministic, so the
same plan is sampled or not every time. Every string attribute passes through ``redact`` and is cut to
``MAX_ATTRIBUTE`` characters: no payload, no secret.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from .report import NodeReport, RunReport

TRACER_NAME = "phoenix_lsp.agent"
MAX_ATTRIBUTE = 256
MAX_GOAL = 120


@dataclass(frozen=True)
class NodeTiming:
    """When a node ran, in ns since the epoch (the span's times)."""

    node: str
    start_ns: int
    end_ns: int


def sampled(plan_hash: str, rate: float) -> bool:
    """Whether a successful run of this plan is traced in full: the hash's first 8 hex digits as a fraction
    of 2**32, below `rate`. Deterministic; rate 0 never, rate 1 always."""
    if rate <= 0:
        return False
    if rate >= 1:
        return True
    try:
        fraction = int(plan_hash[:8], 16) / 2**32
    except ValueError:
        return False
    return fraction < rate


def _keep(text: str) -> str:
    return text


def _attributes(values: dict[str, AttributeValue | None], redact: Callable[[str], str]) -> dict[str, AttributeValue]:
    out: dict[str, AttributeValue] = {}
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, str):
            out[key] = redact(value)[:MAX_ATTRIBUTE]
        elif isinstance(value, list | tuple):
            out[key] = [redact(str(item))[:MAX_ATTRIBUTE] for item in value][:32]
        else:
            out[key] = value
    return out


def _node_attributes(node: NodeReport) -> dict[str, AttributeValue | None]:
    error = node.error
    return {
        "agent.node.id": node.id,
        "agent.node.kind": node.kind,
        "agent.node.status": node.status,
        "agent.node.attempts": node.attempts,
        "agent.node.cached": node.cached,
        "agent.error.kind": error.kind.value if error is not None else None,
        "agent.error.code": error.code if error is not None else None,
        "agent.error.message": error.message if error is not None else None,
        "agent.node.reason": node.reason or None,
        "agent.cpu_ms": node.metrics.cpu_ms,
        "agent.wall_ms": node.metrics.wall_ms,
        "agent.mem_mb": node.metrics.mem_mb,
        "agent.tool_calls": node.metrics.tool_calls,
        "agent.tokens": node.metrics.tokens,
        "agent.artifacts": [spill.artifact.handle for spill in node.spilled] or None,
    }


def emit(report: RunReport, timings: Sequence[NodeTiming], *, tracer: Tracer | None = None,
         sample_rate: float = 0.1, redact: Callable[[str], str] | None = None, start_ns: int,
         end_ns: int) -> bool:
    """Write the run's spans; True when node spans were written."""
    redact = redact or _keep
    tracer = tracer or trace.get_tracer(TRACER_NAME)
    full = report.outcome != "ok" or sampled(report.plan_hash, sample_rate)
    totals = report.totals
    run_span = tracer.start_span("agent.run", start_time=start_ns, attributes=_attributes({
        "agent.goal": report.goal[:MAX_GOAL],
        "agent.plan_hash": report.plan_hash,
        "agent.engine": report.engine,
        "agent.outcome": report.outcome,
        "agent.sampled": full,
        "agent.nodes": len(report.nodes),
        "agent.cpu_ms": totals.cpu_ms,
        "agent.wall_ms": totals.wall_ms,
        "agent.approval_wait_ms": totals.approval_wait_ms,
        "agent.tool_calls": totals.tool_calls,
        "agent.nodes_cached": totals.nodes_cached,
        "agent.summary_hash": report.summary_hash,
        "agent.approvals": [f"{d.node} {d.tool} {'granted' if d.granted else 'refused'}" for d in report.approvals],
    }, redact))
    if report.outcome != "ok":
        run_span.set_status(Status(StatusCode.ERROR, report.outcome))
    if full:
        context = trace.set_span_in_context(run_span)
        by_id = {node.id: node for node in report.nodes}
        for timing in timings:
            node = by_id[timing.node]
            span = tracer.start_span("agent.node", context=context, start_time=timing.start_ns,
                                     attributes=_attributes(_node_attributes(node), redact))
            if node.status == "failed":
                span.set_status(Status(StatusCode.ERROR, node.error.code if node.error else "failed"))
            span.end(end_time=timing.end_ns)
    run_span.end(end_time=end_ns)
    return full
