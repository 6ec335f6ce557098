"""One settings model: every PHOENIX_* variable and option under one rule (REQ-PROTO-034)."""

from __future__ import annotations

from pathlib import Path

import pytest

from phoenix_lsp.protocol.params import InitializationOptions
from phoenix_lsp.server.config import load


@pytest.mark.req("REQ-PROTO-034")
def test_a_bad_variable_is_reported_by_name_and_its_default_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHOENIX_RETRY_BASE_MS", "soon")  # failed every request before issue 9
    monkeypatch.setenv("PHOENIX_SUBAGENT_MAX_TURNS", "0")
    monkeypatch.setenv("PHOENIX_SUBAGENT_CONCURRENCY", "3")
    config, problems = load(
        InitializationOptions(), {"PHOENIX_RETRY_BASE_MS": "soon", "PHOENIX_SUBAGENT_MAX_TURNS": "0"}
    )
    assert config.retry_base_ms == 1000 and config.subagent_max_turns == 50 and config.subagent_concurrency == 3
    [retry] = [p for p in problems if "PHOENIX_RETRY_BASE_MS" in p]
    assert "'soon'" in retry and "default 1000" in retry and "whole number" in retry
    [turns] = [p for p in problems if "PHOENIX_SUBAGENT_MAX_TURNS" in p]
    assert "default 50" in turns and "at least 1" in turns


@pytest.mark.req("REQ-PROTO-034")
def test_an_option_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHOENIX_MODEL", "from-env")
    monkeypatch.setenv("PHOENIX_RETRY_BASE_MS", "20")
    config, problems = load(InitializationOptions(model="from-option"), {})
    assert (config.model, config.retry_base_ms, problems) == ("from-option", 20, [])


@pytest.mark.req("REQ-PROTO-034", "REQ-BASH-023")
def test_the_background_limit_follows_the_same_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """PHOENIX_BACKGROUND_TIMEOUT_S used to be read beside the settings model, with rules of its own."""
    monkeypatch.setenv("PHOENIX_BACKGROUND_TIMEOUT_S", "-5")
    config, problems = load(InitializationOptions(), {"PHOENIX_BACKGROUND_TIMEOUT_S": "-5"})
    assert config.background_timeout_s is None  # the bash tool's own limit
    [problem] = problems
    assert "PHOENIX_BACKGROUND_TIMEOUT_S='-5'" in problem and "one hour" in problem and "above 0" in problem
    monkeypatch.setenv("PHOENIX_BACKGROUND_TIMEOUT_S", "90")
    assert load(InitializationOptions(), {})[0].background_timeout_s == 90
    assert load(InitializationOptions(background_timeout_s=7), {})[0].background_timeout_s == 7  # option wins


@pytest.mark.req("REQ-PROTO-034", "REQ-BASH-016")
def test_the_deny_read_variable_is_read_by_the_settings_model(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    from phoenix_lsp.server.config import read_sandbox_settings

    monkeypatch.setenv("PHOENIX_LSP_DENY_READ", f"{tmp_path}/vault::relative/typo")
    config, problems = load(InitializationOptions(deny_read=["/srv/tokens"]), {})
    assert (config.lsp_deny_read, problems) == ((f"{tmp_path}/vault", "relative/typo"), [])
    settings, fewer = read_sandbox_settings(config, ["/srv/tokens"], tmp_path / "data")
    denied = {str(p) for p in settings["deny_read"]}
    assert {f"{tmp_path}/vault", "/srv/tokens", f"{tmp_path}/data"} <= denied  # the variable, the option, data
    assert len(fewer) == 1 and "relative/typo" in fewer[0]  # one typo is reported, the other entries still apply
    monkeypatch.delenv("PHOENIX_LSP_DENY_READ")
    settings, _ = read_sandbox_settings(load(InitializationOptions(), {})[0], None, tmp_path / "data")
    assert f"{tmp_path}/vault" not in {str(p) for p in settings["deny_read"]}


@pytest.mark.req("REQ-PROTO-034", "REQ-AGENT-038")
def test_the_catalogue_size_follows_the_same_rule(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """PHOENIX_AGENT_CATALOGUE_INLINE_MAX used to be read by the agent route itself, beside the settings model:
    a bad value was only logged there, never shown with the other settings' problems."""
    from phoenix_lsp.server.agent_route import setup_route

    monkeypatch.setenv("PHOENIX_AGENT_CATALOGUE_INLINE_MAX", "lots")
    config, problems = load(InitializationOptions(), {"PHOENIX_AGENT_CATALOGUE_INLINE_MAX": "lots"})
    assert config.agent_catalogue_inline_max == 8000
    [problem] = problems
    assert "PHOENIX_AGENT_CATALOGUE_INLINE_MAX='lots'" in problem and "default 8000" in problem
    assert "whole number at least 0" in problem
    monkeypatch.setenv("PHOENIX_AGENT_CATALOGUE_INLINE_MAX", "0")  # always on demand
    config, problems = load(InitializationOptions(), {})
    assert (config.agent_catalogue_inline_max, problems) == (0, [])

    class Guard:
        def redact(self, text: str) -> str:
            return text

        def add_secret(self, secret: str) -> None:
            pass

    monkeypatch.setenv("PHOENIX_ARTIFACT_DIR", str(tmp_path / "artifacts"))
    route = setup_route(load(InitializationOptions(), {})[0], tmp_path, Guard())
    assert route.unavailable is None and route.catalogue_inline_max == 0  # the route takes the setting


@pytest.mark.req("REQ-PROTO-034", "REQ-ACP-020")
def test_the_acp_read_wait_follows_the_same_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHOENIX_ACP_READ_TIMEOUT_S", "0")
    config, problems = load(InitializationOptions(), {"PHOENIX_ACP_READ_TIMEOUT_S": "0"})
    assert config.acp_read_timeout_s == 5.0
    [problem] = problems
    assert "PHOENIX_ACP_READ_TIMEOUT_S" in problem and "above 0" in problem and "default 5" in problem
    monkeypatch.setenv("PHOENIX_ACP_READ_TIMEOUT_S", "2.5")
    assert load(InitializationOptions(), {})[0].acp_read_timeout_s == 2.5
