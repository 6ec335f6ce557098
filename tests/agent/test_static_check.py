"""Scripts are refused before they run (acceptance 9, REQ-AGENT-008): over the size limit, or using a
forbidden construct. Each refusal is tried through the engine, which must not even start a worker."""

from __future__ import annotations

import subprocess

import pytest

from phoenix_lsp.agent.contracts import Budgets, ErrorKind, ExecutionUnit
from phoenix_lsp.agent.monty_engine import MontyEngine
from phoenix_lsp.agent.static_check import check

from .conftest import Recorder

REFUSED = {
    "import": "import os\nget_record(1)",
    "from-import": "from os import environ\nenviron",
    "dunder-import": "__import__('os')",
    "eval": "eval('1 + 1')",
    "exec": "exec('x = 1')",
    "compile": "compile('1', 'f', 'eval')",
    "open": "open('/etc/passwd').read()",
    "open-alias": "f = open\nf('/etc/passwd')",
    "environment": "environ['HOME']",
    "getenv": "getenv('HOME')",
    "clock-module": "time.time()",
    "datetime": "datetime.now()",
    "random": "random.random()",
    "attribute-environ": "get_record(1).environ",
    "getattr": "getattr(get_record, 'x')",
    "dunder-attribute": "get_record.__globals__",
    "builtins": "__builtins__",
    "globals": "globals()",
    "class": "class A:\n    pass",
    "syntax": "def (:",
}


@pytest.mark.req("REQ-AGENT-008")
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_each_forbidden_construct_is_refused_before_anything_runs(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_process(*args: object, **kwargs: object) -> None:
        raise AssertionError("a refused script started a process")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    recorder = Recorder()
    engine = MontyEngine(recorder.functions())
    envelope = engine.execute(ExecutionUnit(code=REFUSED[name], allowed_tools=("get_record",)))
    assert envelope.error is not None, name
    assert (envelope.error.kind, envelope.error.code) == (ErrorKind.CODE, "STATIC_CHECK")
    assert envelope.error.message and recorder.calls == []


@pytest.mark.req("REQ-AGENT-008")
def test_a_script_over_the_size_limit_is_refused_before_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, "Popen", None)
    code = "x = 1\n" * 200  # 1,200 bytes
    envelope = MontyEngine({}).execute(ExecutionUnit(code=code, budgets=Budgets(max_code_bytes=1000)))
    assert envelope.error is not None
    assert (envelope.error.kind, envelope.error.code) == (ErrorKind.CODE, "CODE_SIZE")
    assert "1200 bytes" in envelope.error.message
    assert check(code, 1200) is None  # the limit itself is allowed


@pytest.mark.req("REQ-AGENT-008")
def test_ordinary_data_shaping_passes_the_check() -> None:
    code = ("rows = [get_record(i) for i in range(3)]\n"
            "def pick(row):\n    return row['status'] == 'open'\n"
            "[r['id'] for r in rows if pick(r)]")
    assert check(code, 10_000) is None


@pytest.mark.req("REQ-AGENT-012")
def test_a_unit_naming_a_tool_the_engine_does_not_offer_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, "Popen", None)
    envelope = MontyEngine(Recorder().functions()).execute(ExecutionUnit(code="1", allowed_tools=("delete_all",)))
    assert envelope.error is not None
    assert (envelope.error.kind, envelope.error.code) == (ErrorKind.DENIED, "CAPABILITY_DENIED")


@pytest.mark.req("REQ-AGENT-008")
@pytest.mark.parametrize("name", ["open", "time", "_hidden", "not-a-name"])
def test_a_host_function_no_script_could_call_is_refused_when_the_engine_is_made(name: str) -> None:
    with pytest.raises(ValueError, match="cannot be a host function"):
        MontyEngine({name: lambda: None})
