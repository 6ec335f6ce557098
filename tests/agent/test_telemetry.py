"""Telemetry through the OpenTelemetry API, read with the SDK's in-memory exporter: the run span always, node
spans when the run failed or is sampled (deterministically by plan hash), every attribute redacted and cut."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from phoenix_lsp.agent.artifacts import ArtifactStore
from phoenix_lsp.agent.contracts import BudgetsFile
from phoenix_lsp.agent.executor import run
from phoenix_lsp.agent.planner import prepare
from phoenix_lsp.agent.report import RunReport
from phoenix_lsp.agent.telemetry import MAX_ATTRIBUTE, sampled

from .records_host import LIST, UPDATE, InMemoryRecordsHost

SECRET = "sk-test-0123456789"


def traced(raw: dict[str, Any], tmp_path: Path, engine: str = "null",
           **kwargs: Any) -> tuple[RunReport, list[ReadableSpan]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    host = InMemoryRecordsHost()
    report = run(prepare(raw, host, BudgetsFile()), host=host, engine_name=engine,  # type: ignore[arg-type]
                 budgets=BudgetsFile(),
                 artifacts=ArtifactStore(tmp_path), tracer=provider.get_tracer("test"),
                 redact=lambda text: text.replace(SECRET, "[REDACTED]"), **kwargs)
    return report, list(exporter.get_finished_spans())


def approval_only(goal: str) -> dict[str, Any]:
    """A plan that succeeds without running a unit (on the monty engine; the null engine asks no approval)."""
    return {"goal": goal, "nodes": [{"id": "ok", "kind": "approval", "approval": {"tool": UPDATE}}]}


@pytest.mark.req("REQ-AGENT-020")
def test_a_failed_run_has_its_node_spans_with_errors_and_everything_is_redacted(tmp_path: Path) -> None:
    goal = f"use token {SECRET} and " + "y" * 2000
    report, spans = traced({"goal": goal, "nodes": [
        {"id": "read", "unit": {"code": "records_list_records()", "allowedTools": [LIST]}},
        {"id": "after", "dependsOn": ["read"], "unit": {"code": "1"}},
    ]}, tmp_path, sample_rate=0.0)
    assert report.outcome == "failed"
    [run_span] = [s for s in spans if s.name == "agent.run"]
    nodes = [s for s in spans if s.name == "agent.node"]
    assert [s.attributes["agent.node.id"] for s in nodes] == ["read", "after"]  # type: ignore[index]
    assert all(s.parent is not None and s.parent.span_id == run_span.context.span_id for s in nodes)
    read = nodes[0].attributes
    assert read is not None and read["agent.error.kind"] == "ENGINE" and read["agent.error.code"] == "UNAVAILABLE"
    assert nodes[0].status.status_code == StatusCode.ERROR
    attributes = run_span.attributes
    assert attributes is not None
    assert attributes["agent.plan_hash"] == report.plan_hash and attributes["agent.outcome"] == "failed"
    for span in spans:
        for value in (span.attributes or {}).values():
            text = str(value)
            assert SECRET not in text and len(text) <= MAX_ATTRIBUTE * 2
    assert "[REDACTED]" in str(attributes["agent.goal"])
    assert all(s.start_time is not None and s.end_time is not None and s.start_time <= s.end_time for s in spans)


@pytest.mark.req("REQ-AGENT-020")
def test_a_successful_run_has_node_spans_only_when_sampled(tmp_path: Path) -> None:
    report, spans = traced(approval_only("g"), tmp_path, "monty", sample_rate=0.0)
    assert report.outcome == "ok" and [s.name for s in spans] == ["agent.run"]
    run_attributes = spans[0].attributes
    assert run_attributes is not None and run_attributes["agent.sampled"] is False
    assert list(run_attributes["agent.approvals"]) == [f"ok {UPDATE} granted"]  # type: ignore[arg-type]
    _, spans = traced(approval_only("g"), tmp_path, "monty", sample_rate=1.0)
    assert sorted(s.name for s in spans) == ["agent.node", "agent.run"]
    # the sample is a function of the plan hash: the same plan is sampled, or not, every time
    rate = 0.5
    assert sampled(report.plan_hash, rate) == sampled(report.plan_hash, rate)
    assert sampled("00000000" + "f" * 56, 0.01) and not sampled("ffffffff" + "0" * 56, 0.99)
