"""The helpers of plan scripts (REQ-AGENT-036): first as plain functions (their edge cases, fast), then in the
real sandboxed engine, where they are called like tools but never leave the worker, count in the unit's CPU
budget, respect the size limits at the boundary, and turn a wrong argument into an error the model can act on."""

from __future__ import annotations

from typing import Any

import pytest

from phoenix_lsp.agent import helpers
from phoenix_lsp.agent.contracts import Budgets, ErrorKind, ExecutionUnit
from phoenix_lsp.agent.helpers import HelperError, count, having, index, join, pick, top, where
from phoenix_lsp.agent.monty_engine import MontyEngine

from .conftest import needs_sandbox

ROWS: list[dict[str, Any]] = [
    {"id": 1, "title": "Crash on start", "labels": ["bug"], "state": "open", "created": 3},
    {"id": 2, "title": "Docs", "labels": [], "state": "closed", "created": 5},
    {"id": 3, "labels": ["bug", "ui"], "state": "open"},  # no title, no created
    {"id": 4, "title": "crash in UI", "labels": ["ui"], "state": "open", "created": 3},
]


@pytest.mark.req("REQ-AGENT-036")
def test_each_helper_gives_the_common_shape_and_a_missing_field_is_not_an_error() -> None:
    assert pick(ROWS, "id", "title") == [{"id": 1, "title": "Crash on start"}, {"id": 2, "title": "Docs"},
                                         {"id": 3, "title": None}, {"id": 4, "title": "crash in UI"}]
    assert [r["id"] for r in where(ROWS, labels="bug")] == [1, 3]  # a list field: contains
    assert [r["id"] for r in where(ROWS, state="open", labels="ui")] == [3, 4]  # every field must match
    assert where(ROWS, missing=None) == []  # a missing field does not match, not even None
    assert [r["id"] for r in having(ROWS, "title", "CRASH")] == [1, 4]  # any case; no title: no match
    assert [r["id"] for r in having(ROWS, "labels", "UI")] == [3, 4]  # a list field: any item
    assert count(ROWS, "labels") == {"bug": 2, "ui": 2}  # each item of a list field
    assert list(count(ROWS, "state").items()) == [("open", 3), ("closed", 1)]  # most frequent first
    assert count(ROWS, "created") == {3: 2, None: 1, 5: 1}  # missing counted under None; ties as first seen
    assert index(ROWS, "created") == {3: ROWS[0], 5: ROWS[1]}  # the first row wins; rows without it left out
    teams = [{"login": 1, "team": "core", "id": 99}, {"login": 3, "team": "web"}]
    joined = join(ROWS, teams, "id", "login")
    assert [(r["id"], r.get("team")) for r in joined] == [(1, "core"), (2, None), (3, "web"), (4, None)]
    assert joined[0]["id"] == 1 and "login" in joined[0]  # the row's own values win; the match's others added
    assert [r["id"] for r in top(ROWS, "created", 3)] == [2, 1, 4]  # largest first, ties in their order
    assert [r["id"] for r in top(ROWS, "created", 10)] == [2, 1, 4, 3]  # missing last
    assert top(ROWS, "created", 0) == [] and pick([], "id") == [] and count([], "id") == {}


@pytest.mark.req("REQ-AGENT-036")
@pytest.mark.parametrize(("call", "says"), [
    (lambda: pick({"result": ROWS}, "id"), "pick: rows must be a list of objects, got an object with keys "
                                           "['result'] (pass the list inside it)"),
    (lambda: where("open", state="open"), "where: rows must be a list of objects, got a str"),
    (lambda: count([1, 2], "id"), "count: rows must be a list of objects; item 0 is a int"),
    (lambda: having(ROWS, "title", 3), "having: text must be a string"),
    (lambda: index(ROWS, ["id"]), "index: field must be a field name (a string), got a list of 1"),
    (lambda: join(ROWS, {"a": 1}, "id"), "join: other must be a list of objects"),
    (lambda: top(ROWS, "created", "3"), "top: n must be a whole number >= 0"),
    (lambda: top([{"a": 1}, {"a": "x"}], "a", 2), "top: the values of 'a' cannot be ordered"),
    (lambda: pick(ROWS), "pick: name at least one field"),
    (lambda: where(ROWS), "where: name at least one field=value"),
])
def test_what_a_helper_cannot_work_on_is_a_type_error_saying_what_to_pass(call: Any, says: str) -> None:
    with pytest.raises(HelperError) as raised:
        call()
    assert isinstance(raised.value, TypeError) and says in str(raised.value), str(raised.value)


@pytest.mark.req("REQ-AGENT-036")
def test_helpers_are_one_word_so_no_tool_can_share_a_name_and_run_plan_documents_them() -> None:
    from phoenix_lsp.core.values import Route
    from phoenix_lsp.tools import registry

    assert all("_" not in name for name in helpers.HELPERS)  # a tool's function is server_tool
    definition = next(d for d in registry.definitions(False, "/w", Route.AGENT) if d["name"] == "run_plan")
    for name in helpers.HELPERS:
        assert f" {name}(rows, " in definition["description"]


# ------------------------------------------------------------------------------- in the real engine

@needs_sandbox
@pytest.mark.req("REQ-AGENT-036", "REQ-AGENT-008")
def test_a_script_uses_the_helpers_on_a_tools_answer_in_a_few_lines() -> None:
    calls: list[dict[str, Any]] = []

    def issues_list(**kwargs: Any) -> list[dict[str, Any]]:
        calls.append(kwargs)
        return ROWS

    code = ("rows = issues_list()\n"
            "by_id = index(rows, 'id')\n"
            "{'bugs': pick(where(rows, labels='bug'), 'id'),"
            " 'crash': [r['id'] for r in having(rows, 'title', 'crash')],"
            " 'labels': count(rows, 'labels'), 'newest': top(rows, 'created', 1)[0]['id'], 'title': by_id[4]['title'],"
            " 'teams': pick(join(rows, [{'id': 1, 'team': 'core'}], 'id'), 'team')}")
    envelope = MontyEngine({"issues_list": issues_list}).execute(ExecutionUnit(code=code,
                                                                                allowed_tools=("issues_list",)))
    assert envelope.ok, envelope.error
    assert envelope.result == {"bugs": [{"id": 1}, {"id": 3}], "crash": [1, 4], "labels": {"bug": 2, "ui": 2},
                               "newest": 2, "title": "crash in UI",
                               "teams": [{"team": "core"}, {"team": None}, {"team": None}, {"team": None}]}
    assert calls == [{}] and envelope.metrics.tool_calls == 1  # helpers are not tool calls


@needs_sandbox
@pytest.mark.req("REQ-AGENT-036", "REQ-AGENT-012")
def test_a_wrong_argument_is_an_invalid_arguments_error_unless_the_script_catches_it() -> None:
    engine = MontyEngine({"issues_list": lambda **_: {"result": ROWS}})
    envelope = engine.execute(ExecutionUnit(code="pick(issues_list(), 'id')", allowed_tools=("issues_list",)))
    assert envelope.error is not None
    assert (envelope.error.kind, envelope.error.code) == (ErrorKind.CODE, "INVALID_ARGUMENTS")
    assert "pick: rows must be a list of objects, got an object with keys ['result'] (pass the list inside it)" \
        in envelope.error.message
    caught = "try:\n    top(issues_list())\nexcept TypeError as e:\n    m = str(e)\nm"
    envelope = engine.execute(ExecutionUnit(code=caught, allowed_tools=("issues_list",)))
    assert envelope.ok and envelope.result == ("top: missing 1 required positional argument: 'field'; its call is "
                                               "top(rows, field, n)"), envelope
    # a helper error the script caught does not take the place of a later error of its own
    later = "try:\n    pick('x', 'id')\nexcept TypeError:\n    pass\nundefined_name"
    envelope = engine.execute(ExecutionUnit(code=later))
    assert envelope.error is not None and envelope.error.code == "RUNTIME_ERROR"
    assert "NameError" in envelope.error.message


@needs_sandbox
@pytest.mark.req("REQ-AGENT-036", "REQ-AGENT-013")
def test_helpers_on_huge_inputs_stay_within_the_units_budgets() -> None:
    engine = MontyEngine({})
    big = "rows = [{'id': i, 'k': i % 7, 'tags': ['a', 'b']} for i in range(20000)]\n"
    envelope = engine.execute(ExecutionUnit(
        code=big + "{'n': len(where(rows, k=3)), 'c': count(rows, 'tags'), 't': top(rows, 'id', 1)[0]['id']}",
        budgets=Budgets(cpu_s=20.0, memory_bytes=256 << 20)))
    assert envelope.ok, envelope.error
    assert envelope.result == {"n": 2857, "c": {"a": 20000, "b": 20000}, "t": 19999}
    # time in helpers counts in cpuS (monty's own clock stops while they run): a loop over them ends
    loop = big + "while True:\n    count(rows, 'k')"
    envelope = engine.execute(ExecutionUnit(code=loop, budgets=Budgets(cpu_s=1.0, memory_bytes=256 << 20)))
    assert envelope.error is not None and (envelope.error.kind, envelope.error.code) == (ErrorKind.BUDGET,
                                                                                         "CPU_LIMIT")
    assert "helpers included" in envelope.error.message
    # what a helper is given crosses the boundary: over maxArraySize it ends the unit, even if caught
    over = "rows = [{'id': i} for i in range(30)]\ntry:\n    pick(rows, 'id')\nexcept Exception:\n    0"
    envelope = engine.execute(ExecutionUnit(code=over, budgets=Budgets(max_array_size=20)))
    assert envelope.error is not None and (envelope.error.kind, envelope.error.code) == (ErrorKind.BUDGET,
                                                                                         "ARRAY_LIMIT")
    assert "the arguments of pick" in envelope.error.message
