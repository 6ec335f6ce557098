"""The planner (REQ-AGENT-004/013/015): a plan the model submitted, made ready to run, or refused.

``prepare`` validates the raw plan (``CODE``/``PLAN_INVALID`` with a short readable message), asks the host
whether every tool a node names may be named at all (``DENIED``/``CAPABILITY_DENIED``: nothing runs), fills
each node's budgets from the budgets file (a plan may lower a budget, never raise one above the file's: a
higher value is lowered to the file's), inserts an approval node before every script node that may call a
write tool, and checks ``run.maxNodes`` (approval nodes included: ``BUDGET``/``MAX_NODES``).

Approval insertion is deterministic: for a script node ``n`` whose allowed tools include writes ``w1, w2``
(in the order the node lists them) the planner inserts ``approve_n_1`` and ``approve_n_2`` just before
``n``, each depending on what ``n`` depends on (so a human is asked only once the write's inputs exist),
and adds them to ``n``'s dependencies. Approval nodes the model wrote itself are kept, and never stand in
for the automatic ones. The same raw plan always gives the same Plan, and so the same hash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from .contracts import (
    AgentError,
    ApprovalRequest,
    Budgets,
    BudgetsFile,
    ErrorCode,
    ErrorKind,
    Plan,
    PlanNode,
)
from .host import Host

MAX_ERRORS_SHOWN = 4
APPROVAL_PREFIX = "approve_"


class PlanRefused(Exception):
    """The plan cannot run; ``error`` says why and what to do."""

    def __init__(self, error: AgentError) -> None:
        super().__init__(f"{error.kind.value}/{error.code}: {error.message}")
        self.error = error


def _refuse(message: str) -> PlanRefused:
    return PlanRefused(AgentError(kind=ErrorKind.CODE, code=ErrorCode.PLAN_INVALID, message=message))


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "plan"


def describe(exc: ValidationError) -> str:
    """A validation error as a few readable lines: where, what."""
    problems = []
    for error in exc.errors(include_url=False, include_input=False)[:MAX_ERRORS_SHOWN]:
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        problems.append(f"{_where(tuple(error.get('loc', ())))}: {message}")
    more = exc.error_count() - len(problems)
    return "; ".join(problems) + (f"; and {more} more" if more > 0 else "")


def validate(raw: Mapping[str, Any]) -> Plan:
    """The raw plan as a Plan, or PlanRefused(CODE/PLAN_INVALID)."""
    if not isinstance(raw, Mapping):
        raise _refuse(f"a plan is an object with goal and nodes, not {type(raw).__name__}; submit it again")
    try:
        plan = Plan.model_validate(dict(raw))
    except ValidationError as exc:
        raise _refuse(f"the plan is invalid: {describe(exc)}. Fix these fields and submit the plan again; "
                      "nothing was run") from None
    for node in plan.nodes:
        for key in node.inputs:
            if not key.isidentifier() or key.startswith("_"):
                raise _refuse(f"node {node.id!r} reads the state key {key!r}, which is not a variable name; "
                              "name state keys like Python variables and submit the plan again")
        if node.unit is not None:
            clash = sorted(set(node.unit.params) & set(node.inputs))
            if clash:
                raise _refuse(f"node {node.id!r} has {clash} both as a param and as an input; keep one of "
                              "them and submit the plan again")
        if node.id.startswith(APPROVAL_PREFIX) and node.kind == "script":
            raise _refuse(f"node id {node.id!r}: ids starting with {APPROVAL_PREFIX!r} are kept for the "
                          "approval nodes the planner inserts; rename the node and submit the plan again")
    return plan


def capped(budgets: Budgets, limits: Budgets) -> Budgets:
    """A node's budgets: the file's where the plan left the default, the lower of the two where it set one."""
    values: dict[str, Any] = {}
    for name in Budgets.model_fields:
        limit = getattr(limits, name)
        values[name] = min(getattr(budgets, name), limit) if name in budgets.model_fields_set else limit
    return Budgets(**values)


def _approvals(node: PlanNode, writes: list[str], goal: str) -> list[PlanNode]:
    summary = f"the plan {goal[:200]!r}: its node {node.id!r} may call "
    return [PlanNode(id=f"{APPROVAL_PREFIX}{node.id}_{n}", kind="approval", depends_on=node.depends_on,
                     approval=ApprovalRequest(tool=tool, summary=f"{summary}{tool}, a write"))
            for n, tool in enumerate(writes, 1)]


def prepare(raw: Mapping[str, Any], host: Host, budgets: BudgetsFile) -> Plan:
    """The plan ready to run; raises PlanRefused(error) when it may not run at all."""
    plan = validate(raw)
    for node in plan.nodes:
        tools = node.unit.allowed_tools if node.unit is not None else (
            (node.approval.tool,) if node.approval is not None else ())
        for tool in tools:
            refused = host.check_tool(tool)
            if refused is not None:
                raise PlanRefused(refused.model_copy(update={
                    "message": f"node {node.id!r} names {tool}: {refused.message}. Nothing was run; re-plan "
                               "without this tool"}))
    nodes: list[PlanNode] = []
    for node in plan.nodes:
        if node.unit is None:
            nodes.append(node)
            continue
        unit = node.unit.model_copy(update={"budgets": capped(node.unit.budgets, budgets.node)})
        writes = list(dict.fromkeys(t for t in unit.allowed_tools if host.tool_kind(t) != "read"))
        approvals = _approvals(node, writes, plan.goal)
        nodes.extend(approvals)
        nodes.append(node.model_copy(update={
            "unit": unit, "depends_on": (*node.depends_on, *(a.id for a in approvals))}))
    if len(nodes) > budgets.run.max_nodes:
        raise PlanRefused(AgentError(
            kind=ErrorKind.BUDGET, code=ErrorCode.MAX_NODES,
            message=f"the plan has {len(nodes)} nodes (approval nodes for writes included); a run may have "
                    f"{budgets.run.max_nodes} (run.maxNodes). Nothing was run; do more inside fewer scripts"))
    try:
        return Plan(goal=plan.goal, constraints=plan.constraints, inputs=plan.inputs, nodes=tuple(nodes))
    except ValidationError as exc:  # e.g. an inserted id the model used for its own approval node
        raise _refuse(f"the plan is invalid once approvals are inserted: {describe(exc)}. Submit it again "
                      "without those ids") from None
