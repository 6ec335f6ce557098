"""Nodes started while the model still writes the plan (REQ-AGENT-044, ``agent/early.py``): which start, when,
and the run of the whole plan taking their results, on the in-memory host (the real engine where a node runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp import limits
from phoenix_lsp.agent.artifacts import ArtifactStore
from phoenix_lsp.agent.contracts import BudgetsFile
from phoenix_lsp.agent.early import EarlyStart
from phoenix_lsp.agent.executor import run
from phoenix_lsp.agent.planner import prepare
from phoenix_lsp.server.plan_input import plan_node

from .conftest import needs_sandbox
from .records_host import GET, LIST, UPDATE, InMemoryRecordsHost

READ = {"id": "a", "code": "rows = records_list_records()\n{'ids': [r['id'] for r in rows][:3]}", "tools": [LIST],
        "outputs": ["ids"]}
WRITE = {"id": "w", "code": "{'done': [records_update_record(id=i, fields={'status': 'done'}) for i in ids]}",
         "tools": [UPDATE], "depends_on": ["a"], "inputs": ["ids"], "outputs": ["done"]}
LATER = {"id": "c", "code": "{'one': records_get_record(id=1)}", "tools": [GET], "outputs": ["one"]}


def early(host: InMemoryRecordsHost, tmp_path: Path, engine: str = "null") -> EarlyStart:
    return EarlyStart(host=host, engine_name=engine, budgets=BudgetsFile(),  # type: ignore[arg-type]
                      artifacts=ArtifactStore(tmp_path / "artifacts"), pool=None, to_node=plan_node)


def pieces(*nodes: dict[str, Any], size: int = 7) -> list[str]:
    """run_plan's input as a model streams it: small pieces cutting through tokens."""
    text = json.dumps({"goal": "g", "nodes": list(nodes)}, separators=(",", ":"))
    return [text[i:i + size] for i in range(0, len(text), size)]


def raw_plan(*nodes: dict[str, Any]) -> dict[str, Any]:
    return {"goal": "g", "nodes": [plan_node(n) for n in nodes]}


@pytest.mark.req("REQ-AGENT-044")
def test_a_node_starts_when_its_object_closes_and_a_write_ends_early_starts(tmp_path: Path) -> None:
    host = InMemoryRecordsHost()
    starter = early(host, tmp_path)
    text = "".join(pieces(READ, WRITE, LATER))
    first_end = text.index("}", text.index('"outputs":["ids"]')) + 1
    starter.feed(text[:first_end - 1])
    assert starter.wait_started() == []  # the first node's object is not closed yet
    starter.feed(text[first_end - 1:first_end])
    assert starter.wait_started() == ["a"]
    starter.feed(text[first_end:])
    assert starter.wait_started() == ["a"]  # the write waits for the whole plan; the read after it too
    starter.stop()


@pytest.mark.req("REQ-AGENT-044")
@pytest.mark.parametrize("text", ['{"goal":"g","nodes":[{]', '{"goal":"g","nodes":[{"id":"approve_x","code":"1"}'
                                  ',{"id":"b","code":"{}"}]}', '{"nodes":[{"id":"a","code":"{}","tools":["mcp://'
                                  'shell/exec"]},{"id":"b","code":"{}"}]}'])
def test_a_node_that_is_not_json_invalid_or_refused_ends_early_starts(tmp_path: Path, text: str) -> None:
    starter = early(InMemoryRecordsHost(), tmp_path)
    for i in range(0, len(text), 5):
        starter.feed(text[i:i + 5])
    assert starter.wait_started() == []
    starter.stop()


@pytest.mark.req("REQ-AGENT-044")
def test_no_more_than_a_tool_input_is_parsed(tmp_path: Path) -> None:
    starter = early(InMemoryRecordsHost(), tmp_path)
    starter.feed('{"goal":"' + "x" * (limits.TOOL_INPUT.max_bytes + 1))
    starter.feed('","nodes":[' + json.dumps(READ) + ",")
    assert starter.wait_started() == []
    starter.stop()


@needs_sandbox
@pytest.mark.req("REQ-AGENT-044")
def test_the_run_takes_the_early_node_instead_of_calling_its_tool_again(tmp_path: Path) -> None:
    host = InMemoryRecordsHost()
    starter = early(host, tmp_path, engine="monty")
    pick = {"id": "b", "code": "{'first': ids[0]}", "depends_on": ["a"], "inputs": ["ids"], "outputs": ["first"]}
    for piece in pieces(READ, pick):
        starter.feed(piece)
    assert starter.wait_started() == ["a", "b"]
    budgets = BudgetsFile()
    report = run(prepare(raw_plan(READ, pick), host, budgets), host=host, engine_name="monty", budgets=budgets,
                 artifacts=ArtifactStore(tmp_path / "artifacts"), early=starter)
    starter.finish()
    assert report.outcome == "ok", report.summary
    assert [tool for tool, _ in host.calls] == [LIST]  # once: the run took the early node's result
    assert report.totals.tool_calls == 1 and '"first":1' in report.summary.replace(" ", "")


@needs_sandbox
@pytest.mark.req("REQ-AGENT-044", "REQ-AGENT-045")
def test_a_script_node_starts_when_its_string_closes_and_the_run_takes_it(tmp_path: Path) -> None:
    host = InMemoryRecordsHost()
    functions = {"records_list_records": LIST, "records_update_record": UPDATE}
    starter = EarlyStart(host=host, engine_name="monty", budgets=BudgetsFile(),
                         artifacts=ArtifactStore(tmp_path / "artifacts"), pool=None,
                         to_node=lambda raw, given: plan_node(raw, given, lambda: functions))
    read = "ids = [r['id'] for r in records_list_records()][:3]"
    write = "records_update_record(id=ids[0], fields={'status': 'done'})\nf'{ids[0]} done'"
    text = json.dumps({"nodes": [read, write]}, separators=(",", ":"))
    first_end = text.index(read) + len(read) + 1  # the string's closing quote
    starter.feed(text[:first_end - 1])
    assert starter.wait_started() == []  # the script is not complete yet
    starter.feed(text[first_end - 1:])
    assert starter.wait_started() == ["n1"]  # the write waits for the whole plan and its approval
    given: list[dict[str, Any]] = []
    for code in (read, write):
        given.append(plan_node(code, given, lambda: functions))
    budgets = BudgetsFile()
    report = run(prepare({"goal": "g", "nodes": given}, host, budgets), host=host, engine_name="monty",
                 budgets=budgets, artifacts=ArtifactStore(tmp_path / "artifacts"), early=starter)
    starter.finish()
    assert report.outcome == "ok", report.summary
    assert [tool for tool, _ in host.calls] == [LIST, UPDATE]  # the read once: the run took the early node
    assert report.nodes[-1].envelope is not None and report.nodes[-1].envelope.result == {"answer": "1 done"}
