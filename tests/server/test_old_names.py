"""Names renamed by issue 26's one-word-per-idea sweep stay readable where clients and environments send them:
the old name is accepted on input, only the new one is emitted (specs/modes.md, "Words with more than one use").
"""

from __future__ import annotations

import pytest

from phoenix_lsp.core.values import Mode, Policy, Style
from phoenix_lsp.protocol.base import InvalidParams, parse, to_wire
from phoenix_lsp.protocol.params import InitializationOptions, NewConversationParams
from phoenix_lsp.protocol.results import NewConversationResult
from phoenix_lsp.protocol.views import SandboxInfo
from phoenix_lsp.server.config import load


@pytest.mark.req("REQ-LAYER-009", "REQ-PERM-007")
def test_new_conversation_takes_policy_and_still_the_old_approval_policy() -> None:
    assert parse(NewConversationParams, {"policy": "auto"}).policy is Policy.AUTO
    assert parse(NewConversationParams, {"approvalPolicy": "auto"}).policy is Policy.AUTO  # clients before issue 26
    assert parse(NewConversationParams, {}).policy is Policy.INTERACTIVE
    assert parse(NewConversationParams, {"policy": "auto", "approvalPolicy": "interactive"}).policy is Policy.AUTO


@pytest.mark.req("REQ-LAYER-009")
def test_a_bad_old_name_is_refused_under_the_name_the_client_sent() -> None:
    with pytest.raises(InvalidParams) as refused:
        parse(NewConversationParams, {"approvalPolicy": "yolo"})
    assert refused.value.field == "approvalPolicy"


@pytest.mark.req("REQ-LAYER-009")
def test_results_emit_only_policy() -> None:
    result = NewConversationResult(
        conversation_id="c1", mode=Mode.RESTRICTED, style=Style.CHAT, policy=Policy.AUTO,
        working_directory="/w", model="m", sandbox=SandboxInfo(available=True, missing=[]),
    )
    wire = to_wire(result)
    assert wire["policy"] == "auto" and "approvalPolicy" not in wire


@pytest.mark.req("REQ-LAYER-009", "REQ-PROTO-034")
def test_the_sub_agent_variables_old_names_are_still_read(monkeypatch: pytest.MonkeyPatch) -> None:
    old = {"PHOENIX_AGENT_MAX_TURNS": "7", "PHOENIX_AGENT_CONCURRENCY": "2", "PHOENIX_AGENT_TIME_LIMIT_S": "30"}
    for name, value in old.items():
        monkeypatch.setenv(name, value)
    config, problems = load(InitializationOptions(), old)
    assert (config.subagent_max_turns, config.subagent_concurrency, config.subagent_time_limit_s) == (7, 2, 30.0)
    assert problems == []


@pytest.mark.req("REQ-LAYER-009", "REQ-PROTO-034")
def test_the_new_variable_wins_and_a_bad_old_one_is_reported_by_its_own_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    environ = {"PHOENIX_SUBAGENT_MAX_TURNS": "9", "PHOENIX_AGENT_MAX_TURNS": "3", "PHOENIX_AGENT_CONCURRENCY": "many"}
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    config, problems = load(InitializationOptions(), environ)
    assert config.subagent_max_turns == 9 and config.subagent_concurrency == 4
    [problem] = problems
    assert "PHOENIX_AGENT_CONCURRENCY='many'" in problem and "default 4" in problem
