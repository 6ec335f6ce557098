"""The engine is chosen by configuration (PHOENIX_AGENT_ENGINE), not code (acceptance 10 of seed 004)."""

from __future__ import annotations

import pytest

from phoenix_lsp.agent.contracts import ErrorKind, ExecutionUnit
from phoenix_lsp.agent.engine import NullEngine, ScriptEngine, make_engine
from phoenix_lsp.agent.monty_engine import MontyEngine
from phoenix_lsp.protocol.params import InitializationOptions
from phoenix_lsp.server.config import load

from .conftest import Recorder


@pytest.mark.req("REQ-AGENT-007")
def test_the_variable_swaps_the_engine_and_the_null_engine_runs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Recorder()
    config, problems = load(InitializationOptions(), {})
    assert problems == [] and config.agent_engine == "monty"
    assert isinstance(make_engine(config.agent_engine, recorder.functions()), MontyEngine)

    monkeypatch.setenv("PHOENIX_AGENT_ENGINE", "null")
    config, problems = load(InitializationOptions(), {"PHOENIX_AGENT_ENGINE": "null"})
    engine = make_engine(config.agent_engine, recorder.functions())
    assert problems == [] and isinstance(engine, NullEngine) and isinstance(engine, ScriptEngine)
    assert engine.health().ok and engine.capabilities() == []
    envelope = engine.execute(ExecutionUnit(code="get_record(1)", allowed_tools=("get_record",)))
    assert envelope.error is not None and not envelope.ok
    assert (envelope.error.kind, envelope.error.code) == (ErrorKind.ENGINE, "UNAVAILABLE")
    assert "PHOENIX_AGENT_ENGINE" in envelope.error.message and recorder.calls == []


@pytest.mark.req("REQ-AGENT-007")
def test_an_unknown_engine_is_reported_and_the_default_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHOENIX_AGENT_ENGINE", "rhai")
    config, problems = load(InitializationOptions(), {"PHOENIX_AGENT_ENGINE": "rhai"})
    assert config.agent_engine == "monty"
    [problem] = problems
    assert "PHOENIX_AGENT_ENGINE='rhai'" in problem and "monty or null" in problem
