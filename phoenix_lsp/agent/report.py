"""What a run produced (REQ-AGENT-005/006/018/020): a wire model per node and for the run.

A node's ``envelope`` here is the compacted one: its ``result`` holds only what may enter the model's context
(within the node's ``maxContextBytes``), and each output too large for that is in ``spilled``: an artifact
handle and a description of its shape. The full values went to the run's state and the artifact store.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..protocol.base import Wire
from .contracts import AgentError, ArtifactHandle, Metrics, ResultEnvelope

NodeStatus = Literal["ok", "failed", "skipped", "cancelled"]
Outcome = Literal["ok", "partial", "failed", "cancelled"]


class Spill(Wire):
    """One output kept out of the context: ``key`` is the output's state key (``""``: the whole result,
    ``"output"`` is printed text under the key ``#output``)."""

    key: str
    artifact: ArtifactHandle
    shape: str


class NodeReport(Wire):
    id: str
    kind: Literal["script", "approval"]
    status: NodeStatus
    attempts: int = 0
    cached: bool = False
    envelope: ResultEnvelope | None = None
    error: AgentError | None = None
    reason: str = ""  # why a node was skipped or cancelled
    spilled: tuple[Spill, ...] = ()
    outputs: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    max_context_bytes: int = 4096
    metrics: Metrics = Field(default_factory=Metrics)


class ApprovalDecision(Wire):
    """An approval node's outcome."""

    node: str
    tool: str
    granted: bool
    error: AgentError | None = None


class Totals(Wire):
    """What the run cost (cached nodes cost nothing: they did not run)."""

    cpu_ms: float = 0.0
    wall_ms: float = 0.0
    approval_wait_ms: float = 0.0
    tool_calls: int = 0
    nodes_run: int = 0
    nodes_cached: int = 0


class RunReport(Wire):
    plan_hash: str
    goal: str
    engine: str
    outcome: Outcome
    nodes: tuple[NodeReport, ...]
    totals: Totals = Field(default_factory=Totals)
    approvals: tuple[ApprovalDecision, ...] = ()
    summary: str = ""  # the compact text for the model (reducer.summarize)
    summary_hash: str = ""  # sha256 of summary, UTF-8
