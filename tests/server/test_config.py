"""One settings model: every PHOENIX_* variable and option under one rule (REQ-PROTO-034)."""

from __future__ import annotations

import pytest

from phoenix_lsp.protocol.params import InitializationOptions
from phoenix_lsp.server.config import load


@pytest.mark.req("REQ-PROTO-034")
def test_a_bad_variable_is_reported_by_name_and_its_default_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHOENIX_RETRY_BASE_MS", "soon")  # failed every request before issue 9
    monkeypatch.setenv("PHOENIX_AGENT_MAX_TURNS", "0")
    monkeypatch.setenv("PHOENIX_AGENT_CONCURRENCY", "3")
    config, problems = load(InitializationOptions(), {"PHOENIX_RETRY_BASE_MS": "soon", "PHOENIX_AGENT_MAX_TURNS": "0"})
    assert config.retry_base_ms == 1000 and config.agent_max_turns == 50 and config.agent_concurrency == 3
    [retry] = [p for p in problems if "PHOENIX_RETRY_BASE_MS" in p]
    assert "'soon'" in retry and "default 1000" in retry and "whole number" in retry
    [turns] = [p for p in problems if "PHOENIX_AGENT_MAX_TURNS" in p]
    assert "default 50" in turns and "at least 1" in turns


@pytest.mark.req("REQ-PROTO-034")
def test_an_option_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHOENIX_MODEL", "from-env")
    monkeypatch.setenv("PHOENIX_RETRY_BASE_MS", "20")
    config, problems = load(InitializationOptions(model="from-option"), {})
    assert (config.model, config.retry_base_ms, problems) == ("from-option", 20, [])
