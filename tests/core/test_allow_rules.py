"""Scoped Always Allow (issue 10): rules as values, the parse outside the core, the matcher inside it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from phoenix_lsp import codec
from phoenix_lsp.core import machine, transition
from phoenix_lsp.core.effects import AskApproval, Audit, Reject, RunTool
from phoenix_lsp.core.events import ApprovalAnswer, LlmDone, Restore, RevokeAlwaysAllow, ToolDone, UserMessage
from phoenix_lsp.core.notifications import AlwaysAllowChanged
from phoenix_lsp.core.permissions import Allow, Ask, decide
from phoenix_lsp.core.rules import AllowRule, covers, scopes_for
from phoenix_lsp.core.state import AwaitingApproval, ConversationState
from phoenix_lsp.core.values import Decision, Mode, ToolUse
from phoenix_lsp.server import wire
from phoenix_lsp.tools.bash_scope import simple_commands

GIT_STATUS = AllowRule("bash", (("git", "status"),))
LS = AllowRule("bash", (("ls",),))


def bash(command: str, call_id: str = "t1") -> ToolUse:
    """A bash call as the server builds it: parsed outside the core."""
    return ToolUse(call_id, "bash", {"command": command}, simple_commands(command))


def unrestricted(**fields: object) -> ConversationState:
    return machine.new_conversation("c1", model="m", working_directory="/w", sandbox=False, **fields)


def asking(command: str, state: ConversationState | None = None) -> tuple[ConversationState, AskApproval]:
    state = state or unrestricted()
    state, _ = transition(state, UserMessage("go"))
    rid = state.next_request - 1
    state, effects = transition(state, LlmDone(rid, (bash(command),), "tool_use"))
    asks = [e for e in effects if isinstance(e, AskApproval)]
    assert asks, f"{command!r} should ask"
    return state, asks[0]


# ------------------------------------------------------------------------------------------ matching

COVERED_BY_GIT_STATUS_AND_LS = [
    ("git status", True),
    ("git status --short -b", True),
    ("git 'status' -s", True),
    ("git status && ls -la", True),
    ("git status | ls", True),
    ("git status; ls\nls src", True),
    ("git status 2>&1", True),
    ("git status >/dev/null 2>&1", True),
    ("ls *.py", True),  # a glob after the prefix is an argument
    ("git status &", True),
    ("git status # a comment", True),
    # every simple command must be covered
    ("git status; rm -rf x", False),
    ("git status && rm -rf x", False),
    ("git status || rm -rf x", False),
    ("git status | sh", False),
    ("rm -rf x; git status", False),
    ("git status\nrm -rf x", False),
    ("git status & rm -rf x", False),
    ("git stash", False),
    ("git", False),
    ("/tmp/git status", False),
    ("git st*", False),  # a glob in the prefix position is not the word `status`
    ("gi? status", False),
    # anything the parser cannot prove asks
    ("git status $(rm -rf x)", False),
    ("git status `rm -rf x`", False),
    ("echo $(git status)", False),
    ("(git status)", False),
    ("(git status; rm -rf x)", False),
    ("{ git status; }", False),
    ("git status > .git/config", False),
    ("git status >> ~/.bashrc", False),
    ("git status >& out", False),
    ("ls < /etc/shadow", False),
    ("git status <(rm -rf x)", False),
    ("GIT_EXTERNAL_DIFF=./x git status", False),
    ("git status $HOME", False),
    ('git status "$X"', False),
    ("! git status", False),
    ("if true; then git status; fi", False),
    ("for f in a; do git status; done", False),
    ("git() { rm -rf x; }; git status", False),
    ("cat <<EOF\nx\nEOF", False),
    ("git status <<< x", False),
    ("git status &&", False),  # a syntax error
    ("", False),
    ("# only a comment", False),
]


@pytest.mark.req("REQ-PERM-019")
@pytest.mark.parametrize(("command", "covered"), COVERED_BY_GIT_STATUS_AND_LS)
def test_a_list_matches_only_when_every_command_matches(command: str, covered: bool) -> None:
    assert covers((GIT_STATUS, LS), bash(command)) is covered


@pytest.mark.req("REQ-PERM-019")
def test_whole_tool_rule_covers_everything_of_its_tool_only() -> None:
    rules = (AllowRule("bash"),)
    assert covers(rules, bash("git status $(rm -rf x)"))
    assert covers(rules, ToolUse("t1", "bash", {"command": "x"}))  # even unparsed
    assert not covers(rules, ToolUse("t1", "patch", {}))
    assert not covers((GIT_STATUS,), ToolUse("t1", "bash", {"command": "git status"}))  # not parsed: asks


@pytest.mark.req("REQ-PERM-019", "REQ-PERM-002")
def test_decide_asks_unless_a_rule_covers_the_whole_line() -> None:
    state = replace(unrestricted(), always_allow=(GIT_STATUS,))
    assert isinstance(decide(state, bash("git status -s")), Allow)
    assert isinstance(decide(state, bash("git status; rm -rf x")), Ask)
    assert isinstance(decide(replace(state, mode=Mode.UNRESTRICTED), bash("git push")), Ask)


# --------------------------------------------------------------------------------------------- scopes

SCOPES = [
    ("git status --short", ["git status *", "bash"]),
    ("git -C x status", ["git *", "bash"]),
    ("ls -la src", ["ls *", "bash"]),
    ("npm run test -- -x", ["npm run test *", "bash"]),
    ("make test", ["make test *", "bash"]),
    ("git log | head -5", ["git log *; head *", "bash"]),
    ("git status; git status -s", ["git status *", "bash"]),
    ("cat 'a b' | grep 'x y'", ["cat *; grep *", "bash"]),
    # commands that run code given as arguments: no prefix is narrower than the tool
    ("bash -c 'ls'", ["bash"]),
    ("sudo ls", ["bash"]),
    ("python3 script.py", ["bash"]),
    ("ls | xargs rm", ["bash"]),
    ("find . -name x", ["find *", "bash"]),  # its writing primaries are options a rule must see (REQ-PERM-026)
    ("env ls", ["bash"]),
    # unparsed: only the tool
    ("ls $(pwd)", ["bash"]),
    ("ls > out.txt", ["bash"]),
]


@pytest.mark.req("REQ-PERM-020")
@pytest.mark.parametrize(("command", "offered"), SCOPES)
def test_scopes_offer_the_narrowest_prefix_first_and_the_tool_last(command: str, offered: list[str]) -> None:
    assert [s.rule for s in scopes_for((), bash(command))] == offered


@pytest.mark.req("REQ-PERM-020")
def test_scopes_name_only_what_no_rule_covers_yet() -> None:
    scopes = scopes_for((AllowRule("bash", (("git", "log"),)),), bash("git log | head -5"))
    assert [s.label for s in scopes] == ["bash: head *", "bash"]
    assert [s.rule for s in scopes_for((), ToolUse("t1", "patch", {}))] == ["patch"]


def test_rule_text_quotes_odd_words() -> None:
    rule = AllowRule("bash", (("git", "status"), ("./my tool",)))
    assert rule.rule == "git status *; './my tool' *"
    assert rule.label == "bash: git status *; './my tool' *"
    assert rule.names("bash: git status *; './my tool' *") and rule.names(rule.rule)


# ---------------------------------------------------------------------------------------- the machine


@pytest.mark.req("REQ-PERM-020", "REQ-PERM-022")
def test_always_allow_with_a_prefix_rule_then_a_covered_and_an_uncovered_call() -> None:
    state, ask = asking("git status -s")
    assert [s.label for s in ask.scopes] == ["bash: git status *", "bash"]
    state, effects = transition(state, ApprovalAnswer("t1", Decision.ALWAYS_ALLOW, "git status *"))
    assert state.always_allow == (GIT_STATUS,)
    assert any(isinstance(e, RunTool) for e in effects)
    audits = {e.action: dict(e.detail) for e in effects if isinstance(e, Audit)}
    assert audits["alwaysAllowGranted"] == {"tool": "bash", "rule": "bash: git status *"}
    assert audits["approvalResolved"]["rule"] == "bash: git status *"
    notify = next(e for e in effects if isinstance(e, AlwaysAllowChanged))
    event = wire.notification_event(notify, dict)
    told = event.model_dump(mode="json", by_alias=True, include={"tool_name", "rule", "scope", "allowed"})
    assert told == {"toolName": "bash", "rule": "git status *", "scope": "prefix", "allowed": True}

    state, _ = transition(state, ToolDone("t1", "ok"))
    rid = state.next_request - 1
    state, effects = transition(state, LlmDone(rid, (bash("git status", "t2"),), "tool_use"))
    assert any(isinstance(e, RunTool) for e in effects) and not any(isinstance(e, AskApproval) for e in effects)
    state, _ = transition(state, ToolDone("t2", "ok"))
    rid = state.next_request - 1
    state, effects = transition(state, LlmDone(rid, (bash("git status; rm -rf x", "t3"),), "tool_use"))
    ask = next(e for e in effects if isinstance(e, AskApproval))
    assert [s.rule for s in ask.scopes] == ["rm *", "bash"]  # only what is not covered yet


@pytest.mark.req("REQ-PERM-020")
def test_always_allow_without_a_rule_adds_the_narrowest_and_an_unoffered_rule_is_refused() -> None:
    state, _ = asking("git status")
    same, effects = transition(state, ApprovalAnswer("t1", Decision.ALWAYS_ALLOW, "git *"))
    assert same is state and isinstance(effects[0], Reject) and effects[0].code == "no_such_rule"
    assert "'git status *', 'bash'" in effects[0].message
    assert isinstance(same.status, AwaitingApproval)
    narrow, _ = transition(state, ApprovalAnswer("t1", Decision.ALWAYS_ALLOW))
    assert narrow.always_allow == (GIT_STATUS,)
    whole, _ = transition(state, ApprovalAnswer("t1", Decision.ALWAYS_ALLOW, "bash"))
    assert whole.always_allow == (AllowRule("bash"),)


@pytest.mark.req("REQ-PERM-021", "REQ-PERM-022")
def test_revoke_one_rule_or_every_rule_of_a_tool() -> None:
    state = replace(unrestricted(), always_allow=(GIT_STATUS, LS, AllowRule("patch")))
    state, effects = transition(state, RevokeAlwaysAllow("bash", "bash: ls *"))
    assert state.always_allow == (GIT_STATUS, AllowRule("patch"))
    assert [dict(e.detail) for e in effects if isinstance(e, Audit)] == [{"tool": "bash", "rule": "bash: ls *"}]
    same, effects = transition(state, RevokeAlwaysAllow("bash", "ls *"))
    assert same is state and isinstance(effects[0], Reject) and effects[0].code == "not_always_allowed"
    state = replace(state, always_allow=(*state.always_allow, AllowRule("bash")))
    state, effects = transition(state, RevokeAlwaysAllow("bash"))
    assert state.always_allow == (AllowRule("patch"),)
    assert len([e for e in effects if isinstance(e, AlwaysAllowChanged)]) == 2


@pytest.mark.req("REQ-PERM-020", "REQ-PERM-006")
def test_restore_asks_again_with_the_scopes() -> None:
    state, _ = asking("git log -1")
    _, effects = transition(state, Restore())
    assert [s.rule for s in next(e for e in effects if isinstance(e, AskApproval)).scopes] == ["git log *", "bash"]


@pytest.mark.req("REQ-PERM-021")
def test_rules_survive_the_codec_and_old_states_with_tool_names_load_as_whole_tool_rules() -> None:
    state, _ = asking("git status")
    state = replace(state, always_allow=(GIT_STATUS, AllowRule("patch")))
    assert codec.decode_state(codec.encode_state(state), state.history) == state
    old = json.loads(codec.encode_state(state))
    old["always_allow"] = ["bash", "patch"]
    loaded = codec.decode_state(json.dumps(old), state.history)
    assert loaded.always_allow == (AllowRule("bash"), AllowRule("patch"))
    call = loaded.status.batch.current if isinstance(loaded.status, AwaitingApproval) else None
    assert call is not None and call.commands == (("git", "status"),)


@pytest.mark.req("REQ-PROTO-042")
def test_a_pending_approval_stored_under_its_old_id_name_loads_and_can_be_answered() -> None:
    state, _ = asking("git status")
    old = json.loads(codec.encode_state(state))
    old["status"]["approval_id"] = old["status"].pop("tool_use_id")
    loaded = codec.decode_state(json.dumps(old), state.history)
    assert loaded == state
    _, effects = transition(loaded, ApprovalAnswer(loaded.status.tool_use_id, Decision.ALLOW))  # type: ignore[union-attr]
    assert [e for e in effects if isinstance(e, Reject)] == []


@pytest.mark.req("REQ-PERM-019")
def test_a_newline_the_parser_would_join_into_one_command_proves_nothing() -> None:
    # tree-sitter-bash reads the last line as `git rm -rf x`; bash runs `git`, then `rm -rf x`
    assert simple_commands("git | git | git\nrm -rf x 2>/dev/null") is None
    assert simple_commands("git \\\nstatus") == (("git", "status"),)  # a continued line is one command
    assert simple_commands("git status\nls -la") == (("git", "status"), ("ls", "-la"))


# ------------------------------------------------------------------------------------------ property

WORDS = ["git", "status", "log", "rm", "-rf", "x", "ls", "-la", "npm", "run", "test", "*.py", "'a b'", "src"]
SEPARATORS = ["; ", " && ", " || ", " | ", "\n", " & ", " |& "]
PREFIXES = [("git", "status"), ("git",), ("ls",), ("npm", "run", "test"), ("rm",), ("git", "log")]


@st.composite
def command_lines(draw: st.DrawFn) -> tuple[str, list[tuple[str, ...]]]:
    """A list of simple commands, with the words bash would see for each (the ground truth)."""
    count = draw(st.integers(1, 4))
    line, truth = "", []
    for i in range(count):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
        line += (draw(st.sampled_from(SEPARATORS)) if i else "") + " ".join(words)
        truth.append(tuple(w.strip("'") for w in words))
    wrap = draw(st.sampled_from(["{}", "{}", "({})", "echo $({})", "{} > out", "X=1 {}", "{} 2>/dev/null"]))
    return wrap.format(line), truth


@pytest.mark.req("REQ-PERM-019")
@example(("git | git | git\nstatus 2>/dev/null", [("git",), ("git",), ("git",), ("status",)]), [("git",)])
@settings(max_examples=400, deadline=None)
@given(command_lines(), st.lists(st.sampled_from(PREFIXES), max_size=3))
def test_a_rule_never_allows_a_line_with_an_unmatched_simple_command(
    line: tuple[str, list[tuple[str, ...]]], prefixes: list[tuple[str, ...]]
) -> None:
    text, truth = line
    rules = tuple(AllowRule("bash", (p,)) for p in prefixes)
    if covers(rules, bash(text)):
        for words in truth:
            assert any(words[: len(p)] == p for p in prefixes), f"{text!r} ran {words} without a rule"
        assert not text.startswith(("(", "echo $(", "X=1")) and "> out" not in text


@pytest.mark.req("REQ-PERM-019")
@settings(max_examples=300, deadline=None)
@given(command_lines(), st.sampled_from(["; ", " && ", " | ", "\n", " & "]),
       st.sampled_from(["rm -rf x", "$(rm -rf x)", "`rm -rf x`", "(rm -rf x)", "<(rm -rf x)", "{ rm -rf x; }"]))
def test_an_injected_command_is_never_covered_by_rules_without_it(
    line: tuple[str, list[tuple[str, ...]]], glue: str, injected: str
) -> None:
    rules = tuple(AllowRule("bash", (p,)) for p in PREFIXES if p[0] != "rm")
    assert not covers(rules, bash(line[0] + glue + injected))
    if injected != "rm -rf x":  # a substitution as an argument runs too
        assert not covers(rules, bash(line[0] + " " + injected))


@pytest.mark.req("REQ-PERM-021", "REQ-PERM-026")
def test_a_rules_option_kinds_survive_the_codec_and_a_rule_stored_without_them_covers_no_writing_option() -> None:
    state, _ = asking("sort -o out.txt in.txt")
    rule = AllowRule("bash", (("sort",),), ("sort --output",))
    state = replace(state, always_allow=(rule,))
    assert codec.decode_state(codec.encode_state(state), state.history) == state
    old = json.loads(codec.encode_state(state))
    del old["always_allow"][0]["options"]  # stored before rules had option kinds
    loaded = codec.decode_state(json.dumps(old), state.history)
    assert loaded.always_allow == (AllowRule("bash", (("sort",),)),)
    assert not covers(loaded.always_allow, bash("sort -o x in.txt")) and covers(loaded.always_allow, bash("sort x"))
