"""The planner: validation with readable errors, the manifest check, budgets from the budgets file, MAX_NODES,
and approval nodes inserted before every write (deterministic ids and hash; property-tested)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phoenix_lsp.agent.contracts import Budgets, BudgetsFile, ErrorKind, Plan, RunBudgets
from phoenix_lsp.agent.host import Host
from phoenix_lsp.agent.planner import PlanRefused, prepare

from .records_host import DENIED, GET, LIST, SEND, UPDATE, InMemoryRecordsHost


def script(node_id: str, code: str = "{}", tools: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "unit": {"code": code, "allowedTools": list(tools)}, **extra}


def refusal(raw: dict[str, Any], budgets: BudgetsFile | None = None) -> PlanRefused:
    with pytest.raises(PlanRefused) as caught:
        prepare(raw, InMemoryRecordsHost(), budgets or BudgetsFile())
    return caught.value


@pytest.mark.req("REQ-AGENT-004")
def test_an_invalid_plan_is_a_code_error_that_says_where_and_what_next() -> None:
    error = refusal({"goal": "g", "nodes": [{"id": "a", "unit": {}}]}).error
    assert (error.kind, error.code) == (ErrorKind.CODE, "PLAN_INVALID")
    assert "nodes[0].unit.code" in error.message and "submit the plan again" in error.message
    assert "nothing was run" in error.message
    cycle = refusal({"goal": "g", "nodes": [script("a", dependsOn=["b"]), script("b", dependsOn=["a"])]}).error
    assert cycle.code == "PLAN_INVALID" and "cycle" in cycle.message
    assert refusal({"goal": "g", "nodes": [script("a", inputs=["x"], unit={"code": "1", "params": {"x": 1}})],
                    "inputs": ["x"]}).error.code == "PLAN_INVALID"
    assert "approve_" in refusal({"goal": "g", "nodes": [script("approve_a_1")]}).error.message


@pytest.mark.req("REQ-AGENT-004")
def test_a_tool_the_manifest_refuses_stops_the_plan_before_anything_runs() -> None:
    host = InMemoryRecordsHost()
    with pytest.raises(PlanRefused) as caught:
        prepare({"goal": "g", "nodes": [script("a", tools=(LIST,)), script("b", tools=(DENIED,))]}, host,
                BudgetsFile())
    error = caught.value.error
    assert (error.kind, error.code) == (ErrorKind.DENIED, "CAPABILITY_DENIED")
    assert "'b'" in error.message and DENIED in error.message and "re-plan" in error.message
    assert host.calls == [] and host.asked == []


@pytest.mark.req("REQ-AGENT-013")
def test_more_nodes_than_the_run_allows_is_a_budget_error_counting_approvals() -> None:
    budgets = BudgetsFile(run=RunBudgets(max_nodes=3))
    nodes = [script("a", tools=(LIST,)), script("b", tools=(UPDATE,), dependsOn=["a"])]
    assert len(prepare({"goal": "g", "nodes": nodes}, InMemoryRecordsHost(), budgets).nodes) == 3
    error = refusal({"goal": "g", "nodes": [*nodes, script("c", tools=(SEND,))]}, budgets).error
    assert (error.kind, error.code) == (ErrorKind.BUDGET, "MAX_NODES")
    assert "5 nodes" in error.message and "3" in error.message


@pytest.mark.req("REQ-AGENT-013")
def test_budgets_come_from_the_file_and_a_plan_may_lower_them_only() -> None:
    file = BudgetsFile(node=Budgets(cpu_s=1.5, max_tool_calls=20, max_context_bytes=2048))
    plan = prepare({"goal": "g", "nodes": [
        script("a"),
        {"id": "b", "unit": {"code": "1", "budgets": {"cpuS": 0.5, "maxToolCalls": 50, "maxContextBytes": 8192}}},
    ]}, InMemoryRecordsHost(), file)
    a, b = (node.unit for node in plan.nodes)
    assert a is not None and b is not None
    assert (a.budgets.cpu_s, a.budgets.max_tool_calls, a.budgets.max_context_bytes) == (1.5, 20, 2048)
    assert (b.budgets.cpu_s, b.budgets.max_tool_calls, b.budgets.max_context_bytes) == (0.5, 20, 2048)


@pytest.mark.req("REQ-AGENT-015")
def test_an_approval_node_is_inserted_before_each_write_with_deterministic_ids() -> None:
    raw = {"goal": "update and notify", "nodes": [
        script("read", tools=(LIST,), outputs=["rows"]),
        script("write", tools=(GET, UPDATE, SEND), dependsOn=["read"], inputs=["rows"]),
        {"id": "mine", "kind": "approval", "approval": {"tool": UPDATE}},
    ]}
    host = InMemoryRecordsHost()
    plan = prepare(raw, host, BudgetsFile())
    assert [n.id for n in plan.nodes] == ["read", "approve_write_1", "approve_write_2", "write", "mine"]
    approvals = {n.id: n for n in plan.nodes if n.kind == "approval"}
    assert approvals["approve_write_1"].approval is not None and approvals["approve_write_1"].approval.tool == UPDATE
    assert approvals["approve_write_2"].approval is not None and approvals["approve_write_2"].approval.tool == SEND
    assert approvals["approve_write_1"].depends_on == ("read",)
    write = plan.nodes[3]
    assert write.depends_on == ("read", "approve_write_1", "approve_write_2")
    assert prepare(raw, host, BudgetsFile()).hash() == plan.hash()
    assert plan.order().index("approve_write_2") < plan.order().index("write")


# ---------------------------------------------------------------------------------- properties

TOOLS = (LIST, GET, UPDATE, SEND)


@st.composite
def raw_plans(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(1, 6))
    nodes = []
    for index in range(count):
        deps = draw(st.lists(st.sampled_from(range(index)), unique=True, max_size=index)) if index else []
        tools = draw(st.lists(st.sampled_from(TOOLS), unique=True, max_size=3))
        nodes.append(script(f"n{index}", tools=tuple(tools), dependsOn=[f"n{d}" for d in deps]))
    order = draw(st.permutations(nodes))
    return {"goal": draw(st.text(max_size=20)), "nodes": list(order)}


def writes_of(host: Host, plan: Plan) -> dict[str, list[str]]:
    return {n.id: [t for t in n.unit.allowed_tools if host.tool_kind(t) == "write"]
            for n in plan.nodes if n.unit is not None}


@pytest.mark.req("REQ-AGENT-015", "REQ-AGENT-021")
@settings(max_examples=150, deadline=None)
@given(raw_plans())
def test_any_plan_gets_an_approval_before_every_write_and_prepare_is_deterministic(raw: dict[str, Any]) -> None:
    host = InMemoryRecordsHost()
    plan = prepare(raw, host, BudgetsFile(run=RunBudgets(max_nodes=200)))
    again = prepare(raw, host, BudgetsFile(run=RunBudgets(max_nodes=200)))
    assert again == plan and again.hash() == plan.hash()
    order = plan.order()
    by_id = {n.id: n for n in plan.nodes}
    for node_id, writes in writes_of(host, plan).items():
        approvals = [d for d in by_id[node_id].depends_on if by_id[d].kind == "approval"]
        tools = [by_id[a].approval.tool for a in approvals]  # type: ignore[union-attr]
        assert sorted(tools) == sorted(writes)
        assert all(order.index(a) < order.index(node_id) for a in approvals)
    assert sum(n.kind == "approval" for n in plan.nodes) == sum(map(len, writes_of(host, plan).values()))
