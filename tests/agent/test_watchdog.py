"""The host side's watchdog and protocol checks (REQ-AGENT-009), against stand-in workers: plain Python
processes that misbehave in one way each. The real worker never does; these prove the host does not trust it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from phoenix_lsp.agent import monty_engine, worker_process
from phoenix_lsp.agent.contracts import Budgets, ErrorKind, ExecutionUnit, ResultEnvelope
from phoenix_lsp.agent.monty_engine import MontyEngine


def converse(worker_code: str, unit: ExecutionUnit) -> ResultEnvelope:
    process = subprocess.Popen([sys.executable, "-c", worker_code], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    read, write = os.pipe()
    try:
        return MontyEngine({"echo": lambda x: x})._converse(unit, process, write)
    finally:
        worker_process.stop(process)
        os.close(read)
        os.close(write)


@pytest.mark.req("REQ-AGENT-009")
def test_a_worker_that_never_answers_is_killed_by_the_watchdog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(monty_engine, "STARTUP_GRACE_S", 0.2)
    monkeypatch.setattr(monty_engine, "WATCHDOG_GRACE_S", 0.1)
    started = time.monotonic()
    envelope = converse("import time\ntime.sleep(60)", ExecutionUnit(code="1", budgets=Budgets(cpu_s=0.1)))
    assert envelope.error is not None
    assert (envelope.error.kind, envelope.error.code) == (ErrorKind.ENGINE, "TIMEOUT")
    assert time.monotonic() - started < 30  # half the worker's 60 s: killed, not finished (5 s: near the edge)


@pytest.mark.req("REQ-AGENT-009")
@pytest.mark.parametrize("worker_code", [
    "print('hello, host')",
    "print('[1, 2]')",
    "print('{\"what\": 1}')",
    "print('{\"done\": {\"ok\": true, \"error\": {\"kind\": \"CODE\", \"code\": \"X\"}}}')",
])
def test_anything_but_the_protocol_is_a_protocol_error(worker_code: str) -> None:
    envelope = converse(worker_code, ExecutionUnit(code="1"))
    assert envelope.error is not None
    assert (envelope.error.kind, envelope.error.code) == (ErrorKind.ENGINE, "PROTOCOL")
    if "hello" in worker_code:  # what the worker said is shown, so a start-up traceback can be read
        assert "hello, host" in envelope.error.message


@pytest.mark.req("REQ-AGENT-009")
def test_a_worker_that_dies_without_an_answer_is_a_crash() -> None:
    envelope = converse("import os\nos._exit(3)", ExecutionUnit(code="1"))
    assert envelope.error is not None
    assert (envelope.error.kind, envelope.error.code) == (ErrorKind.ENGINE, "PROC_CRASH")


@pytest.mark.req("REQ-AGENT-009")
def test_the_host_refuses_a_call_the_unit_does_not_allow_whatever_the_worker_says() -> None:
    unit = ExecutionUnit(code="1", allowed_tools=())
    reply = json.loads(MontyEngine({"echo": lambda x: x})._call(unit, {"call": "echo", "args": [1]}))
    assert reply["error"]["kind"] == "DENIED" and reply["error"]["code"] == "CAPABILITY_DENIED"


@pytest.mark.req("REQ-AGENT-007")
def test_an_engine_that_cannot_start_answers_with_an_error_not_an_exception(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def no_launcher(*args: object, **kwargs: object) -> None:
        raise FileNotFoundError(2, "No such file or directory", "helper")

    monkeypatch.setattr(subprocess, "Popen", no_launcher)
    envelope = MontyEngine({}).execute(ExecutionUnit(code="1"))
    assert envelope.error is not None
    assert (envelope.error.kind, envelope.error.code) == (ErrorKind.ENGINE, "UNAVAILABLE")
