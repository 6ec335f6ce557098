"""A plan's node written as its script alone (REQ-AGENT-045, ``agent/short_nodes.py``): what the server reads
from the code, and that the plan's checks and run treat such a node as the object form's (the real engine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from phoenix_lsp.agent.artifacts import ArtifactStore
from phoenix_lsp.agent.contracts import BudgetsFile, function_name
from phoenix_lsp.agent.executor import run
from phoenix_lsp.agent.planner import PlanRefused, prepare
from phoenix_lsp.agent.short_nodes import MAX_PARSED_BYTES, node_from_code
from phoenix_lsp.server.plan_input import plan_node

from .conftest import needs_sandbox
from .records_host import DENIED, GET, LIST, UPDATE, InMemoryRecordsHost

FUNCTIONS = {function_name(uri): uri for uri in (LIST, GET, UPDATE, DENIED)}


def nodes(*codes: str) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for code in codes:
        out.append(plan_node(code, out, lambda: FUNCTIONS))
    return out


@pytest.mark.req("REQ-AGENT-045")
def test_the_id_tools_inputs_and_outputs_are_read_from_the_code() -> None:
    first, second = nodes("rows = records_list_records()\nids = [r['id'] for r in rows][:3]",
                          "{'first': records_get_record(id=ids[0]), 'n': len(rows)}")
    assert first["id"] == "n1" and first["unit"]["allowedTools"] == [LIST]  # type: ignore[index]
    assert first["outputs"] == ["rows", "ids"] and first["inputs"] == [] and first["dependsOn"] == []
    assert first["unit"]["code"].endswith("\n{'rows': rows, 'ids': ids}")  # type: ignore[index]
    # a dict literal at the end is the node's result as in the object form: its keys are the outputs
    assert second["id"] == "n2" and second["outputs"] == ["first", "n"]
    assert second["inputs"] == ["ids", "rows"] and second["dependsOn"] == ["n1"]
    assert second["unit"]["allowedTools"] == [GET]  # type: ignore[index]


@pytest.mark.req("REQ-AGENT-045")
def test_every_tool_the_script_can_reach_is_named_even_through_an_alias() -> None:
    # a script reaches a tool only by its name (getattr, globals and dunders fail the static check), so a tool
    # held in a variable is still one of its tools: the planner puts an approval before the write
    [node] = nodes("f = records_update_record\nf(id=1, fields={'status': 'done'})")
    assert node["unit"]["allowedTools"] == [UPDATE]  # type: ignore[index]
    plan = prepare({"goal": "g", "nodes": [node]}, InMemoryRecordsHost(), BudgetsFile())
    assert [n.kind for n in plan.nodes] == ["approval", "script"]


@pytest.mark.req("REQ-AGENT-045")
def test_a_denied_tool_named_in_a_script_refuses_the_whole_plan() -> None:
    with pytest.raises(PlanRefused) as refused:
        prepare({"goal": "g", "nodes": nodes("shell_exec(cmd='id')")}, InMemoryRecordsHost(), BudgetsFile())
    assert refused.value.error.code == "CAPABILITY_DENIED"


@pytest.mark.req("REQ-AGENT-045")
@pytest.mark.parametrize(("code", "expected"), [
    ("n = 2\nf'{n} open'", "n = 2\n{'answer': (f'{n} open')}"),
    ("x = 'é'; 'é—' + x  # the reply", "x = 'é'; {'answer': ('é—' + x)}  # the reply"),
    ("(1 +\n 2)\n# end\n", "({'answer': (1 +\n 2)})\n# end\n"),
    ("a = 1\r\nb = a\x0c\r\na + b", "a = 1\nb = a\x0c\n{'answer': (a + b)}"),
])
def test_a_last_expression_becomes_the_answer_wherever_it_sits_in_the_text(code: str, expected: str) -> None:
    [node] = nodes(code)
    assert node["unit"]["code"] == expected  # type: ignore[index]


@pytest.mark.req("REQ-AGENT-045")
@pytest.mark.parametrize("code", ["def f(:\n", "x" * (MAX_PARSED_BYTES + 1), "(" * 10_000 + ")" * 10_000])
def test_code_that_cannot_be_read_is_passed_on_untouched_with_no_tools(code: str) -> None:
    node = node_from_code(code, 1, [], FUNCTIONS)
    assert node["unit"] == {"code": code, "allowedTools": []} and node["outputs"] == []


@needs_sandbox
@pytest.mark.req("REQ-AGENT-045")
def test_a_plan_of_scripts_runs_on_the_engine_and_renders_its_answer(tmp_path: Path) -> None:
    host = InMemoryRecordsHost()
    budgets = BudgetsFile()
    raw = {"goal": "g", "nodes": nodes("rows = records_list_records()",
                                       "done = [r['id'] for r in rows if r['status'] == 'done']\n"
                                       "f\"{len(done)} of {len(rows)} are done\"")}
    report = run(prepare(raw, host, budgets), host=host, engine_name="monty", budgets=budgets,
                 artifacts=ArtifactStore(tmp_path / "artifacts"))
    assert report.outcome == "ok", report.summary
    assert report.nodes[-1].envelope is not None
    assert report.nodes[-1].envelope.result["answer"] == "17 of 50 are done"  # type: ignore[index]
    assert [tool for tool, _ in host.calls] == [LIST]
