"""The seed's contracts as wire models (REQ-AGENT-011) and its error taxonomy (REQ-AGENT-012)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from phoenix_lsp.agent.contracts import (
    AgentError,
    ArtifactHandle,
    ErrorKind,
    ExecutionUnit,
    Plan,
    PlanNode,
    ResultEnvelope,
    function_name,
)


def node(node_id: str, deps: tuple[str, ...] = (), inputs: tuple[str, ...] = (),
         outputs: tuple[str, ...] = ()) -> PlanNode:
    return PlanNode(id=node_id, depends_on=deps, inputs=inputs, outputs=outputs, unit=ExecutionUnit(code="1"))


@pytest.mark.req("REQ-AGENT-011")
def test_a_plan_is_a_dag_and_runs_in_dependency_order() -> None:
    plan = Plan(goal="g", inputs=("query",), nodes=(
        node("update", ("filter",), inputs=("matches",)),
        node("read", inputs=("query",), outputs=("records",)),
        node("filter", ("read",), inputs=("records",), outputs=("matches",)),
    ))
    assert plan.order() == ["read", "filter", "update"]


@pytest.mark.req("REQ-AGENT-011")
@pytest.mark.parametrize(("nodes", "why"), [
    ((node("a", ("b",)), node("b", ("a",))), "cycle"),
    ((node("a", ("a",)),), "cycle"),
    ((node("a", ("ghost",)),), "unknown nodes"),
    ((node("a"), node("a")), "used twice"),
    ((node("a", outputs=("x",)), node("b", inputs=("x",))), "no node it depends on writes"),
])
def test_a_plan_that_is_not_a_valid_dag_is_refused(nodes: tuple[PlanNode, ...], why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        Plan(goal="g", nodes=nodes)


@pytest.mark.req("REQ-AGENT-011")
def test_a_node_has_exactly_the_body_its_kind_needs() -> None:
    with pytest.raises(ValidationError, match="needs a unit"):
        PlanNode(id="a")
    with pytest.raises(ValidationError, match="needs an approval request"):
        PlanNode(id="a", kind="approval", unit=ExecutionUnit(code="1"))


@pytest.mark.req("REQ-AGENT-011")
def test_the_plan_hash_depends_on_the_content_only() -> None:
    one = Plan(goal="g", nodes=(node("a", outputs=("x",)), node("b", ("a",), inputs=("x",))))
    again = Plan.model_validate_json(one.model_dump_json(by_alias=True))
    other = Plan(goal="g2", nodes=one.nodes)
    assert one.hash() == again.hash() != other.hash()
    assert len(one.hash()) == 64


@pytest.mark.req("REQ-AGENT-011")
def test_the_wire_format_is_camel_case() -> None:
    unit = ExecutionUnit(code="x", params={"x": 1}, allowed_tools=("get",))
    wire = json.loads(unit.model_dump_json(by_alias=True))
    assert wire["allowedTools"] == ["get"] and wire["budgets"]["cpuS"] == 2.0 and wire["engine"] == "monty"
    envelope = ResultEnvelope(ok=True, result=[1], state_updates={"k": 1},
                              artifacts=(ArtifactHandle(handle="artifact://a/1", type="table", size=3),))
    wire = json.loads(envelope.model_dump_json(by_alias=True))
    assert wire["stateUpdates"] == {"k": 1} and wire["metrics"]["toolCalls"] == 0
    assert ResultEnvelope.model_validate(wire) == envelope


@pytest.mark.req("REQ-AGENT-011")
def test_unit_names_must_be_usable_and_distinct() -> None:
    for bad in ({"params": {"not a name": 1}}, {"allowed_tools": ("_private",)},
                {"params": {"get": 1}, "allowed_tools": ("get",)}):
        with pytest.raises(ValidationError):
            ExecutionUnit(code="1", **bad)  # type: ignore[arg-type]


@pytest.mark.req("REQ-AGENT-012")
def test_errors_are_one_of_five_kinds_with_a_code() -> None:
    assert [k.value for k in ErrorKind] == ["TOOL", "CODE", "DENIED", "BUDGET", "ENGINE"]
    error = AgentError(kind=ErrorKind.BUDGET, code="CPU_LIMIT")
    assert json.loads(error.model_dump_json()) == {"kind": "BUDGET", "code": "CPU_LIMIT", "message": ""}
    with pytest.raises(ValidationError):
        AgentError(kind="OTHER", code="X")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        AgentError(kind=ErrorKind.CODE, code="not upper")
    with pytest.raises(ValidationError, match="ok with no error"):
        ResultEnvelope(ok=True, error=error)
    with pytest.raises(ValidationError, match="ok with no error"):
        ResultEnvelope(ok=False)


def test_tool_uris_are_called_by_their_function_names() -> None:
    unit = ExecutionUnit(code="x", allowed_tools=("mcp://records/list_records", "mcp://records/update-record?fields=status"))
    assert unit.functions() == {"records_list_records": "mcp://records/list_records",
                                "records_update_record": "mcp://records/update-record?fields=status"}
    assert function_name("get") == "get"
    for bad in ("http://x/y", "mcp://records", "mcp://1x/y", "mcp://a/b c"):
        with pytest.raises(ValueError):
            function_name(bad)
    with pytest.raises(ValidationError):  # two tools one function name
        ExecutionUnit(code="x", allowed_tools=("mcp://a/b_c", "mcp://a_b/c"))
