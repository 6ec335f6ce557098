"""MCP tools as host functions: the gate, then the permission hook, then the real records server; and a
script in the real engine calling them."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.agent.agent_config import CapabilityManifest
from phoenix_lsp.agent.capability_gate import CapabilityGate, Kind
from phoenix_lsp.agent.contracts import AgentError, ErrorCode, ErrorKind, ExecutionUnit, ToolFailure
from phoenix_lsp.agent.mcp_hub import McpHub
from phoenix_lsp.agent.mcp_tools import mcp_host_functions

from .conftest import needs_sandbox
from .mcp_helpers import TOKEN, TOKEN_VARIABLE, registry, stdio_entry

GET = "mcp://records/get_record"
UPDATE = "mcp://records/update_record"
MANIFEST = CapabilityManifest.model_validate({
    "allow": ["mcp://records/*", "mcp://records/update_record?fields=status"],
    "deny": ["mcp://records/crash"],
    "rateLimits": {GET: {"calls": 50, "windowS": 60}},
})


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tools") / "records.json"


@pytest.fixture(scope="module")
def hub(data: Path) -> Iterator[McpHub]:
    with McpHub(registry(records=stdio_entry(data)), manifest=MANIFEST, environ={TOKEN_VARIABLE: TOKEN}) as hub:
        yield hub


class Permissions:
    """A stand-in for the server's hook to the core's permission function: refuses writes, records all."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Kind]] = []

    def __call__(self, uri: str, kind: Kind, arguments: Mapping[str, Any]) -> AgentError | None:
        self.asked.append((uri, kind))
        if kind == "write":
            return AgentError(kind=ErrorKind.DENIED, code="APPROVAL_DENIED", message="writes need approval")
        return None


def refusal(function: Any, *args: Any, **kwargs: Any) -> AgentError:
    with pytest.raises(ToolFailure) as caught:
        function(*args, **kwargs)
    return caught.value.error


def test_host_functions_check_the_gate_then_the_permission_then_call(hub: McpHub, data: Path) -> None:
    permissions = Permissions()
    functions = mcp_host_functions(hub, CapabilityGate(MANIFEST), [GET, UPDATE, "mcp://records/crash"],
                                   permit=permissions)
    assert sorted(functions) == ["records_crash", "records_get_record", "records_update_record"]
    assert functions["records_get_record"](id=3)["id"] == 3
    assert permissions.asked == [(GET, "read")]
    positional = refusal(functions["records_get_record"], 3)
    assert (positional.kind, positional.code) == (ErrorKind.TOOL, ErrorCode.INVALID_ARGUMENTS)
    out_of_scope = refusal(functions["records_update_record"], id=1, fields={"owner": "x"})
    assert out_of_scope.code == ErrorCode.CAPABILITY_DENIED and len(permissions.asked) == 1  # never asked
    denied = refusal(functions["records_crash"])
    assert denied.code == ErrorCode.CAPABILITY_DENIED
    write = refusal(functions["records_update_record"], id=1, fields={"status": "done"})
    assert write.code == "APPROVAL_DENIED" and permissions.asked[-1] == (UPDATE, "write")
    assert json.loads(data.read_text())[0]["status"] != "done"  # nothing was written
    missing = refusal(functions["records_get_record"], id=1234)
    assert (missing.kind, missing.code) == (ErrorKind.TOOL, ErrorCode.NOT_FOUND)


@needs_sandbox
def test_a_script_in_the_engine_calls_mcp_tools(hub: McpHub, data: Path) -> None:
    from phoenix_lsp.agent.monty_engine import MontyEngine

    functions = mcp_host_functions(hub, CapabilityGate(MANIFEST), [GET, "mcp://records/list_records", UPDATE])
    engine = MontyEngine(functions)
    code = ("rows = records_list_records()['records']\n"
            "blocked = [r['id'] for r in rows if r['status'] == 'blocked' and r['priority'] >= 4]\n"
            "records_update_record(id=blocked[0], fields={'status': 'open'})\n"
            "[len(rows), blocked, records_get_record(id=blocked[0])['status']]")
    envelope = engine.execute(ExecutionUnit(code=code, allowed_tools=(
        GET, "mcp://records/list_records", UPDATE)))
    assert envelope.ok, envelope.error
    count, blocked, status = envelope.result
    assert count == 50 and blocked and status == "open"
    assert envelope.metrics.tool_calls == 3
    assert {r["id"]: r for r in json.loads(data.read_text())}[blocked[0]]["status"] == "open"
    # out of the manifest's scope: the unit stops with the gate's error, nothing is written
    envelope = engine.execute(ExecutionUnit(code="records_update_record(id=2, fields={'owner': 'x'})",
                                            allowed_tools=(UPDATE,)))
    assert envelope.error is not None and envelope.error.code == ErrorCode.CAPABILITY_DENIED
    assert {r["id"]: r for r in json.loads(data.read_text())}[2]["owner"] != "x"
    # a tool's own failure reaches the envelope typed
    envelope = engine.execute(ExecutionUnit(code="records_get_record(id=999)", allowed_tools=(GET,)))
    assert envelope.error is not None and (envelope.error.kind, envelope.error.code) == (ErrorKind.TOOL,
                                                                                          ErrorCode.NOT_FOUND)
