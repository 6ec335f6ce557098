"""run_plan's input, as the model wrote it, made the contracts' plan (seed 004, ``specs/agent-mode.md``): a node
written as its script alone has the rest read from its code (``agent/short_nodes.py``, REQ-AGENT-045), an object
node is taken as it says; the plan's goal as its approvals show it. Used by the conversation's agent for a whole
plan and by the early start for each node as it closes (REQ-AGENT-044)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..agent.short_nodes import node_from_code
from ..tools.inputs import PlanNodeInput, RunPlanInput


def raw_node(node: PlanNodeInput | str, earlier: Sequence[Mapping[str, Any]],
             functions: Callable[[], Mapping[str, str]]) -> dict[str, Any]:
    """One node of run_plan's input as the contracts' node, a script unit: a script alone has the rest read from
    it (``agent/short_nodes.py``, REQ-AGENT-045; ``functions``: the catalogue's, asked only then)."""
    if isinstance(node, str):
        return node_from_code(node, len(earlier) + 1, earlier, functions())
    return {"id": node.id, "kind": "script", "dependsOn": list(node.depends_on), "inputs": list(node.inputs),
            "outputs": list(node.outputs), "unit": {"code": node.code, "allowedTools": list(node.tools)}}


def plan_node(raw: Any, earlier: Sequence[Mapping[str, Any]] = (),
              functions: Callable[[], Mapping[str, str]] = dict) -> dict[str, Any]:
    """One node as the model wrote it in run_plan's input, validated as the whole input's nodes are, as the
    contracts' node (a node started before the plan is complete, REQ-AGENT-044). Raises ValidationError."""
    node: PlanNodeInput | str = raw if isinstance(raw, str) and raw else PlanNodeInput.model_validate(raw)
    return raw_node(node, earlier, functions)


def plan_goal(plan: RunPlanInput) -> str:
    """The plan's goal as its approvals show it: the model's, or what its nodes are."""
    return plan.goal.strip() or f"a plan of {len(plan.nodes)} node(s)"
