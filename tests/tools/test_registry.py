"""The tool registry and the tool input models: definitions generated from one model per tool, validation
with that model, unknown tools, and calls restored from an older store (issue 9)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.core import machine
from phoenix_lsp.core.state import AwaitingApproval, Batch, Idle
from phoenix_lsp.core.tools import MAX_AGENTS_PER_CALL, TOOL_KINDS, ToolKind
from phoenix_lsp.core.values import Mode, ToolResult, ToolUse
from phoenix_lsp.tools import inputs, registry
from phoenix_lsp.tools.registry import REGISTRY, ToolContext

ALL_PARENT = ["read_file", "list_directory", "search_files", "bash", "patch", "request_mode_upgrade", "spawn_agents"]


@pytest.mark.req("REQ-BED-017", "REQ-BED-009")
def test_tool_definitions_are_fixed_per_kind_of_conversation() -> None:
    parent = registry.definitions(False, "/w")
    child = registry.definitions(True, "/w")
    assert [t["name"] for t in parent] == ALL_PARENT
    assert [t["name"] for t in child] == [*ALL_PARENT[:5], "submit_result"]
    # nothing depends on state: equal, byte for byte, on every request (prompt caching relies on it)
    assert json.dumps(registry.definitions(False, "/w")) == json.dumps(parent)
    parent[3]["description"] += " mutated by a caller"  # fresh dicts each time: a caller cannot change them
    assert registry.definitions(False, "/w")[3] != parent[3]


@pytest.mark.req("REQ-SEC-002", "REQ-BED-015", "REQ-BED-008")
def test_control_tool_schemas_are_generated_from_their_models() -> None:
    by_name = {t["name"]: t for t in registry.definitions(False, "/w") + registry.definitions(True, "/w")}
    upgrade = by_name["request_mode_upgrade"]["input_schema"]
    assert upgrade["required"] == ["reason"] and upgrade["additionalProperties"] is False
    tasks = by_name["spawn_agents"]["input_schema"]["properties"]["tasks"]
    assert tasks["minItems"] == 1 and tasks["maxItems"] == MAX_AGENTS_PER_CALL  # the core's limit, written once
    assert by_name["submit_result"]["input_schema"]["required"] == ["result"]
    for definition in by_name.values():  # plain JSON Schema the API takes as is: no titles, no references
        text = json.dumps(definition)
        assert '"title"' not in text and "$ref" not in text and "$defs" not in text
        assert definition["input_schema"] == inputs.input_schema(REGISTRY.tools[definition["name"]].input_model)


@pytest.mark.req("REQ-SEC-003")
def test_the_registry_holds_exactly_the_core_tools_with_the_core_kinds() -> None:
    assert set(REGISTRY.names()) == set(TOOL_KINDS)
    for tool in REGISTRY.tools.values():
        assert tool.kind is TOOL_KINDS[tool.name]
        assert (tool.runner is None) == (tool.kind is ToolKind.CONTROL)
    assert inputs.RUNS == ("default", "slow", "background")


@pytest.mark.req("REQ-SEC-002")
@pytest.mark.parametrize(
    ("name", "tool_input", "expected"),
    [
        ("request_mode_upgrade", {}, "Invalid request_mode_upgrade input: 'reason' is required"),
        ("request_mode_upgrade", {"reason": "  "}, "'reason' must not be empty or only whitespace"),
        ("request_mode_upgrade", {"reason": 3}, "'reason' must be a string, not the number 3"),
        ("spawn_agents", {"tasks": []}, "'tasks' must hold at least 1 item"),
        ("spawn_agents", {"tasks": "do it"}, "'tasks' must be an array"),
        ("spawn_agents", {"tasks": ["a", ""]}, "'tasks[1]' must not be empty"),
        ("spawn_agents", {"tasks": ["t"] * 11}, "'tasks' holds 11 items but at most 10 are allowed; split the work"),
        ("submit_result", {"result": None}, "'result' is required"),
        ("submit_result", {"result": "x", "ok": True}, "unknown field 'ok' (the fields are: result)"),
        ("read_file", {"path": "a", "offset": 0}, "'offset' must be at least 1, not 0"),
        ("read_file", {"path": "a", "limit": "3"}, "'limit' must be a whole number, not the string \"3\""),
    ],
)
def test_check_names_the_tool_the_field_and_what_is_wrong(name: str, tool_input: Any, expected: str) -> None:
    message = registry.check(name, tool_input)
    assert message is not None and expected in message
    assert message.startswith(f"Invalid {name} input: ") and message.endswith("send it again with its input fixed.")


def test_check_accepts_valid_input_and_leaves_unknown_names_to_the_core() -> None:
    assert registry.check("bash", {"command": "ls", "run": "slow"}) is None
    assert registry.check("bash", {"command": "ls", "run": None}) is None  # null means left out
    assert registry.check("spawn_agents", {"tasks": ["a", "b"]}) is None
    assert registry.check("format_disk", {"x": 1}) is None  # the core refuses it, listing the tools


@pytest.mark.req("REQ-SEC-002")
def test_invalid_json_gets_the_not_valid_json_error_for_every_tool() -> None:
    for name in REGISTRY.names():
        message = registry.check(name, {}, "Expecting ',' delimiter: line 1 column 18 (char 17)")
        assert message == (
            f"Invalid {name} input: your input was not valid JSON: Expecting ',' delimiter: line 1 column 18 "
            "(char 17). The call was not run; send the call again with a valid JSON object as its input."
        )


def _context(tmp_path: Path) -> ToolContext:
    return ToolContext(working_directory=tmp_path, mode=Mode.UNRESTRICTED, conversation_id="c")


@pytest.mark.req("REQ-SEC-002")
async def test_run_an_unknown_tool_names_the_tools_that_exist(tmp_path: Path) -> None:
    done = await registry.run(ToolUse("t1", "format_disk", {}), _context(tmp_path))
    assert done.is_error
    assert done.output.startswith("Unknown tool 'format_disk': it is not a tool.")
    assert "read_file, list_directory, search_files, bash, patch, describe_tools, run_plan, " in done.output
    control = await registry.run(ToolUse("t2", "spawn_agents", {"tasks": ["a"]}), _context(tmp_path))
    assert control.is_error and "carried out by the conversation itself" in control.output


async def test_run_validates_with_the_model_and_runs_the_tool(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    done = await registry.run(ToolUse("t1", "read_file", {"path": "a.txt"}), _context(tmp_path))
    assert not done.is_error and "hello" in done.output
    bad = await registry.run(ToolUse("t2", "read_file", {"path": "a.txt", "line": 1}), _context(tmp_path))
    assert bad.is_error and "unknown field 'line' (the fields are: path, offset, limit)" in bad.output
    ran = await registry.run(ToolUse("t3", "bash", {"command": "echo $((6*7))", "run": "slow"}), _context(tmp_path))
    assert not ran.is_error and ran.output.strip() == "42"
    told = await registry.run(ToolUse("t4", "bash", {}, input_error="not valid JSON"), _context(tmp_path))
    assert told.is_error and told.output == "not valid JSON"


@pytest.mark.req("REQ-BASH-005", "REQ-BED-007")
def test_a_restored_pending_bash_call_reads_the_old_mode_field_as_run() -> None:
    old = ToolUse("t2", "bash", {"command": "make", "mode": "slow"})
    done = ToolUse("t1", "bash", {"command": "ls", "mode": "background"})  # answered: history, left alone
    state = machine.new_conversation("c", model="m", working_directory="/w", sandbox=False)
    pending = AwaitingApproval(Batch((done, old), (ToolResult("t1", "ok"),)), "t2")
    restored = registry.restore_pending(replace(state, status=pending))
    assert isinstance(restored.status, AwaitingApproval)
    assert restored.status.batch.calls == (done, ToolUse("t2", "bash", {"command": "make", "run": "slow"}))
    assert restored.status.batch.results == pending.batch.results and restored.status.tool_use_id == "t2"
    assert registry.check("bash", restored.status.batch.current.input) is None
    both = ToolUse("t3", "bash", {"command": "x", "mode": "slow", "run": "background"})  # today's name wins
    assert REGISTRY.restore_call(both).input == {"command": "x", "run": "background"}
    resting = machine.new_conversation("d", model="m", working_directory="/w", sandbox=False)
    assert isinstance(resting.status, Idle) and registry.restore_pending(resting) is resting
