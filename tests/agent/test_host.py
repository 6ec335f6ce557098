"""The host functions a script sees: keyword arguments or one object, a clear error otherwise, the run's
tool-call budget, and a cancelled run calling nothing more."""

from __future__ import annotations

import threading

import pytest

from phoenix_lsp.agent.contracts import ErrorKind, ToolFailure
from phoenix_lsp.agent.host import CallBudget, host_functions

from .records_host import GET, InMemoryRecordsHost


@pytest.mark.req("REQ-AGENT-005")
def test_keywords_or_one_object_are_the_arguments_and_anything_else_is_a_tool_error() -> None:
    host = InMemoryRecordsHost()
    get = host_functions(host, ["records_get_record"], lambda _name: GET, CallBudget(10))["records_get_record"]
    assert get(id=3)["id"] == 3 and get({"id": 4})["id"] == 4
    assert host.calls == [(GET, {"id": 3}), (GET, {"id": 4})]
    for args in ((3,), ({"id": 3}, 4), ({1: 2},)):
        with pytest.raises(ToolFailure) as caught:
            get(*args)
        error = caught.value.error
        assert (error.kind, error.code) == (ErrorKind.TOOL, "INVALID_ARGUMENTS")
        assert "records_get_record(id=3)" in error.message and "Call it again with keywords" in error.message
    assert len(host.calls) == 2


@pytest.mark.req("REQ-AGENT-013")
def test_the_run_budget_and_a_cancellation_stop_calls_before_the_host_sees_them() -> None:
    host = InMemoryRecordsHost()
    budget = CallBudget(1)
    get = host_functions(host, ["records_get_record"], lambda _name: GET, budget)["records_get_record"]
    get(id=1)
    with pytest.raises(ToolFailure) as caught:
        get(id=2)
    assert (caught.value.error.kind, caught.value.error.code) == (ErrorKind.BUDGET, "MAX_TOOL_CALLS")
    assert budget.used == 1 and len(host.calls) == 1
    cancelled = threading.Event()
    cancelled.set()
    get = host_functions(host, ["records_get_record"], lambda _name: GET, CallBudget(5), cancelled)[
        "records_get_record"]
    with pytest.raises(ToolFailure) as caught:
        get(id=1)
    assert (caught.value.error.kind, caught.value.error.code) == (ErrorKind.ENGINE, "CANCELLED")
    assert len(host.calls) == 1
