"""The pydantic-monty engine, for real: a sandboxed worker per unit, host calls over JSON, per-unit budgets
(acceptance 8), a frozen clock and seeded randomness, and no file or environment access even when the static
check is switched off (the run-time line behind it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.agent.contracts import Budgets, ErrorKind, ExecutionUnit, ResultEnvelope
from phoenix_lsp.agent.engine import ScriptEngine
from phoenix_lsp.agent.monty_engine import MontyEngine, is_worker
from phoenix_lsp.sandbox import seccomp

from .conftest import Recorder, needs_sandbox

pytestmark = needs_sandbox

THREE_CALLS = ("rows = [get_record(i) for i in range(3)]\nprint(len(rows))\n"
               "[r['id'] for r in rows if r['status'] == 'open']")


def kind_code(envelope: ResultEnvelope) -> tuple[ErrorKind, str] | None:
    return None if envelope.error is None else (envelope.error.kind, envelope.error.code)


@pytest.mark.req("REQ-AGENT-007", "REQ-AGENT-008")
def test_a_script_calls_its_host_functions_and_returns_json() -> None:
    recorder = Recorder()
    engine = MontyEngine(recorder.functions())
    assert isinstance(engine, ScriptEngine) and engine.capabilities() == ["fail", "get_record"]
    assert engine.health().ok
    envelope = engine.execute(ExecutionUnit(code=THREE_CALLS, allowed_tools=("get_record",)))
    assert envelope.ok, envelope.error
    assert envelope.result == [1] and envelope.output == "3\n"
    assert recorder.calls == [("get_record", (0,)), ("get_record", (1,)), ("get_record", (2,))]
    assert envelope.metrics.tool_calls == 3 and envelope.metrics.wall_ms > 0


@pytest.mark.req("REQ-AGENT-008")
def test_a_tool_uri_is_called_by_its_function_name() -> None:
    calls: list[dict[str, Any]] = []
    engine = MontyEngine({"records_get_record": lambda **kwargs: calls.append(kwargs) or {"id": kwargs["id"]}})
    envelope = engine.execute(ExecutionUnit(code="records_get_record(id=3)['id']",
                                            allowed_tools=("mcp://records/get_record?fields=id",)))
    assert envelope.ok, envelope.error
    assert envelope.result == 3 and calls == [{"id": 3}]


@pytest.mark.req("REQ-AGENT-008")
def test_params_are_variables_and_only_allowed_tools_exist() -> None:
    recorder = Recorder()
    engine = MontyEngine(recorder.functions())
    envelope = engine.execute(ExecutionUnit(code="limit * 2", params={"limit": 21}))
    assert envelope.result == 42
    # fail() is offered by the engine but not allowed to this unit: the script cannot even see it
    envelope = engine.execute(ExecutionUnit(code="fail()", allowed_tools=("get_record",)))
    assert kind_code(envelope) == (ErrorKind.CODE, "RUNTIME_ERROR") and "NameError" in envelope.error.message  # type: ignore[union-attr]
    assert recorder.calls == []


@pytest.mark.req("REQ-AGENT-012")
def test_a_failing_host_function_is_a_tool_error_unless_the_script_handles_it() -> None:
    recorder = Recorder()
    engine = MontyEngine(recorder.functions())
    envelope = engine.execute(ExecutionUnit(code="fail()", allowed_tools=("fail",)))
    assert kind_code(envelope) == (ErrorKind.TOOL, "TOOL_ERROR") and "no such record" in envelope.error.message  # type: ignore[union-attr]
    handled = "try:\n    fail()\nexcept Exception:\n    x = 'handled'\nx"
    assert engine.execute(ExecutionUnit(code=handled, allowed_tools=("fail",))).result == "handled"


@pytest.mark.req("REQ-AGENT-013")
def test_an_infinite_loop_ends_with_a_cpu_budget_error() -> None:
    envelope = MontyEngine({}).execute(ExecutionUnit(code="while True:\n    pass", budgets=Budgets(cpu_s=0.3)))
    assert kind_code(envelope) == (ErrorKind.BUDGET, "CPU_LIMIT")
    assert envelope.metrics.wall_ms < 5000  # the budget, not the watchdog, ended it


@pytest.mark.req("REQ-AGENT-013")
@pytest.mark.parametrize(("code", "budgets", "expected"), [
    ("'a' * 10**9", Budgets(memory_bytes=16 << 20), "MEM_LIMIT"),
    ("def down(n):\n    return down(n + 1)\ndown(0)", Budgets(max_depth=50), "DEPTH_LIMIT"),
    ("for i in range(1000):\n    print('x' * 100)", Budgets(max_output_bytes=1024), "OUTPUT_LIMIT"),
    ("'y' * 5000", Budgets(max_output_bytes=1024), "OUTPUT_LIMIT"),
    ("[get_record(i) for i in range(10)]", Budgets(max_tool_calls=3), "MAX_TOOL_CALLS"),
    ("try:\n    [get_record(i) for i in range(10)]\nexcept Exception:\n    0", Budgets(max_tool_calls=3),
     "MAX_TOOL_CALLS"),
])
def test_each_budget_ends_the_unit_with_its_own_code(code: str, budgets: Budgets, expected: str) -> None:
    recorder = Recorder()
    envelope = MontyEngine(recorder.functions()).execute(
        ExecutionUnit(code=code, budgets=budgets, allowed_tools=("get_record",)))
    assert kind_code(envelope) == (ErrorKind.BUDGET, expected), envelope.error
    assert len(recorder.calls) <= budgets.max_tool_calls


SMALL = Budgets(max_string_length=100, max_array_size=20)


@pytest.mark.req("REQ-AGENT-008", "REQ-AGENT-013")
@pytest.mark.parametrize(("code", "params", "where", "expected"), [
    ("'x' * 101", {}, "the result", "STRING_LIMIT"),
    ("list(range(21))", {}, "the result", "ARRAY_LIMIT"),
    ("{'rows': [{'id': i} for i in range(21)]}", {}, "the result", "ARRAY_LIMIT"),  # nested
    ("{('k' * 101): 1}", {}, "the result", "STRING_LIMIT"),  # a key is a string too
    ("len(text)", {"text": "y" * 101}, "the params", "STRING_LIMIT"),
    ("get_record('z' * 101)", {}, "the arguments of get_record", "STRING_LIMIT"),
    ("get_record(list(range(21)))", {}, "the arguments of get_record", "ARRAY_LIMIT"),
    ("big()", {}, "the answer of big", "ARRAY_LIMIT"),
    ("try:\n    big()\nexcept Exception:\n    0", {}, "the answer of big", "ARRAY_LIMIT"),  # not catchable
])
def test_strings_and_arrays_over_their_limits_end_the_unit_where_they_cross(
    code: str, params: dict[str, Any], where: str, expected: str
) -> None:
    """No string or collection over its limit enters or leaves the engine: params, host calls both ways and
    the result (inside the script, the memory limit bounds them)."""
    recorder = Recorder()
    functions = {**recorder.functions(), "big": lambda: list(range(21))}
    envelope = MontyEngine(functions).execute(ExecutionUnit(
        code=code, params=params, budgets=SMALL, allowed_tools=("get_record", "big")))
    assert kind_code(envelope) == (ErrorKind.BUDGET, expected), envelope.error
    assert envelope.error is not None and envelope.error.message.startswith(where), envelope.error.message
    assert recorder.calls == [], "an oversized call never reaches the host"


@pytest.mark.req("REQ-AGENT-013")
def test_strings_and_arrays_at_their_limits_pass() -> None:
    recorder = Recorder()
    code = "rows = [get_record(i) for i in range(2)]\n{'text': 'x' * 100, 'items': list(range(20)), 'n': len(rows)}"
    envelope = MontyEngine(recorder.functions()).execute(ExecutionUnit(
        code=code, params={"text": "y" * 100}, budgets=SMALL.model_copy(update={"max_output_bytes": 4096}),
        allowed_tools=("get_record",)))
    assert envelope.ok, envelope.error
    assert envelope.result["n"] == 2 and len(recorder.calls) == 2


@pytest.mark.req("REQ-AGENT-008")
def test_the_same_unit_gives_the_same_result() -> None:
    engine = MontyEngine(Recorder().functions())
    # set order and str hashes included: each run is a fresh worker, and neither may vary between them
    unit = ExecutionUnit(code=THREE_CALLS + "\n{'n': len(rows), 'set': list({'alpha', 'beta', 'gamma', 'delta'}),"
                         " 'hash': hash('alpha'), 'id': id(rows)}", allowed_tools=("get_record",))
    first, second = engine.execute(unit), engine.execute(unit)
    assert first.ok and first.model_dump(exclude={"metrics"}) == second.model_dump(exclude={"metrics"})


# The static check refuses every one of these (test_static_check.py). With it switched off, the worker's
# own settings still give no file, environment, clock or entropy access: the second line of defence.
@pytest.mark.req("REQ-AGENT-008")
@pytest.mark.parametrize("code", [
    "open('/etc/passwd').read()",
    "from pathlib import Path\nPath('/etc/hostname').read_text()",
    "import os\nos.listdir('/')",
    "import os\nos.environ['PATH']",
    "import os\nos.getenv('HOME')",
])
def test_files_and_environment_are_refused_at_run_time_too(code: str) -> None:
    envelope = MontyEngine({}, check_scripts=False).execute(ExecutionUnit(code=code))
    assert kind_code(envelope) == (ErrorKind.DENIED, "CAPABILITY_DENIED"), envelope.error


@pytest.mark.req("REQ-AGENT-008")
def test_the_clock_is_frozen_and_randomness_seeded_at_run_time() -> None:
    engine = MontyEngine({}, check_scripts=False)
    code = ("import time, random\nfrom datetime import datetime\n"
            "[time.time(), time.monotonic(), str(datetime.now()), random.random()]")
    first, second = (engine.execute(ExecutionUnit(code=code)) for _ in range(2))
    assert first.ok and first.result == second.result
    assert first.result[:3] == [946684800.0, 946684800.0, "2000-01-01 00:00:00"]


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _worker_processes() -> list[int]:
    """The engine workers started by this test process (its descendants running the worker module)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:1] != [sys.executable.encode()] or not is_worker(argv):
            continue
        ancestor = int(entry.name)
        while ancestor > 1 and ancestor != os.getpid():
            ancestor = _parent(ancestor)
        if ancestor == os.getpid():
            pids.append(int(entry.name))
    return pids


@pytest.mark.req("REQ-AGENT-009")
def test_the_worker_runs_in_the_restricted_sandbox_without_the_servers_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SERVICE_API_KEY", "sk-test-must-not-leak")
    monkeypatch.setenv("PHOENIX_SOMETHING", "server-only")
    seen: dict[str, Any] = {}

    def inspect() -> bool:  # runs in the host while the worker waits for the answer
        [pid] = _worker_processes()
        status = Path(f"/proc/{pid}/status").read_text()
        seen["status"] = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        seen["environ"] = Path(f"/proc/{pid}/environ").read_bytes()
        return True

    envelope = MontyEngine({"inspect": inspect}).execute(ExecutionUnit(code="inspect()", allowed_tools=("inspect",)))
    assert envelope.ok and envelope.result is True, envelope.error
    assert seen["status"]["NoNewPrivs"].strip() == "1"
    if seccomp.seccomp_available() and seccomp.seccomp_supported_arch():
        assert seen["status"]["Seccomp"].strip() == "2"
    assert seen["status"]["CapEff"].strip() == "0000000000000000"
    assert b"sk-test" not in seen["environ"] and b"PHOENIX_SOMETHING" not in seen["environ"]
    assert b"PHOENIX_LSP_SANDBOX=restricted" in seen["environ"]
    assert _worker_processes() == []  # one worker per unit, gone when it is answered
