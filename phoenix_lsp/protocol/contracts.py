"""The agent route's contracts (seed 004, REQ-AGENT-011/012): what the orchestrator and an engine exchange.

They are wire models (camelCase JSON, frozen, see ``base.py``): the engine worker receives an ``ExecutionUnit``
and answers with a ``ResultEnvelope`` as JSON, and the same values will travel in ``phoenix/*`` events once the
orchestrator exists; the protocol's schema (``schema.py``) describes them. Nothing here runs code. The agent
route's own side of them (``agent/contracts.py``) imports them from here.
"""

from __future__ import annotations

import hashlib
import json
import re
from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, model_validator

from .base import Wire

ENGINE_NAMES = ("monty", "null")

#: a tool's URI (REQ-AGENT-014): ``mcp://<server>/<tool>``, optionally with a scope query
#: (``mcp://records/update_record?fields=status``); ``<server>`` is the server's key in the MCP registry
TOOL_URI = re.compile(r"^mcp://(?P<server>[A-Za-z][A-Za-z0-9_-]{0,63})/(?P<tool>[A-Za-z][A-Za-z0-9_.-]{0,127})"
                      r"(?:\?(?P<scope>[^\s#]*))?$")


def function_name(tool: str) -> str:
    """The name a script calls ``tool`` by: an identifier as is; ``mcp://records/list_records`` (any scope
    dropped) as ``records_list_records``. Raises ValueError for anything else."""
    if tool.isidentifier():
        return tool
    match = TOOL_URI.match(tool)
    if match is None:
        raise ValueError(f"{tool!r} is neither a tool URI (mcp://<server>/<tool>) nor a function name")
    return re.sub(r"[^A-Za-z0-9_]", "_", f"{match['server']}_{match['tool']}")
EngineName = Literal["monty", "null"]


class ErrorKind(StrEnum):
    """The five kinds of the seed's error taxonomy (REQ-AGENT-012)."""

    TOOL = "TOOL"  # a host function (later: an MCP tool) failed
    CODE = "CODE"  # the script is wrong: refused by the static check, or raised
    DENIED = "DENIED"  # the script asked for something it may not have
    BUDGET = "BUDGET"  # a per-unit limit was reached
    ENGINE = "ENGINE"  # the engine itself failed: crash, watchdog, protocol, disabled


class ErrorCode:
    """The codes used so far, by kind. Open-ended: REQ-AGENT-012 lists examples, not a closed set."""

    # CODE
    STATIC_CHECK = "STATIC_CHECK"  # a forbidden construct, or a syntax error, found before running
    CODE_SIZE = "CODE_SIZE"  # the script is longer than maxCodeBytes; refused before running
    RUNTIME_ERROR = "RUNTIME_ERROR"
    PLAN_INVALID = "PLAN_INVALID"  # the submitted plan does not validate; nothing ran
    MISSING_OUTPUT = "MISSING_OUTPUT"  # a script's result lacks a declared output key
    # TOOL
    TOOL_ERROR = "TOOL_ERROR"
    NOT_FOUND = "NOT_FOUND"  # no such tool, or the tool says what it was asked for does not exist
    INVALID_ARGUMENTS = "INVALID_ARGUMENTS"  # the arguments do not fit the tool's input schema
    RESULT_TOO_LARGE = "RESULT_TOO_LARGE"  # the tool answered more than the MCP client accepts
    # (TOOL also uses UNAVAILABLE and TIMEOUT, below: the MCP server is down or did not answer in time)
    # DENIED
    CAPABILITY_DENIED = "CAPABILITY_DENIED"  # the capability manifest does not allow it (or out of scope)
    MODE_DENIED = "MODE_DENIED"  # a write, refused by the conversation's mode (Restricted)
    RATE_LIMITED = "RATE_LIMITED"  # the manifest's rate limit for the tool
    APPROVAL_DENIED = "APPROVAL_DENIED"
    # BUDGET
    CPU_LIMIT = "CPU_LIMIT"
    MEM_LIMIT = "MEM_LIMIT"
    DEPTH_LIMIT = "DEPTH_LIMIT"
    OUTPUT_LIMIT = "OUTPUT_LIMIT"
    MAX_TOOL_CALLS = "MAX_TOOL_CALLS"
    STRING_LIMIT = "STRING_LIMIT"  # a string longer than maxStringLength crossed the engine's boundary
    ARRAY_LIMIT = "ARRAY_LIMIT"  # a list or object larger than maxArraySize crossed the engine's boundary
    MAX_NODES = "MAX_NODES"  # per run
    WALL_CLOCK = "WALL_CLOCK"  # per run
    # ENGINE
    PROC_CRASH = "PROC_CRASH"
    TIMEOUT = "TIMEOUT"
    PROTOCOL = "PROTOCOL"
    UNAVAILABLE = "UNAVAILABLE"
    CANCELLED = "CANCELLED"  # the run was cancelled while the unit ran (it is reported as cancelled)
    # TOOL (a tool that answers too late) and ENGINE (the watchdog) share TIMEOUT


def _codes() -> str:
    return ", ".join(value for name, value in vars(ErrorCode).items() if name.isupper())


class AgentError(Wire):
    """One typed failure: ``{kind, code, message}``."""

    kind: ErrorKind
    code: str = Field(min_length=1, pattern=r"^[A-Z][A-Z0-9_]*$", description=(
        f"open-ended; the codes in use: {_codes()}. DENIED codes: CAPABILITY_DENIED (the capability manifest "
        "does not allow it), MODE_DENIED (a write, refused by the conversation's mode: Restricted), "
        "APPROVAL_DENIED (the user refused it), RATE_LIMITED (the manifest's rate limit)"))
    message: str = ""


class Budgets(Wire):
    """Per-unit limits (REQ-AGENT-013). The defaults suit a short data-shaping script."""

    cpu_s: float = Field(default=2.0, gt=0, le=600, description="execution time of the script (host calls excluded)")
    memory_bytes: int = Field(default=64 << 20, ge=1 << 20, le=4 << 30, description="the interpreter's heap")
    max_depth: int = Field(default=200, ge=10, le=1000, description="function call depth")
    max_output_bytes: int = Field(default=64 * 1024, ge=256, le=16 << 20, description="printed text + result JSON")
    max_code_bytes: int = Field(default=16 * 1024, ge=64, le=1 << 20, description="script size, UTF-8")
    max_tool_calls: int = Field(default=100, ge=0, le=10_000, description="host calls per unit")
    max_string_length: int = Field(default=1 << 20, ge=64, le=64 << 20, description=(
        "characters in one string of the unit's params, a host call's arguments or answer, or the result "
        "(inside the script the memory limit bounds strings)"))
    max_array_size: int = Field(default=100_000, ge=16, le=10_000_000, description=(
        "items in one list or object of the unit's params, a host call's arguments or answer, or the result "
        "(inside the script the memory limit bounds collections)"))
    max_context_bytes: int = Field(default=4096, ge=256, le=1 << 20, description=(
        "the node's token cap, in bytes: what of its result may enter the model's context; the rest becomes "
        "an artifact (REQ-AGENT-006)"))


class ExecutionUnit(Wire):
    """One script to run: its code, its inputs (``params``, bound as variables), the tools it may call
    (``allowedTools``: tool URIs, or plain function names for engine-level tests; a script calls each by
    ``function_name``) and its budgets."""

    engine: EngineName = "monty"
    code: str
    params: dict[str, Any] = Field(default_factory=dict)
    allowed_tools: tuple[str, ...] = ()
    budgets: Budgets = Field(default_factory=Budgets)

    @model_validator(mode="after")
    def _names(self) -> ExecutionUnit:
        functions = [function_name(tool) for tool in self.allowed_tools]
        for name in (*self.params, *functions):
            if not name.isidentifier() or name.startswith("_"):
                raise ValueError(f"{name!r} is not a usable variable or function name")
        if len(set(functions)) != len(functions):
            raise ValueError(f"two allowed tools share a function name: {sorted(functions)}")
        clash = set(self.params) & set(functions)
        if clash:
            raise ValueError(f"{sorted(clash)} named both as a param and as a tool")
        return self

    def functions(self) -> dict[str, str]:
        """function name -> the allowed tool it calls."""
        return {function_name(tool): tool for tool in self.allowed_tools}


class ArtifactHandle(Wire):
    """A large result kept out of the model's context (REQ-AGENT-023)."""

    handle: str = Field(pattern=r"^artifact://\S+$")
    type: str = Field(min_length=1)  # table | text | json | ...
    size: int = Field(ge=0)


class Metrics(Wire):
    """What one unit cost."""

    cpu_ms: float = 0.0  # execution time inside the engine (host calls excluded)
    wall_ms: float = 0.0  # the whole execute, process start included
    mem_mb: float | None = None  # the worker's peak RSS, when known
    tool_calls: int = 0
    tokens: int = 0


class ResultEnvelope(Wire):
    """The answer to one unit: ``ok`` with a ``result`` (the script's last expression, JSON), or an ``error``."""

    ok: bool
    result: Any = None
    error: AgentError | None = None
    output: str = ""  # what the script printed
    summary: str = ""
    artifacts: tuple[ArtifactHandle, ...] = ()
    state_updates: dict[str, Any] = Field(default_factory=dict)
    metrics: Metrics = Field(default_factory=Metrics)

    @model_validator(mode="after")
    def _consistent(self) -> ResultEnvelope:
        if self.ok == (self.error is not None):
            raise ValueError("an envelope is ok with no error, or not ok with an error")
        return self

    @classmethod
    def failure(cls, kind: ErrorKind, code: str, message: str, metrics: Metrics | None = None) -> ResultEnvelope:
        return cls(ok=False, error=AgentError(kind=kind, code=code, message=message), metrics=metrics or Metrics())


class ApprovalRequest(Wire):
    """What an approval node asks for (decided by the approval flow, REQ-AGENT-015; not built yet)."""

    tool: str = Field(min_length=1)
    summary: str = ""


class PlanNode(Wire):
    """One node: a script (``unit``) or an approval, with the state keys it reads and writes."""

    id: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$")
    kind: Literal["script", "approval"] = "script"
    depends_on: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()  # state keys this node reads
    outputs: tuple[str, ...] = ()  # state keys this node writes
    unit: ExecutionUnit | None = None
    approval: ApprovalRequest | None = None

    @model_validator(mode="after")
    def _body(self) -> PlanNode:
        if self.kind == "script" and (self.unit is None or self.approval is not None):
            raise ValueError(f"script node {self.id!r} needs a unit and no approval")
        if self.kind == "approval" and (self.approval is None or self.unit is not None):
            raise ValueError(f"approval node {self.id!r} needs an approval request and no unit")
        return self


class Plan(Wire):
    """A small DAG (REQ-AGENT-004/011). Validated: unique ids, dependencies on existing nodes, no cycle, and
    every input is the output of a node this one depends on (directly or not) or a plan input."""

    goal: str
    constraints: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()  # state keys given before the first node runs
    nodes: tuple[PlanNode, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _dag(self) -> Plan:
        ids = [node.id for node in self.nodes]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"node ids used twice: {duplicates}")
        by_id = {node.id: node for node in self.nodes}
        for node in self.nodes:
            unknown = [d for d in node.depends_on if d not in by_id]
            if unknown:
                raise ValueError(f"node {node.id!r} depends on unknown nodes {unknown}")
        self.order()  # raises on a cycle
        for node in self.nodes:
            visible = set(self.inputs)
            for ancestor in self._ancestors(node.id, by_id):
                visible.update(by_id[ancestor].outputs)
            missing = [key for key in node.inputs if key not in visible]
            if missing:
                raise ValueError(f"node {node.id!r} reads {missing}, which no node it depends on writes")
        return self

    @staticmethod
    def _ancestors(node_id: str, by_id: dict[str, PlanNode]) -> set[str]:
        seen: set[str] = set()
        stack = list(by_id[node_id].depends_on)
        while stack:
            current = stack.pop()
            if current not in seen:
                seen.add(current)
                stack.extend(by_id[current].depends_on)
        return seen

    def order(self) -> list[str]:
        """Node ids in dependency order (Kahn; ties kept in plan order). Raises ValueError on a cycle."""
        remaining = {node.id: set(node.depends_on) for node in self.nodes}
        done: list[str] = []
        while remaining:
            ready = [i for i, deps in remaining.items() if not deps - set(done)]
            if not ready:
                raise ValueError(f"the plan has a cycle among {sorted(remaining)}")
            for i in ready:
                del remaining[i]
            done.extend(ready)
        return done

    def hash(self) -> str:
        """sha256 of the plan's canonical JSON (sorted keys, camelCase): the same plan, the same hash."""
        text = json.dumps(self.model_dump(mode="json", by_alias=True), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()
