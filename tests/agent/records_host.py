"""A test double of the server's Host (phoenix_lsp.agent.host.Host), backed by an in-memory dataset.

The server's real host gates each call through the core's permission function, asks for approvals and talks
MCP; this one serves a small records dataset from memory, so the orchestrator can be tested with the real
script engine and no server. Every call, approval and version lookup is recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from phoenix_lsp.agent.contracts import AgentError, ErrorCode, ErrorKind, PlanNode, ToolFailure
from phoenix_lsp.agent.host import ToolKind

LIST = "mcp://records/list_records"
GET = "mcp://records/get_record"
UPDATE = "mcp://records/update_record"
FLAKY = "mcp://records/flaky_count"
FLAKY_WRITE = "mcp://records/flaky_touch"
SEND = "mcp://mail/send"
DENIED = "mcp://shell/exec"

READS = frozenset({LIST, GET, FLAKY})
WRITES = frozenset({UPDATE, SEND, FLAKY_WRITE})


def dataset(count: int = 50) -> list[dict[str, Any]]:
    return [{"id": i, "title": f"Record number {i} with a fairly long title", "owner": f"user{i % 5}",
             "status": ("open", "done", "blocked")[i % 3], "priority": i % 4} for i in range(1, count + 1)]


class InMemoryRecordsHost:
    """Host double: tools over a list of records; `approvals` maps a tool to False to refuse its approval."""

    def __init__(self, records: list[dict[str, Any]] | None = None, *, flaky_failures: int = 0,
                 on_call: Callable[[str], None] | None = None, on_approve: Callable[[], None] | None = None) -> None:
        self.records = dataset() if records is None else records
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.asked: list[str] = []
        self.refuse: set[str] = set()
        self.tool_versions = {LIST: "records@1.0", GET: "records@1.0", UPDATE: "records@1.0",
                              FLAKY: "records@1.0", FLAKY_WRITE: "records@1.0", SEND: "mail@2.1"}
        self.flaky_failures = flaky_failures
        self.on_call = on_call
        self.on_approve = on_approve

    # ------------------------------------------------------------------ Host
    def tool_kind(self, tool: str) -> ToolKind:
        return "read" if tool.split("?")[0] in READS else "write"

    def check_tool(self, tool: str) -> AgentError | None:
        if tool.split("?")[0] in READS | WRITES or tool.startswith("mcp://records/"):
            return None  # the manifest allows the records server's tools (an unknown one is a write)
        return AgentError(kind=ErrorKind.DENIED, code=ErrorCode.CAPABILITY_DENIED,
                          message=f"{tool} is not in the capability manifest")

    def call(self, tool: str, arguments: dict[str, Any], timeout_s: float | None = None) -> Any:
        self.calls.append((tool, arguments))
        if self.on_call is not None:
            self.on_call(tool)
        base = tool.split("?")[0]
        if base == LIST:
            status = arguments.get("status")
            return [dict(r) for r in self.records if status is None or r["status"] == status]
        if base == GET:
            for record in self.records:
                if record["id"] == arguments.get("id"):
                    return dict(record)
            raise ToolFailure(AgentError(kind=ErrorKind.TOOL, code=ErrorCode.NOT_FOUND,
                                         message=f"no record {arguments.get('id')}"))
        if base == UPDATE:
            for record in self.records:
                if record["id"] == arguments.get("id"):
                    record.update(arguments.get("fields", {}))
                    return {"updated": record["id"]}
            raise ToolFailure(AgentError(kind=ErrorKind.TOOL, code=ErrorCode.NOT_FOUND,
                                         message=f"no record {arguments.get('id')}"))
        if base in (FLAKY, FLAKY_WRITE):
            if self.flaky_failures > 0:
                self.flaky_failures -= 1
                raise ConnectionError("the records server dropped the connection")
            return len(self.records)
        if base == SEND:
            return {"sent": True}
        raise ToolFailure(AgentError(kind=ErrorKind.DENIED, code=ErrorCode.CAPABILITY_DENIED,
                                     message=f"{tool} is not allowed"))

    def approve(self, node: PlanNode) -> AgentError | None:
        assert node.approval is not None
        self.asked.append(node.id)
        if self.on_approve is not None:
            self.on_approve()
        if node.approval.tool in self.refuse:
            return AgentError(kind=ErrorKind.DENIED, code=ErrorCode.APPROVAL_DENIED,
                              message=f"the user refused {node.approval.tool}")
        return None

    def versions(self, tools: Sequence[str]) -> dict[str, str]:
        return {tool: self.tool_versions.get(tool.split("?")[0], "unknown@0") for tool in tools}


class FakeClock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
