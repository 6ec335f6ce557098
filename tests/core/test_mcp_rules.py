"""MCP tools in the conversation, in the core (issue 37): their names (``core/mcp_names.py``) and the one
permission decision for them (``core/mcp_rules.py``), as a table and as properties over random event sequences."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from phoenix_lsp.core import machine
from phoenix_lsp.core.effects import AskApproval, Effect, RunTool
from phoenix_lsp.core.events import (
    ApprovalAnswer,
    Cancel,
    Event,
    LlmDone,
    RevokeAlwaysAllow,
    SetMode,
    SetPolicy,
    ToolDone,
    UpgradeAnswer,
    UserMessage,
)
from phoenix_lsp.core.mcp_names import (
    MAX_NAME,
    rule_names,
    server_names,
    server_part,
    server_rule,
    tool_names,
    well_formed,
)
from phoenix_lsp.core.mcp_rules import MCP_WRITE_DISABLED, SUBAGENT_MCP, UNKNOWN_MCP
from phoenix_lsp.core.permissions import Allow, Ask, Refuse, Verdict, decide
from phoenix_lsp.core.rules import AllowRule, covers, scopes_for
from phoenix_lsp.core.state import AwaitingApproval, AwaitingLlm, AwaitingUpgrade, ConversationState, RunningTool
from phoenix_lsp.core.tools import TOOL_KINDS
from phoenix_lsp.core.values import Decision, Mode, Policy, Route, ToolUse

R, U = Mode.RESTRICTED, Mode.UNRESTRICTED
AUTO, ASK = Policy.AUTO, Policy.INTERACTIVE
CREATE = "mcp__github__create_issue"
LIST = "mcp__github__list_issues"
OTHER = "mcp__db__drop_table"
EXAMPLES = int(os.environ.get("PHOENIX_PROPERTY_EXAMPLES", "1000"))
SAFE = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")


def state(mode: Mode, policy: Policy, subagent: bool = False, rules: tuple[AllowRule, ...] = ()) -> ConversationState:
    extra: dict[str, object] = {"is_subagent": True, "parent_id": "p"} if subagent else {}
    base = machine.new_conversation("c", model="m", working_directory="/w", sandbox=True, **extra)
    return replace(base, mode=mode, policy=policy, always_allow=rules)


def mcp(name: str, kind: str | None) -> ToolUse:
    return ToolUse("t1", name, {"title": "x"}, mcp_kind=kind)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ names


@pytest.mark.req("REQ-MCP-001")
@given(servers=st.lists(st.text(max_size=80), min_size=1, max_size=5, unique=True),
       tools=st.lists(st.text(max_size=120), min_size=1, max_size=8, unique=True))
@settings(max_examples=EXAMPLES, deadline=None)
def test_every_name_is_safe_short_unique_and_never_a_built_in_tool(servers: list[str], tools: list[str]) -> None:
    parts = server_names(servers)
    assert len(set(parts.values())) == len(servers), "two servers share a name part"
    names: list[str] = []
    for server in servers:
        named = tool_names(parts[server], tools)
        assert set(named) == set(tools)
        for name in named.values():
            assert SAFE.match(name) and len(name) <= MAX_NAME and well_formed(name), name
            assert name not in TOOL_KINDS and name.startswith("mcp__")
            assert server_part(name) == parts[server], "the server of a name is read back from it"
            assert server_rule(name) == f"mcp__{parts[server]}__*"
        names += named.values()
    assert len(set(names)) == len(names), "two tools share a name"


@pytest.mark.req("REQ-MCP-001")
def test_a_tool_named_like_a_built_in_tool_stays_in_its_family() -> None:
    assert tool_names("evil", ["bash", "patch", "read_file"]) == {
        "bash": "mcp__evil__bash", "patch": "mcp__evil__patch", "read_file": "mcp__evil__read_file"}
    # a name that needs no change keeps it, whatever clashes with it after sanitising
    assert tool_names("gh", ["list issues", "list_issues"])["list_issues"] == "mcp__gh__list_issues"
    assert tool_names("gh", ["list issues", "list_issues"])["list issues"].startswith("mcp__gh__list_issues_")
    # a server named to smuggle a separator cannot make its tools look like another server's
    parts = server_names(["a__b", "a"])
    assert parts == {"a__b": "a_b", "a": "a"}
    assert server_part(tool_names(parts["a__b"], ["c"])["c"]) == "a_b"
    assert rule_names("mcp__a_b__c") == ("mcp__a_b__c", "mcp__a_b__*")


# ----------------------------------------------------------------------------------- the decision

W, RD = "write", "read"
TABLE: list[tuple[Mode, Policy, bool, tuple[AllowRule, ...], str, str | None, Verdict]] = [
    # a read runs without asking in every mode and policy
    *[(m, p, False, (), LIST, RD, Allow()) for m in (R, U) for p in (AUTO, ASK)],
    # a write is refused in Restricted with the upgrade hint, whatever rules or policy say
    (R, ASK, False, (), CREATE, W, Refuse(MCP_WRITE_DISABLED.format(tool=CREATE), "mode")),
    (R, AUTO, False, (AllowRule(CREATE), AllowRule("mcp__github__*")), CREATE, W,
     Refuse(MCP_WRITE_DISABLED.format(tool=CREATE), "mode")),
    # Unrestricted: auto runs, interactive asks unless the tool's rule or its server's covers it
    (U, AUTO, False, (), CREATE, W, Allow()),
    (U, ASK, False, (), CREATE, W, Ask()),
    (U, ASK, False, (AllowRule(CREATE),), CREATE, W, Allow()),
    (U, ASK, False, (AllowRule("mcp__github__*"),), CREATE, W, Allow()),
    (U, ASK, False, (AllowRule("mcp__github__*"),), OTHER, W, Ask()),  # another server's
    (U, ASK, False, (AllowRule("mcp__git__*"), AllowRule("mcp__github"), AllowRule("mcp__*")), CREATE, W, Ask()),
    (U, ASK, False, (AllowRule("bash"),), CREATE, W, Ask()),
    (U, ASK, False, (AllowRule(CREATE, (("x",),)), AllowRule("mcp__github__*", (("x",),))), CREATE, W, Ask()),
    # a name no server offers never runs, never asks; nor does an MCP call of a sub-agent
    *[(m, p, False, (AllowRule("mcp__github__*"),), CREATE, None, Refuse(UNKNOWN_MCP.format(tool=CREATE),
                                                                         "unknown_tool"))
      for m in (R, U) for p in (AUTO, ASK)],
    (U, AUTO, True, (), LIST, RD, Refuse(SUBAGENT_MCP.format(tool=LIST), "unknown_tool")),
    (R, AUTO, True, (), LIST, RD, Refuse(SUBAGENT_MCP.format(tool=LIST), "unknown_tool")),
]


@pytest.mark.req("REQ-MCP-003", "REQ-MCP-004")
@pytest.mark.parametrize(("mode", "policy", "subagent", "rules", "name", "kind", "expected"), TABLE)
def test_decide(mode: Mode, policy: Policy, subagent: bool, rules: tuple[AllowRule, ...], name: str,
                kind: str | None, expected: Verdict) -> None:
    assert decide(state(mode, policy, subagent, rules), mcp(name, kind)) == expected


@pytest.mark.req("REQ-MCP-004")
def test_always_allow_offers_the_tool_then_its_whole_server() -> None:
    call = mcp(CREATE, W)
    assert scopes_for((), call) == (AllowRule(CREATE), AllowRule("mcp__github__*"))
    assert [s.rule for s in scopes_for((), call)] == [CREATE, "mcp__github__*"]
    assert covers((AllowRule("mcp__github__*"),), mcp("mcp__github__close_issue", W))
    assert not covers((AllowRule("mcp__github__*", (("x",),)),), call)  # only whole-tool rules count


@pytest.mark.req("REQ-MCP-004")
def test_always_allow_for_the_server_covers_its_other_writes_through_the_machine() -> None:
    s = state(U, ASK)
    s, _ = machine.transition(s, UserMessage("go"))
    assert isinstance(s.status, AwaitingLlm)
    calls = (mcp(CREATE, W), replace(mcp("mcp__github__close_issue", W), id="t2"), replace(mcp(OTHER, W), id="t3"))
    s, effects = machine.transition(s, LlmDone(s.status.request_id, calls, "tool_use"))
    assert isinstance(s.status, AwaitingApproval) and any(isinstance(e, AskApproval) for e in effects)
    s, effects = machine.transition(s, ApprovalAnswer("t1", Decision.ALWAYS_ALLOW, "mcp__github__*"))
    assert [e.call.id for e in effects if isinstance(e, RunTool)] == ["t1"]
    s, effects = machine.transition(s, ToolDone("t1", "ok"))
    assert [e.call.id for e in effects if isinstance(e, RunTool)] == ["t2"], "the server's rule covers t2"
    s, effects = machine.transition(s, ToolDone("t2", "ok"))
    assert [e.call.id for e in effects if isinstance(e, AskApproval)] == ["t3"], "another server is asked about"


# --------------------------------------------------------------------------------- the properties

NAMES = [CREATE, CREATE, LIST, OTHER, "mcp__github__bash", "mcp__nope__x", "mcp__", "mcp__a"]
KINDS: list[Literal["read", "write"] | None] = ["write", "write", "write", "read", None]
RULES = [CREATE, "mcp__github__*", "mcp__db__*", OTHER, "mcp__*", None]


class McpMachine(RuleBasedStateMachine):
    """A conversation whose model calls MCP tools of every kind while the user changes mode, policy and rules."""

    def __init__(self) -> None:
        super().__init__()
        self.state: ConversationState
        self.counter = 0

    @initialize(sandbox=st.booleans(), subagent=st.sampled_from([False, False, False, True]),
                policy=st.sampled_from(Policy))
    def start(self, sandbox: bool, subagent: bool, policy: Policy) -> None:
        extra: dict[str, object] = {"policy": policy}
        if subagent:
            extra.update(is_subagent=True, parent_id="p")
        self.state = machine.new_conversation("c", model="m", working_directory="/w", sandbox=sandbox, **extra)

    def step(self, event: Event) -> None:
        before = self.state
        after, effects = machine.transition(before, event)
        self.check(before, event, after, effects)
        self.state = after

    def check(self, before: ConversationState, event: Event, after: ConversationState,
              effects: tuple[Effect, ...]) -> None:
        for e in effects:
            if isinstance(e, RunTool) and e.call.name.startswith("mcp__"):
                assert e.call.mcp_kind is not None, "a name no server offers never runs"
                assert not after.is_subagent, "a sub-agent has no MCP tools"
                if e.call.mcp_kind == W:
                    assert e.mode is Mode.UNRESTRICTED and after.mode is Mode.UNRESTRICTED, "a write ran Restricted"
                    said_yes = (isinstance(event, ApprovalAnswer) and event.tool_use_id == e.call.id
                                and event.decision is not Decision.DENY)
                    assert said_yes or after.policy is Policy.AUTO or covers(after.always_allow, e.call), (
                        "a write ran without the policy's yes")
            if isinstance(e, AskApproval) and e.call.name.startswith("mcp__"):
                assert e.call.mcp_kind == W and after.mode is Mode.UNRESTRICTED, "only writes are asked about"

    @rule(data=st.data())
    def advance(self, data: st.DataObject) -> None:
        status = self.state.status
        if isinstance(status, AwaitingLlm):
            calls = []
            for _ in range(data.draw(st.integers(1, 3))):
                self.counter += 1
                calls.append(ToolUse(f"t{self.counter}", data.draw(st.sampled_from(NAMES)), {"n": 1},
                                     mcp_kind=data.draw(st.sampled_from(KINDS))))
            self.step(LlmDone(status.request_id, tuple(calls), "tool_use"))
        elif isinstance(status, RunningTool):
            self.step(ToolDone(status.batch.current.id, "out", data.draw(st.booleans())))
        elif isinstance(status, AwaitingApproval):
            self.step(ApprovalAnswer(status.tool_use_id, data.draw(st.sampled_from(Decision)),
                                     data.draw(st.sampled_from(RULES))))
        elif isinstance(status, AwaitingUpgrade):
            self.step(UpgradeAnswer(data.draw(st.booleans())))
        else:
            self.step(UserMessage(data.draw(st.sampled_from(["go", "go", "/execute", "/plan"])),
                                  route=data.draw(st.sampled_from(Route))))

    @rule(event=st.one_of(st.builds(SetMode, st.sampled_from(Mode)), st.builds(SetPolicy, st.sampled_from(Policy)),
                          st.builds(RevokeAlwaysAllow, st.sampled_from(RULES[:-1])), st.just(Cancel()),
                          st.builds(ApprovalAnswer, st.sampled_from(["t1", "t2", "bogus"]),
                                    st.sampled_from(Decision), st.sampled_from(RULES))))
    def user(self, event: Event) -> None:
        self.step(event)


McpMachine.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=40, deadline=None,
                                        suppress_health_check=[HealthCheck.too_slow])
TestMcpMachine = pytest.mark.req("REQ-MCP-003", "REQ-MCP-004")(McpMachine.TestCase)
