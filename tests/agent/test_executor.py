"""The executor on the real engine (sandboxed monty workers; each unit costs about 150 ms, so plans here are
small) and on the null engine where the engine is not the point."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phoenix_lsp.agent.artifacts import ArtifactStore
from phoenix_lsp.agent.contracts import BudgetsFile, ErrorKind, ExecutionUnit, Plan, PlanNode, RunBudgets
from phoenix_lsp.agent.executor import run
from phoenix_lsp.agent.host import Host
from phoenix_lsp.agent.planner import prepare
from phoenix_lsp.agent.report import NodeReport, RunReport

from .conftest import needs_sandbox
from .records_host import FLAKY, FLAKY_WRITE, GET, LIST, UPDATE, FakeClock, InMemoryRecordsHost, dataset

READ_ALL = "rows = records_list_records()\n{'records': rows, 'count': len(rows)}"
PICK = "{'ids': [r['id'] for r in records if r['status'] == 'blocked'][:3]}"
CLOSE = "{'done': [records_update_record(id=i, fields={'status': 'done'})['updated'] for i in ids]}"


def node(node_id: str, code: str, tools: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "unit": {"code": code, "allowedTools": list(tools)}, **extra}


def execute(raw: dict[str, Any], host: InMemoryRecordsHost, tmp_path: Path, *, engine: str = "monty",
            budgets: BudgetsFile | None = None, **kwargs: Any) -> RunReport:
    budgets = budgets or BudgetsFile()
    plan = prepare(raw, host, budgets)
    return run(plan, host=host, engine_name=engine, budgets=budgets,  # type: ignore[arg-type]
               artifacts=ArtifactStore(tmp_path / "artifacts"), **kwargs)


def by_id(report: RunReport) -> dict[str, NodeReport]:
    return {n.id: n for n in report.nodes}


def code_of(n: NodeReport) -> tuple[ErrorKind, str] | None:
    return None if n.error is None else (n.error.kind, n.error.code)


CLOSE_BLOCKED = {"goal": "close the first three blocked records", "nodes": [
    node("close", CLOSE, (UPDATE,), dependsOn=["pick"], inputs=["ids"], outputs=["done"]),
    node("read", READ_ALL, (LIST,), outputs=["records", "count"]),
    node("pick", PICK, dependsOn=["read"], inputs=["records"], outputs=["ids"]),
]}


def test_the_test_host_is_a_host() -> None:
    assert isinstance(InMemoryRecordsHost(), Host)


@needs_sandbox
@pytest.mark.req("REQ-AGENT-005", "REQ-AGENT-006", "REQ-AGENT-015", "REQ-AGENT-023")
def test_nodes_run_in_dag_order_through_state_and_large_results_become_artifacts(tmp_path: Path) -> None:
    host = InMemoryRecordsHost()
    report = execute(CLOSE_BLOCKED, host, tmp_path)
    nodes = by_id(report)
    assert report.outcome == "ok" and all(n.status == "ok" for n in report.nodes)
    assert [c[0] for c in host.calls] == [LIST, UPDATE, UPDATE, UPDATE]
    assert host.asked == ["approve_close_1"] and [d.granted for d in report.approvals] == [True]
    assert nodes["pick"].envelope is not None and nodes["pick"].envelope.result == {"ids": [2, 5, 8]}
    assert nodes["close"].envelope is not None and nodes["close"].envelope.result == {"done": [2, 5, 8]}
    assert [r["status"] for r in host.records if r["id"] in (2, 5, 8)] == ["done"] * 3
    assert report.totals.tool_calls == 4 and report.totals.nodes_run == 4

    # the 50 records exceed the node's 4 KB context cap: an artifact, described by shape, not inlined
    read = nodes["read"]
    assert read.envelope is not None and read.envelope.result == {"count": 50}
    [spill] = read.spilled
    assert spill.key == "records" and spill.artifact.type == "table"
    assert spill.shape == "list of 50 objects with keys id, owner, priority, status, title"
    assert spill.artifact.handle in report.summary and "list of 50 objects" in report.summary
    assert "Record number" not in report.summary and len(report.summary.encode()) < 1500
    handle, data = ArtifactStore(tmp_path / "artifacts").get(spill.artifact.handle)
    assert handle == spill.artifact and json.loads(data) == dataset()
    assert '{"ids":[2,5,8]}' in report.summary


@needs_sandbox
@pytest.mark.req("REQ-AGENT-005", "REQ-AGENT-018")
def test_a_missing_output_fails_the_node_and_skips_its_dependents(tmp_path: Path) -> None:
    report = execute({"goal": "g", "nodes": [
        node("a", "{'rows': 1}", outputs=["count"]),
        node("b", "count", dependsOn=["a"], inputs=["count"]),
    ]}, InMemoryRecordsHost(), tmp_path)
    a, b = report.nodes
    assert code_of(a) == (ErrorKind.CODE, "MISSING_OUTPUT") and a.attempts == 1
    assert "['count']" in a.error.message and "rows" in a.error.message  # type: ignore[union-attr]
    assert b.status == "skipped" and b.attempts == 0 and "depends on a, which failed" in b.reason
    assert report.outcome == "failed" and "re-plan" in report.summary


@needs_sandbox
@pytest.mark.req("REQ-AGENT-015", "REQ-AGENT-018")
def test_a_refused_approval_skips_the_write_and_independent_nodes_still_run(tmp_path: Path) -> None:
    host = InMemoryRecordsHost()
    host.refuse.add(UPDATE)
    report = execute({"goal": "g", "nodes": [
        node("write", "records_update_record(id=1, fields={'status': 'x'})", (UPDATE,)),
        node("other", "{'n': 6 * 7}", outputs=["n"]),
    ]}, host, tmp_path)
    nodes = by_id(report)
    assert code_of(nodes["approve_write_1"]) == (ErrorKind.DENIED, "APPROVAL_DENIED")
    assert nodes["write"].status == "skipped" and nodes["write"].attempts == 0
    assert nodes["other"].status == "ok" and report.outcome == "partial"
    assert host.calls == [] and [(d.node, d.granted) for d in report.approvals] == [("approve_write_1", False)]
    assert "do not retry" in report.summary and "which failed" in report.summary


@needs_sandbox
@pytest.mark.req("REQ-AGENT-018", "REQ-AGENT-012")
def test_a_read_is_retried_once_but_not_after_not_found(tmp_path: Path) -> None:
    host = InMemoryRecordsHost(flaky_failures=1)
    report = execute({"goal": "g", "nodes": [
        node("count", "{'n': records_flaky_count()}", (FLAKY,), outputs=["n"]),
        node("missing", "records_get_record(id=999)", (GET,)),
        node("after", "1", dependsOn=["missing"]),
    ]}, host, tmp_path)
    nodes = by_id(report)
    assert nodes["count"].status == "ok" and nodes["count"].attempts == 2
    assert code_of(nodes["missing"]) == (ErrorKind.TOOL, "NOT_FOUND") and nodes["missing"].attempts == 1
    assert nodes["after"].status == "skipped" and report.outcome == "partial"
    assert "not retried" in report.summary


@needs_sandbox
@pytest.mark.req("REQ-AGENT-018")
def test_a_write_is_never_retried(tmp_path: Path) -> None:
    host = InMemoryRecordsHost(flaky_failures=1)
    report = execute({"goal": "g", "nodes": [node("touch", "records_flaky_touch()", (FLAKY_WRITE,))]}, host,
                     tmp_path)
    touch = by_id(report)["touch"]
    assert code_of(touch) == (ErrorKind.TOOL, "TOOL_ERROR") and touch.attempts == 1
    assert [c[0] for c in host.calls] == [FLAKY_WRITE] and report.outcome == "failed"


@needs_sandbox
@pytest.mark.req("REQ-AGENT-013")
def test_the_runs_tool_calls_are_counted_across_nodes(tmp_path: Path) -> None:
    host = InMemoryRecordsHost()
    two = "[records_get_record(id=1), records_get_record(id=2)]"
    other = "[records_get_record(id=3), records_get_record(id=4)]"
    report = execute({"goal": "g", "nodes": [node("a", two, (GET,)), node("b", other, (GET,), dependsOn=["a"])]},
                     host, tmp_path, budgets=BudgetsFile(run=RunBudgets(max_tool_calls=3)))
    a, b = report.nodes
    assert a.status == "ok" and code_of(b) == (ErrorKind.BUDGET, "MAX_TOOL_CALLS") and b.attempts == 1
    assert len(host.calls) == 3 and report.totals.tool_calls == 3
    assert "fewer tool calls" in report.summary


@needs_sandbox
@pytest.mark.req("REQ-AGENT-013")
def test_the_wall_clock_ends_the_remaining_nodes_and_approvals_do_not_count(tmp_path: Path) -> None:
    clock = FakeClock()
    host = InMemoryRecordsHost(on_call=lambda _tool: clock.advance(100),
                               on_approve=lambda: clock.advance(10_000))
    report = execute({"goal": "g", "nodes": [
        node("a", "records_get_record(id=1)['id']", (GET,)),
        node("b", "records_update_record(id=1, fields={})", (UPDATE,), dependsOn=["a"]),
        node("c", "1", dependsOn=["b"]),
    ]}, host, tmp_path, budgets=BudgetsFile(run=RunBudgets(wall_clock_s=150)), clock=clock)
    nodes = by_id(report)
    # a: 100 s; the approval's 10000 s are not counted, so b starts at 100 s with 50 s left; its call takes 100 s,
    # which the run's clock counts (issue 24): b ends out of time, and c, behind it, never runs
    assert [nodes[i].status for i in ("a", "approve_b_1", "b", "c")] == ["ok", "ok", "failed", "skipped"]
    assert code_of(nodes["b"]) == (ErrorKind.BUDGET, "WALL_CLOCK")
    assert report.totals.approval_wait_ms == pytest.approx(10_000_000)
    assert "the run's time is used up" in report.summary


@pytest.mark.req("REQ-AGENT-005")
def test_cancellation_between_nodes_cancels_the_rest(tmp_path: Path) -> None:
    cancelled = threading.Event()
    host = InMemoryRecordsHost(on_approve=cancelled.set)
    report = execute({"goal": "g", "nodes": [
        node("write", "records_update_record(id=1, fields={})", (UPDATE,)),
        node("other", "1"),
    ]}, host, tmp_path, cancelled=cancelled)  # the engine never runs: the approval cancels first
    assert [(n.id, n.status) for n in report.nodes] == [
        ("approve_write_1", "ok"), ("write", "cancelled"), ("other", "cancelled")]
    assert report.outcome == "cancelled" and host.calls == []
    assert "the run was cancelled" in report.summary


@pytest.mark.req("REQ-AGENT-010")
def test_the_null_engine_runs_a_plan_end_to_end_to_a_clear_degraded_result(tmp_path: Path) -> None:
    host = InMemoryRecordsHost()
    report = execute({**CLOSE_BLOCKED, "nodes": [
        node("touch", "records_update_record(id=1)", (UPDATE,)), *CLOSE_BLOCKED["nodes"], node("other", "1")]},
        host, tmp_path, engine="null")
    nodes = by_id(report)
    assert report.engine == "null" and report.outcome == "failed"
    assert code_of(nodes["read"]) == (ErrorKind.ENGINE, "UNAVAILABLE") and nodes["read"].attempts == 1
    assert nodes["pick"].status == "skipped" and nodes["close"].status == "skipped"
    assert nodes["approve_close_1"].status == "skipped" and host.asked == [] and host.calls == []
    assert nodes["other"].status == "skipped" and "no script engine" in nodes["other"].reason
    # an approval whose write cannot run is not asked, even before the engine's first refusal
    assert nodes["approve_touch_1"].status == "skipped" and "nobody was asked" in nodes["approve_touch_1"].reason
    assert "PHOENIX_AGENT_ENGINE" in report.summary and "answer without the agent route" in report.summary


@needs_sandbox
@pytest.mark.req("REQ-AGENT-005")
def test_a_cancellation_during_a_unit_stops_its_next_tool_call(tmp_path: Path) -> None:
    cancelled = threading.Event()
    host = InMemoryRecordsHost(on_call=lambda _tool: cancelled.set())
    report = execute({"goal": "g", "nodes": [
        node("a", "[records_get_record(id=1), records_get_record(id=2)]", (GET,)),
        node("b", "1"),
    ]}, host, tmp_path, cancelled=cancelled)
    assert [(n.id, n.status) for n in report.nodes] == [("a", "cancelled"), ("b", "cancelled")]
    assert len(host.calls) == 1 and report.nodes[0].attempts == 1 and report.outcome == "cancelled"


@pytest.mark.req("REQ-AGENT-015")
def test_a_write_without_an_approval_node_never_runs_even_if_the_planner_was_bypassed(tmp_path: Path) -> None:
    host = InMemoryRecordsHost()
    plan = Plan(goal="g", nodes=(PlanNode(id="w", unit=ExecutionUnit(
        code="records_update_record(id=1, fields={})", allowed_tools=(UPDATE,))),))
    report = run(plan, host=host, engine_name="monty", budgets=BudgetsFile(),
                 artifacts=ArtifactStore(tmp_path))
    [w] = report.nodes
    assert code_of(w) == (ErrorKind.DENIED, "APPROVAL_DENIED") and w.attempts == 0 and host.calls == []
    assert UPDATE in w.error.message  # type: ignore[union-attr]


@st.composite
def approval_dags(draw: st.DrawFn) -> tuple[dict[str, Any], set[str]]:
    count = draw(st.integers(1, 8))
    nodes: list[dict[str, Any]] = []
    for index in range(count):
        deps = draw(st.lists(st.sampled_from(range(index)), unique=True, max_size=index)) if index else []
        nodes.append({"id": f"n{index}", "kind": "approval", "dependsOn": [f"n{d}" for d in deps],
                      "approval": {"tool": f"mcp://records/tool{index}"}})
    refused = draw(st.sets(st.sampled_from([f"mcp://records/tool{index}" for index in range(count)])))
    return {"goal": "g", "nodes": draw(st.permutations(nodes))}, refused


@pytest.mark.req("REQ-AGENT-005", "REQ-AGENT-018")
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(approval_dags())
def test_a_node_runs_only_after_its_dependencies_and_only_if_they_all_succeeded(
        tmp_path: Path, case: tuple[dict[str, Any], set[str]]) -> None:
    raw, refused = case
    host = InMemoryRecordsHost()
    host.refuse = set(refused)
    report = execute(raw, host, tmp_path)  # approval nodes only: no unit runs
    nodes = by_id(report)
    deps = {n["id"]: n["dependsOn"] for n in raw["nodes"]}
    for node_id, report_node in nodes.items():
        ran = node_id in host.asked
        upstream_ok = all(nodes[d].status == "ok" for d in deps[node_id])
        assert ran == upstream_ok
        assert all(host.asked.index(d) < host.asked.index(node_id) for d in deps[node_id] if ran)
        tool = f"mcp://records/tool{node_id[1:]}"
        expected = ("failed" if tool in refused else "ok") if upstream_ok else "skipped"
        assert report_node.status == expected
    assert report.outcome == ("ok" if all(n.status == "ok" for n in report.nodes) else "failed")
