"""The agent route's side of its contracts (seed 004, REQ-AGENT-011/012).

The contracts themselves are wire models and live with the protocol (``protocol/contracts.py``, described by
its schema); they are imported here, so that the agent route names them from one place. Here: how a host
function fails one call (``ToolFailure``), and the budgets file's per-run limits.
"""

from __future__ import annotations

from pydantic import Field

from ..protocol.base import Wire
from ..protocol.contracts import (
    ENGINE_NAMES,
    TOOL_URI,
    AgentError,
    ApprovalRequest,
    ArtifactHandle,
    Budgets,
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

__all__ = [
    "ENGINE_NAMES", "TOOL_URI", "AgentError", "ApprovalRequest", "ArtifactHandle", "Budgets", "BudgetsFile",
    "EngineName", "ErrorCode", "ErrorKind", "ExecutionUnit", "Metrics", "Plan", "PlanNode", "ResultEnvelope",
    "RunBudgets", "ToolFailure", "function_name",
]


class ToolFailure(Exception):
    """Raised by a host function to fail one call with a typed error (e.g. ``TOOL``/``NOT_FOUND``,
    ``DENIED``/``APPROVAL_DENIED``); any other exception is ``TOOL``/``TOOL_ERROR``."""

    def __init__(self, error: AgentError) -> None:
        super().__init__(error.message)
        self.error = error


class RunBudgets(Wire):
    """Per-run limits (REQ-AGENT-013)."""

    max_nodes: int = Field(default=16, ge=1, le=200, description="nodes in one plan, approval nodes included")
    wall_clock_s: float = Field(default=300.0, gt=0, le=3600, description="the whole run, approvals excluded")
    max_tool_calls: int = Field(default=500, ge=0, le=100_000, description="host calls in one run")


class BudgetsFile(Wire):
    """The budgets file (``PHOENIX_BUDGETS``): defaults for every node, and the run's limits."""

    node: Budgets = Field(default_factory=Budgets)
    run: RunBudgets = Field(default_factory=RunBudgets)
