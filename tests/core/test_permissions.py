"""``decide``, the one permission decision (REQ-SEC-003), as a table: every kind of tool in every situation,
the whole verdict compared. CI's mutation check (scripts/mutation-check.py) runs against this file."""

from __future__ import annotations

from dataclasses import replace

import pytest

from phoenix_lsp.core import machine
from phoenix_lsp.core.permissions import PATCH_DISABLED, SUBAGENT_WRITE_DISABLED, Allow, Ask, Refuse, Verdict, decide
from phoenix_lsp.core.rules import AllowRule
from phoenix_lsp.core.state import ConversationState
from phoenix_lsp.core.tools import CONVERSATION_TOOLS, SUBAGENT_TOOLS
from phoenix_lsp.core.values import Mode, Policy, ToolUse

R, U = Mode.RESTRICTED, Mode.UNRESTRICTED
AUTO, ASK = Policy.AUTO, Policy.INTERACTIVE
BASH_LS = AllowRule("bash", (("ls",),))


def state(mode: Mode, policy: Policy, subagent: bool = False, rules: tuple[AllowRule, ...] = ()) -> ConversationState:
    extra: dict[str, object] = {"is_subagent": True, "parent_id": "p"} if subagent else {}
    base = machine.new_conversation("c", model="m", working_directory="/w", sandbox=True, **extra)
    return replace(base, mode=mode, policy=policy, always_allow=rules)


def call(name: str, command: str = "ls -l") -> ToolUse:
    if name == "bash":
        return ToolUse("t1", "bash", {"command": command}, commands=(tuple(command.split()),))
    return ToolUse("t1", name, {})


def sub_write(tool: str) -> Refuse:
    return Refuse(SUBAGENT_WRITE_DISABLED.format(tool=tool), "mode")


# (mode, policy, sub-agent, always-allow rules, tool) -> the verdict, whole
TABLE: list[tuple[Mode, Policy, bool, tuple[AllowRule, ...], str, Verdict]] = [
    # reading and the control tools are never asked about, in any mode or policy
    *[(m, p, False, (), t, Allow()) for m in (R, U) for p in (AUTO, ASK)
      for t in ("read_file", "list_directory", "search_files", "request_mode_upgrade", "spawn_agents")],
    *[(m, p, True, (), t, Allow()) for m in (R, U) for p in (AUTO, ASK) for t in ("read_file", "submit_result")],
    # Restricted: patch refused (REQ-PATCH-009), bash runs in the sandbox without asking
    (R, ASK, False, (), "patch", Refuse(PATCH_DISABLED, "mode")),
    (R, AUTO, False, (), "patch", Refuse(PATCH_DISABLED, "mode")),
    (R, ASK, False, (), "bash", Allow()),
    (R, AUTO, False, (), "bash", Allow()),
    # a sub-agent cannot upgrade: its refusal says so and names the tool (REQ-BED-018)
    (R, ASK, True, (), "patch", sub_write("patch")),
    (R, AUTO, True, (AllowRule("patch"),), "patch", sub_write("patch")),
    (R, ASK, True, (), "bash", Allow()),
    # Unrestricted: auto runs, interactive asks unless a rule covers the call (REQ-PERM-001/002/019)
    (U, AUTO, False, (), "patch", Allow()),
    (U, AUTO, False, (), "bash", Allow()),
    (U, ASK, False, (), "patch", Ask()),
    (U, ASK, False, (), "bash", Ask()),
    (U, ASK, False, (AllowRule("patch"),), "patch", Allow()),
    (U, ASK, False, (AllowRule("patch"),), "bash", Ask()),
    (U, ASK, False, (BASH_LS,), "bash", Allow()),
    (U, ASK, True, (), "patch", Ask()),
    (U, AUTO, True, (), "patch", Allow()),
]


@pytest.mark.req("REQ-SEC-003", "REQ-PATCH-009", "REQ-PERM-001", "REQ-PERM-002", "REQ-BED-018")
@pytest.mark.parametrize(("mode", "policy", "subagent", "rules", "tool", "verdict"), TABLE)
def test_decide(
    mode: Mode, policy: Policy, subagent: bool, rules: tuple[AllowRule, ...], tool: str, verdict: Verdict
) -> None:
    assert decide(state(mode, policy, subagent, rules), call(tool)) == verdict


@pytest.mark.req("REQ-SEC-003", "REQ-PERM-019")
def test_a_rule_for_another_command_does_not_cover_the_call() -> None:
    assert decide(state(U, ASK, rules=(BASH_LS,)), call("bash", "rm -rf x")) == Ask()


@pytest.mark.req("REQ-SEC-003", "REQ-BED-009")
@pytest.mark.parametrize(("subagent", "tool"), [(False, "submit_result"), (True, "spawn_agents"),
                                                (True, "request_mode_upgrade"), (False, "invented")])
def test_a_tool_the_conversation_does_not_have_is_refused_and_the_refusal_lists_the_ones_it_has(
    subagent: bool, tool: str
) -> None:
    for mode in (R, U):
        verdict = decide(state(mode, AUTO, subagent), call(tool))
        assert isinstance(verdict, Refuse) and verdict.reason == "unknown_tool"
        offered = SUBAGENT_TOOLS if subagent else CONVERSATION_TOOLS
        # what: the unknown name; what next: every tool it may use, and only those
        assert f"'{tool}'" in verdict.message and "no such tool" in verdict.message
        assert verdict.message.endswith(f"Use one of: {', '.join(offered)}.")


@pytest.mark.req("REQ-PATCH-009", "REQ-BED-018")
def test_the_write_refusals_say_why_and_what_to_do_instead() -> None:
    # the parent conversation may ask for write access; a sub-agent reports instead
    assert "Restricted" in PATCH_DISABLED and "request_mode_upgrade" in PATCH_DISABLED
    message = sub_write("patch").message
    assert message.startswith("patch is disabled") and "Restricted" in message
    assert "submit_result" in message and "parent" in message and "request_mode_upgrade" not in message
