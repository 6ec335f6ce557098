"""``transition`` as tables: (state, event) -> (state, effects), both compared whole (issue 18).

Each row starts from a state built directly (the status it is in, what it remembers) and gives the whole
expected outcome: the new state as the old one with what changed, and every effect in order, persistence
first. A mutant of a handler of the state machine changes one of them. Messages are checked for what they must say
(what happened, why, what to do next), not word for word: refusals are compared by ``refused``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest

from phoenix_lsp.core import machine, texts
from phoenix_lsp.core.effects import (
    AnswerHostCall,
    AskApproval,
    AskUpgrade,
    Audit,
    CancelLlm,
    CancelTool,
    Effect,
    PersistMessage,
    PersistState,
    Reject,
    ReportToParent,
    ReportUsage,
    RequestLlm,
    RunTool,
    SetTitle,
    SpawnAgents,
    StopAgents,
    UserCommand,
)
from phoenix_lsp.core.events import (
    AgentEnded,
    AgentUsage,
    ApprovalAnswer,
    Cancel,
    Event,
    HostCall,
    LlmDone,
    LlmFailed,
    Restore,
    RevokeAlwaysAllow,
    SetInstructions,
    SetMode,
    SetModel,
    SetPolicy,
    SetStyle,
    Stop,
    ToolDone,
    TriggerContinuation,
    UpgradeAnswer,
    UserMessage,
)
from phoenix_lsp.core.notifications import (
    AlwaysAllowChanged,
    ApprovalResolved,
    ContextExhausted,
    ContextUsage,
    ContextWarning,
    ContinuationStarted,
    ErrorReported,
    ModeChanged,
    ModelChanged,
    Notification,
    PolicyChanged,
    RetryScheduled,
    StatusChanged,
    StyleChanged,
    StyleSuggested,
    ToolRefused,
    UpgradeResolved,
    UsageReported,
)
from phoenix_lsp.core.permissions import HOST_WRITE_DISABLED, PATCH_DISABLED, SUBAGENT_WRITE_DISABLED
from phoenix_lsp.core.rules import AllowRule
from phoenix_lsp.core.state import (
    AwaitingAgents,
    AwaitingApproval,
    AwaitingLlm,
    AwaitingUpgrade,
    Batch,
    ConversationState,
    Error,
    Exhausted,
    Finished,
    Idle,
    RunningTool,
    Settings,
    StatusKind,
    Summarizing,
)
from phoenix_lsp.core.tools import ToolKind
from phoenix_lsp.core.values import (
    Actor,
    AgentSlot,
    AgentSpec,
    Decision,
    Image,
    InstructionFile,
    Message,
    Mode,
    Policy,
    Route,
    Style,
    Text,
    ToolResult,
    ToolUse,
    Usage,
    UsageTotals,
)
from tests.core.test_table import assert_declared

transition = machine.transition
R, U = Mode.RESTRICTED, Mode.UNRESTRICTED
Effects = tuple[Effect, ...]

ASKED = Message("user", (Text("do it"),))
BASH = ToolUse("t1", "bash", {"command": "make"})
LS = ToolUse("t1", "bash", {"command": "ls -l"}, commands=(("ls", "-l"),))
PATCH = ToolUse("t1", "patch", {"path": "a"})
READ = ToolUse("t2", "read_file", {"path": "a"})
READ3 = ToolUse("t3", "read_file", {"path": "b"})
BASH2 = ToolUse("t2", "bash", {"command": "make"})
UPGRADE = ToolUse("t1", "request_mode_upgrade", {"reason": "edit a"})
UPGRADE2 = ToolUse("t2", "request_mode_upgrade", {"reason": "edit a"})
SPAWN = ToolUse("t1", "spawn_agents", {"tasks": ["look at a", "look at b"]})
SUBMIT = ToolUse("t1", "submit_result", {"result": "42"})


def conv(mode: Mode = R, *, sandbox: bool = True, **fields: object) -> ConversationState:
    """A user conversation with one user message in its history (so no title is set again)."""
    base = machine.new_conversation("c1", model="m", working_directory="/w", sandbox=sandbox)
    fields.setdefault("history", (ASKED,))
    return replace(base, mode=mode, **fields)  # type: ignore[arg-type]


def child(**fields: object) -> ConversationState:
    """A sub-agent of conversation p, Restricted, with its task in the history."""
    base = machine.new_conversation("p.t9.0", model="m", working_directory="/w", sandbox=True, is_subagent=True,
                                    parent_id="p")
    fields.setdefault("history", (ASKED,))
    return replace(base, **fields)  # type: ignore[arg-type]


def assistant(*blocks: Text | ToolUse) -> Message:
    return Message("assistant", blocks)


def results(*blocks: ToolResult | Text) -> Message:
    return Message("user", blocks)


def result(call: ToolUse, text: str, error: bool = True) -> ToolResult:
    return ToolResult(call.id, text, error)


def note(*notes: str) -> Message:
    return Message("user", tuple(Text(n) for n in notes), tag="note")


def status(new: StatusKind, previous: StatusKind, mode: Mode = R) -> StatusChanged:
    return StatusChanged(new, previous, mode)


def persisted(start: int, *messages: Message) -> Effects:
    return (*(PersistMessage(start + i, m) for i, m in enumerate(messages)), PersistState())


def usage_note(used: int, window: int = 200_000) -> UsageReported:
    return UsageReported(ContextUsage(used, window, round(used / window, 4)))


def refused(message: str = "", code: str = "") -> Callable[[Effects], None]:
    """A check for a refusal: one Reject with ``code`` whose message holds each ``;``-separated part (a part
    starting with ``^`` is how the message begins)."""

    def check(effects: Effects) -> None:
        assert len(effects) == 1 and isinstance(effects[0], Reject), effects
        assert effects[0].code == code, effects[0]
        for part in message.split(";"):
            if part.startswith("^"):  # how the message begins
                assert effects[0].message.startswith(part[1:]), (part, effects[0].message)
            else:
                assert part.strip() in effects[0].message, (part, effects[0].message)

    return check


@dataclass
class Row:
    """One transition: from ``before``, ``event`` leads to ``after`` (None: unchanged, the same object) and
    ``effects`` (a tuple compared whole, or a check for a refusal)."""

    name: str
    before: ConversationState
    event: Event
    after: ConversationState | None
    effects: Effects | Callable[[Effects], None]


def check(row: Row) -> None:
    new, effects = transition(row.before, row.event)
    assert_declared(row.before, row.event, new)  # REQ-CORE-003: to a status the table declares
    if row.after is None:
        assert new is row.before, "a refused or ignored event changes nothing"
    else:
        assert new == row.after
    if callable(row.effects):
        row.effects(effects)
    else:
        assert effects == row.effects


def rows(*table: Row) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("row", table, ids=[r.name for r in table])


# ------------------------------------------------------------------------------------ user messages

FIRST = machine.new_conversation("c1", model="m", working_directory="/w", sandbox=True)
WITH_NOTE = replace(FIRST, history=(note("x"),))
IMG = Image("sha256:ab", "image/png")
LONG = "x" * 100


def asked(state: ConversationState, content: tuple[Text | Image, ...]) -> ConversationState:
    return replace(state, history=(*state.history, Message("user", content)), status=AwaitingLlm(1), next_request=2,
                   turns=0)


@pytest.mark.req("REQ-BED-002", "REQ-BED-013", "REQ-ATTACH-003")
@rows(
    Row("first message titles", FIRST, UserMessage(LONG), asked(FIRST, (Text(LONG),)),
        (*persisted(0, Message("user", (Text(LONG),))), status("awaiting_llm", "idle"), SetTitle("x" * 80),
         RequestLlm(1))),
    Row("a note is not a user message", WITH_NOTE, UserMessage("hi"), asked(WITH_NOTE, (Text("hi"),)),
        (*persisted(1, Message("user", (Text("hi"),))), status("awaiting_llm", "idle"), SetTitle("hi"),
         RequestLlm(1))),
    Row("later message, turns reset, text then attachments then images", conv(turns=4, next_request=7),
        UserMessage("look", (IMG,), ("file a",)),
        replace(conv(), history=(ASKED, Message("user", (Text("look"), Text("file a"), IMG))),
                status=AwaitingLlm(7), next_request=8, turns=0),
        (*persisted(1, Message("user", (Text("look"), Text("file a"), IMG))), status("awaiting_llm", "idle"),
         RequestLlm(7))),
    Row("an image alone", conv(), UserMessage("", (IMG,)), asked(conv(), (IMG,)),
        (*persisted(1, Message("user", (IMG,))), status("awaiting_llm", "idle"), RequestLlm(1))),
    Row("an attachment alone", conv(), UserMessage(" ", (), ("file a",)), asked(conv(), (Text(" "), Text("file a"))),
        (*persisted(1, Message("user", (Text(" "), Text("file a")))), status("awaiting_llm", "idle"),
         RequestLlm(1))),
    Row("from the error state", conv(status=Error("boom")), UserMessage("again"),
        asked(conv(), (Text("again"),)),
        (*persisted(1, Message("user", (Text("again"),))), status("awaiting_llm", "error"), RequestLlm(1))),
    Row("empty", conv(), UserMessage("  "), None, refused("empty;text, an image or an attachment", "empty_message")),
    Row("exhausted", conv(status=Exhausted("s")), UserMessage("hi"), None,
        refused("context window is full;no more messages;new conversation;continueFrom", "context_exhausted")),
    Row("a sub-agent's /execute is a message", child(), UserMessage("/execute"),
        replace(child(), history=(ASKED, Message("user", (Text("/execute"),))), status=AwaitingLlm(1),
                next_request=2),
        (*persisted(1, Message("user", (Text("/execute"),))), status("awaiting_llm", "idle"), RequestLlm(1))),
)
def test_user_message(row: Row) -> None:
    check(row)


def mode_effects(mode: Mode, previous: Mode, via: str, actor: Actor = Actor.USER) -> Effects:
    return (
        ModeChanged(mode, previous, actor, via),
        Audit(actor, "modeChanged", {"mode": mode.value, "via": via}),
    )


@pytest.mark.req("REQ-LAYER-002", "REQ-BED-017", "REQ-BED-014")
@rows(
    Row("/execute", conv(), UserMessage(" /execute "),
        replace(conv(U), history=(ASKED, note(texts.MODE_NOTE[U]))),
        (*persisted(1, note(texts.MODE_NOTE[U])), status("idle", "idle", U), *mode_effects(U, R, "/execute"),
         UserCommand("execute"))),
    Row("/plan", conv(U), UserMessage("/plan"), replace(conv(R), history=(ASKED, note(texts.MODE_NOTE[R]))),
        (*persisted(1, note(texts.MODE_NOTE[R])), status("idle", "idle", R), *mode_effects(R, U, "/plan"),
         UserCommand("plan"))),
    Row("/execute when already", conv(U), UserMessage("/execute"), None, (UserCommand("execute"),)),
    Row("/plan without the sandbox", conv(U, sandbox=False), UserMessage("/plan"), None,
        refused("Landlock;Unrestricted", "sandbox_unavailable")),
    Row("/execute while busy notes it for after the batch", conv(status=AwaitingLlm(3)), UserMessage("/execute"),
        conv(U, status=AwaitingLlm(3), notes=(texts.MODE_NOTE[U],)),
        (PersistState(), status("awaiting_llm", "awaiting_llm", U), *mode_effects(U, R, "/execute"),
         UserCommand("execute"))),
    Row("setMode from idle", conv(), SetMode(U), replace(conv(U), history=(ASKED, note(texts.MODE_NOTE[U]))),
        (*persisted(1, note(texts.MODE_NOTE[U])), status("idle", "idle", U), *mode_effects(U, R, "setMode"))),
    Row("setMode to the same mode", conv(), SetMode(R), None, ()),
    Row("setMode of a sub-agent", child(), SetMode(U), None, refused("sub-agent", "subagent_mode")),
    Row("setMode Restricted without sandbox", conv(U, sandbox=False), SetMode(R), None,
        refused("Restricted mode needs the kernel sandbox", "sandbox_unavailable")),
)
def test_mode_commands(row: Row) -> None:
    check(row)


# ------------------------------------------------------------------------------------------- busy


def approval(call: ToolUse = BASH, *calls: ToolUse, mode: Mode = U, **fields: object) -> ConversationState:
    return conv(mode, status=AwaitingApproval(Batch((call, *calls)), call.id),
                history=(ASKED, assistant(call, *calls)), **fields)


@pytest.mark.req("REQ-BED-002", "REQ-PERM-006")
@pytest.mark.parametrize(
    ("state", "parts"),
    [
        (conv(status=AwaitingLlm(1)), ["working (awaiting_llm)"]),
        (conv(status=Summarizing(1)), ["working (summarizing)"]),
        (conv(status=RunningTool(Batch((BASH,)))), ["working (running_tool)"]),
        (approval(), ["waiting for your approval of bash (tool call t1)"]),
        (conv(status=AwaitingUpgrade(Batch((UPGRADE,)), "edit a")), ["your answer", "Unrestricted mode"]),
        (conv(status=AwaitingAgents(Batch((SPAWN,)), ())), ["working (awaiting_agents)"]),
    ],
    ids=["llm", "summary", "tool", "approval", "upgrade", "agents"],
)
def test_the_busy_refusal_says_what_it_waits_for_and_what_to_do(state: ConversationState, parts: list[str]) -> None:
    for event in (UserMessage("hi"), TriggerContinuation(), SetModel("n", 1)):
        new, effects = transition(state, event)
        assert new is state and len(effects) == 1 and isinstance(effects[0], Reject)
        assert effects[0].code == "busy"
        message = effects[0].message
        assert message.startswith("The agent is busy: ")
        assert all(part in message for part in parts), message
        assert "phoenix/cancel" in message and "answer the pending request" in message and "again" in message


@pytest.mark.req("REQ-CORE-003", "REQ-CORE-004")
@rows(
    Row("idle", conv(), ToolDone("t1", "x"), None,
        refused("ToolDone is not accepted while the conversation is idle; nothing was changed", "illegal_event")),
    Row("error", conv(status=Error("e")), AgentEnded("a", True, "r"), None,
        refused("AgentEnded is not accepted while the conversation is error", "illegal_event")),
    Row("finished", child(status=Finished(True, "r")), UserMessage("hi"), None,
        refused("UserMessage is not accepted while the conversation is finished", "illegal_event")),
    Row("exhausted", conv(status=Exhausted("s")), TriggerContinuation(), None,
        refused("TriggerContinuation is not accepted;context window is full;continueFrom", "context_exhausted")),
)
def test_an_event_the_status_does_not_take_is_refused(row: Row) -> None:
    check(row)


# ------------------------------------------------------------------------------------ LLM responses

WINDOW = 1000
SMALL = Settings(context_window=WINDOW)


def waiting(state: ConversationState, rid: int = 1) -> ConversationState:
    return replace(state, status=AwaitingLlm(rid), next_request=rid + 1)


def done(rid: int, *content: Text | ToolUse, stop: str = "end_turn", tokens: int = 100) -> LlmDone:
    return LlmDone(rid, content, stop, Usage(input_tokens=tokens - 10, output_tokens=10))


def counted(state: ConversationState, tokens: int, **fields: object) -> ConversationState:
    """``state`` after a response of ``tokens`` tokens (one request more in its totals)."""
    usage = Usage(input_tokens=tokens - 10, output_tokens=10)
    return replace(state, context_tokens=tokens, turns=state.turns + 1, usage=state.usage.add(usage),
                   last_usage=usage, **fields)  # type: ignore[arg-type]


W = waiting(conv(settings=SMALL))
WU = waiting(conv(U, settings=SMALL, policy=Policy.AUTO))
HELLO = assistant(Text("hello"))
Z = waiting(conv(settings=Settings(context_window=0)))


@pytest.mark.req("REQ-BED-003", "REQ-BED-004", "REQ-BED-012", "REQ-BED-019", "REQ-BED-023")
@rows(
    Row("text ends the turn", W, done(1, Text("hello")),
        counted(replace(W, history=(ASKED, HELLO)), 100, status=Idle()),
        (*persisted(1, HELLO), usage_note(100, WINDOW), status("idle", "awaiting_llm"))),
    Row("max_tokens goes on", W, done(1, Text("hello"), stop="max_tokens"),
        counted(replace(W, history=(ASKED, HELLO)), 100, status=AwaitingLlm(2), next_request=3),
        (*persisted(1, HELLO), usage_note(100, WINDOW), RequestLlm(2))),
    Row("pause_turn goes on", W, done(1, Text("hello"), stop="pause_turn"),
        counted(replace(W, history=(ASKED, HELLO)), 100, status=AwaitingLlm(2), next_request=3),
        (*persisted(1, HELLO), usage_note(100, WINDOW), RequestLlm(2))),
    Row("an empty max_tokens response ends the turn", W, done(1, stop="max_tokens"),
        counted(W, 100, status=Idle()), (PersistState(), usage_note(100, WINDOW), status("idle", "awaiting_llm"))),
    Row("a tool call runs", WU, done(1, Text("a"), READ, stop="tool_use"),
        counted(replace(WU, history=(ASKED, assistant(Text("a"), READ))), 100, status=RunningTool(Batch((READ,)))),
        (*persisted(1, assistant(Text("a"), READ)), usage_note(100, WINDOW), status("running_tool", "awaiting_llm", U),
         RunTool(READ, U))),
    Row("warning at 80% exactly, once", W, done(1, Text("hello"), tokens=800),
        counted(replace(W, history=(ASKED, HELLO)), 800, status=Idle(), warned=True),
        (*persisted(1, HELLO), usage_note(800, WINDOW), status("idle", "awaiting_llm"),
         ContextWarning(ContextUsage(800, WINDOW, 0.8)))),
    Row("no second warning", replace(W, warned=True), done(1, Text("hello"), tokens=850),
        counted(replace(W, history=(ASKED, HELLO), warned=True), 850, status=Idle()),
        (*persisted(1, HELLO), usage_note(850, WINDOW), status("idle", "awaiting_llm"))),
    Row("below 80%", W, done(1, Text("hello"), tokens=799),
        counted(replace(W, history=(ASKED, HELLO)), 799, status=Idle()),
        (*persisted(1, HELLO), usage_note(799, WINDOW), status("idle", "awaiting_llm"))),
    Row("continuation at 90% exactly: tools skipped, summary asked", WU, done(1, READ, READ3, tokens=900),
        counted(replace(WU, history=(
            ASKED, assistant(READ, READ3),
            results(ToolResult("t2", texts.CONTEXT_NOT_EXECUTED, True), ToolResult("t3", texts.CONTEXT_NOT_EXECUTED,
                                                                                   True)))),
                900, status=Summarizing(2, 0, ("read_file", "read_file")), next_request=3),
        (*persisted(1, assistant(READ, READ3), results(ToolResult("t2", texts.CONTEXT_NOT_EXECUTED, True),
                                                       ToolResult("t3", texts.CONTEXT_NOT_EXECUTED, True))),
         usage_note(900, WINDOW), status("summarizing", "awaiting_llm", U),
         ContinuationStarted(ContextUsage(900, WINDOW, 0.9)),
         RequestLlm(2, purpose="summary", instruction=texts.summary_instruction(("read_file", "read_file"))))),
    Row("continuation writes pending notes", replace(W, notes=("n1",)), done(1, Text("hello"), tokens=950),
        counted(replace(W, history=(ASKED, HELLO, note("n1"))), 950, status=Summarizing(2, 0, ()), next_request=3),
        (*persisted(1, HELLO, note("n1")), usage_note(950, WINDOW), status("summarizing", "awaiting_llm"),
         ContinuationStarted(ContextUsage(950, WINDOW, 0.95)),
         RequestLlm(2, purpose="summary", instruction=texts.summary_instruction(())))),
    Row("a zero window counts as one token: one token fills it", Z, LlmDone(1, (), "end_turn", Usage(1)),
        replace(Z, context_tokens=1, turns=1, usage=UsageTotals(1, 1), last_usage=Usage(1), status=Summarizing(2),
                next_request=3),
        (PersistState(), UsageReported(ContextUsage(1, 0, 0)),
         status("summarizing", "awaiting_llm"),
         ContinuationStarted(ContextUsage(1, 0, 0)),
         RequestLlm(2, purpose="summary", instruction=texts.summary_instruction(())))),
    Row("stale", W, done(5, Text("late")), None, refused("LLM response 5 is stale (now 1)", "stale")),
)
def test_llm_done(row: Row) -> None:
    check(row)


SUMMARIZING = replace(conv(settings=SMALL), status=Summarizing(4, 1, ("bash",)), next_request=5)


@pytest.mark.req("REQ-BED-020", "REQ-BED-021")
@rows(
    Row("the summary", SUMMARIZING, done(4, Text(" We did X. "), Text("Next Y. ")),
        counted(replace(SUMMARIZING, history=(ASKED, Message("assistant", (Text("We did X. Next Y."),),
                                                              tag="continuation"))), 100,
                status=Exhausted("We did X. Next Y.")),
        (*persisted(1, Message("assistant", (Text("We did X. Next Y."),), tag="continuation")),
         usage_note(100, WINDOW), status("exhausted", "summarizing"),
         ContextExhausted("We did X. Next Y.", False))),
)
def test_summary(row: Row) -> None:
    check(row)


@pytest.mark.req("REQ-BED-020")
def test_an_empty_summary_falls_back_to_one_that_says_why() -> None:
    state, effects = transition(SUMMARIZING, done(4, READ))
    assert isinstance(state.status, Exhausted)
    summary = state.status.summary
    assert summary == texts.SUMMARY_FALLBACK.format(reason="the model returned no text")
    assert "no summary" in summary.lower() and "returned no text" in summary and "new conversation" in summary
    assert state.history[-1] == Message("assistant", (Text(summary),), tag="continuation")
    assert ContextExhausted(summary, False) in effects


# ------------------------------------------------------------------------------------------ sub-agents

CW = waiting(child(settings=replace(SMALL, max_turns=3)))


def finished(state: ConversationState, ok: bool, result: str) -> ConversationState:
    return replace(state, status=Finished(ok, result))


def report(ok: bool, result: str) -> ReportToParent:
    return ReportToParent("p", "p.t9.0", ok, result)


def usage_report(tokens: int) -> ReportUsage:
    return ReportUsage("p", "p.t9.0", Usage(input_tokens=tokens - 10, output_tokens=10))


@pytest.mark.req("REQ-BED-008", "REQ-BED-024", "REQ-BED-009")
@rows(
    Row("ends without submitting", CW, done(1, Text("hello")),
        finished(counted(replace(CW, history=(ASKED, HELLO)), 100), False, texts.NO_SUBMIT),
        (*persisted(1, HELLO), usage_note(100, WINDOW), status("finished", "awaiting_llm"), usage_report(100),
         report(False, texts.NO_SUBMIT))),
    Row("submits", CW, done(1, SUBMIT, READ, stop="tool_use"),
        finished(counted(replace(CW, history=(ASKED, assistant(SUBMIT, READ), results(
            ToolResult("t1", texts.SUBMITTED), ToolResult("t2", texts.AFTER_SUBMIT, True)))), 100), True, "42"),
        (*persisted(1, assistant(SUBMIT, READ), results(ToolResult("t1", texts.SUBMITTED),
                                                        ToolResult("t2", texts.AFTER_SUBMIT, True))),
         usage_note(100, WINDOW), status("finished", "awaiting_llm"), usage_report(100), report(True, "42"))),
    Row("a bad submit", CW, done(1, ToolUse("t1", "submit_result", {"result": 4}), stop="tool_use"),
        counted(replace(CW, history=(ASKED, assistant(ToolUse("t1", "submit_result", {"result": 4})), results(
            ToolResult("t1", "submit_result needs a 'result' string.", True)))), 100, status=AwaitingLlm(2),
            next_request=3),
        (*persisted(1, assistant(ToolUse("t1", "submit_result", {"result": 4})),
                    results(ToolResult("t1", "submit_result needs a 'result' string.", True))),
         usage_note(100, WINDOW), usage_report(100), RequestLlm(2))),
    Row("a bad submit, then the next call", CW, done(1, ToolUse("t1", "submit_result", {}), READ, stop="tool_use"),
        counted(replace(CW, history=(ASKED, assistant(ToolUse("t1", "submit_result", {}), READ))), 100,
                status=RunningTool(Batch((ToolUse("t1", "submit_result", {}), READ), (
                    ToolResult("t1", "submit_result needs a 'result' string.", True),)))),
        (*persisted(1, assistant(ToolUse("t1", "submit_result", {}), READ)), usage_note(100, WINDOW),
         status("running_tool", "awaiting_llm"), usage_report(100), RunTool(READ, R))),
    Row("the last turn may still submit", replace(CW, turns=2), done(1, SUBMIT, stop="tool_use"),
        finished(counted(replace(CW, turns=2, history=(ASKED, assistant(SUBMIT), results(
            ToolResult("t1", texts.SUBMITTED)))), 100), True, "42"),
        (*persisted(1, assistant(SUBMIT), results(ToolResult("t1", texts.SUBMITTED))),
         usage_note(100, WINDOW), status("finished", "awaiting_llm"), usage_report(100), report(True, "42"))),
    Row("the turn limit", replace(CW, turns=2), done(1, READ, stop="tool_use"),
        finished(counted(replace(CW, turns=2, history=(ASKED, assistant(READ), results(
            ToolResult("t2", texts.TURN_LIMIT.format(turns=3), True)))), 100), False, texts.TURN_LIMIT.format(turns=3)),
        (*persisted(1, assistant(READ), results(ToolResult("t2", texts.TURN_LIMIT.format(turns=3), True))),
         usage_note(100, WINDOW), status("finished", "awaiting_llm"), usage_report(100),
         report(False, texts.TURN_LIMIT.format(turns=3)))),
    Row("one turn before the limit", replace(CW, turns=1), done(1, READ, stop="tool_use"),
        counted(replace(CW, turns=1, history=(ASKED, assistant(READ))), 100, status=RunningTool(Batch((READ,)))),
        (*persisted(1, assistant(READ)), usage_note(100, WINDOW), status("running_tool", "awaiting_llm"),
         usage_report(100), RunTool(READ, R))),
    Row("context exhausted", CW, done(1, READ, stop="tool_use", tokens=900),
        finished(counted(replace(CW, history=(ASKED, assistant(READ), results(
            ToolResult("t2", texts.CONTEXT_NOT_EXECUTED, True)))), 900), False,
            texts.CONTEXT_EXHAUSTED_AGENT.format(percent=90)),
        (*persisted(1, assistant(READ), results(ToolResult("t2", texts.CONTEXT_NOT_EXECUTED, True))),
         usage_note(900, WINDOW), status("finished", "awaiting_llm"), usage_report(900),
         report(False, texts.CONTEXT_EXHAUSTED_AGENT.format(percent=90)))),
    Row("a sub-agent's patch is refused: it reports instead", CW, done(1, PATCH, stop="tool_use"),
        counted(replace(CW, history=(ASKED, assistant(PATCH), results(
            result(PATCH, SUBAGENT_WRITE_DISABLED.format(tool="patch"))))), 100, status=AwaitingLlm(2),
            next_request=3),
        (*persisted(1, assistant(PATCH), results(result(PATCH, SUBAGENT_WRITE_DISABLED.format(tool="patch")))),
         usage_note(100, WINDOW), usage_report(100),
         ToolRefused("t1", "patch"),
         Audit(Actor.SYSTEM, "toolRefused", {"tool": "patch", "by": "mode"}), RequestLlm(2))),
    Row("a sub-agent cannot summarize", child(), TriggerContinuation(), None,
        refused("Sub-agents do not produce continuation summaries", "subagent")),
    Row("nor change its model", child(), SetModel("n", 1), None, refused("parent's model;nothing was changed",
                                                                         "subagent")),
)
def test_subagent(row: Row) -> None:
    check(row)


@pytest.mark.req("REQ-BED-008")
def test_the_failure_texts_say_why_and_what_next() -> None:
    assert "submit_result" in texts.NO_SUBMIT
    assert "(3)" in texts.TURN_LIMIT.format(turns=3) and "submit_result" in texts.TURN_LIMIT
    assert "90%" in texts.CONTEXT_EXHAUSTED_AGENT.format(percent=90)
    assert "narrower task" in texts.CONTEXT_EXHAUSTED_AGENT


# ----------------------------------------------------------------------------------------- failures

RETRY = Settings(max_retries=2, retry_base_ms=100, context_window=WINDOW)
WF = waiting(conv(settings=RETRY), 3)


def retry_note(attempt: int, delay: int, reason: str = "overloaded") -> RetryScheduled:
    return RetryScheduled(attempt, 2, delay, reason)


@pytest.mark.req("REQ-BED-006", "REQ-BED-020")
@rows(
    Row("first retry", WF, LlmFailed(3, True, "overloaded"),
        replace(WF, status=AwaitingLlm(4, 1), next_request=5),
        (PersistState(), retry_note(1, 100), RequestLlm(4, 1, 100))),
    Row("second retry doubles", replace(WF, status=AwaitingLlm(3, 1)), LlmFailed(3, True, "overloaded"),
        replace(WF, status=AwaitingLlm(4, 2), next_request=5),
        (PersistState(), retry_note(2, 200), RequestLlm(4, 2, 200))),
    Row("retries used up", replace(WF, status=AwaitingLlm(3, 2)), LlmFailed(3, True, "overloaded"),
        replace(WF, status=Error("The LLM request failed after 2 retries: overloaded. Send a message to try again.")),
        (PersistState(), ErrorReported("The LLM request failed after 2 retries: overloaded. Send a "
                                          "message to try again."),
         status("error", "awaiting_llm"))),
    Row("not retryable", WF, LlmFailed(3, False, "bad key", 401),
        replace(WF, status=Error("The LLM request failed: bad key.")),
        (PersistState(), ErrorReported("The LLM request failed: bad key."),
         status("error", "awaiting_llm"))),
    Row("the reason's own full stop and spaces are not doubled", WF,
        LlmFailed(3, False, "  no access to model X. \n", 403),
        replace(WF, status=Error("The LLM request failed:   no access to model X.")),
        (PersistState(), ErrorReported("The LLM request failed:   no access to model X."),
         status("error", "awaiting_llm"))),
    Row("not retryable writes pending notes", replace(WF, notes=("n",)), LlmFailed(3, False, "bad key"),
        replace(WF, status=Error("The LLM request failed: bad key."), history=(ASKED, note("n"))),
        (*persisted(1, note("n")), ErrorReported("The LLM request failed: bad key."),
         status("error", "awaiting_llm"))),
    Row("a summary retry asks for the summary again", replace(WF, status=Summarizing(3, 0, ("bash",))),
        LlmFailed(3, True, "overloaded"),
        replace(WF, status=Summarizing(4, 1, ("bash",)), next_request=5),
        (PersistState(), retry_note(1, 100),
         RequestLlm(4, 1, 100, "summary", texts.summary_instruction(("bash",))))),
    Row("a failed summary falls back", replace(WF, status=Summarizing(3, 2)), LlmFailed(3, True, "overloaded"),
        replace(WF, status=Exhausted(texts.SUMMARY_FALLBACK.format(reason="overloaded")), history=(
            ASKED, Message("assistant", (Text(texts.SUMMARY_FALLBACK.format(reason="overloaded")),),
                           tag="continuation"))),
        (*persisted(1, Message("assistant", (Text(texts.SUMMARY_FALLBACK.format(reason="overloaded")),),
                               tag="continuation")), status("exhausted", "summarizing"))),
    Row("a sub-agent fails", waiting(child(settings=RETRY), 3), LlmFailed(3, False, "bad key"),
        replace(waiting(child(settings=RETRY), 3), status=Finished(False, "The LLM request failed: bad key.")),
        (PersistState(), status("finished", "awaiting_llm"), report(False, "The LLM request failed: bad key."))),
    Row("stale", WF, LlmFailed(2, True, "x"), None, refused("LLM failure 2 is stale (now 3)", "stale")),
)
def test_llm_failed(row: Row) -> None:
    check(row)


# ------------------------------------------------------------------------------------------- tools


def running(*calls: ToolUse, answered: tuple[ToolResult, ...] = (), mode: Mode = U, **fields: object
            ) -> ConversationState:
    return conv(mode, status=RunningTool(Batch(calls, answered)), history=(ASKED, assistant(*calls)), **fields)


READ1 = ToolUse("t1", "read_file", {"path": "x"})
RT = running(READ1, READ, policy=Policy.AUTO)


@pytest.mark.req("REQ-BED-004", "REQ-PATCH-009", "REQ-SEC-002")
@rows(
    Row("the next call starts", RT, ToolDone("t1", "A"),
        replace(RT, status=RunningTool(Batch((READ1, READ), (ToolResult("t1", "A"),)))),
        (PersistState(), RunTool(READ, U))),
    Row("the last result closes the batch", replace(RT, status=RunningTool(Batch((READ1, READ),
                                                                                 (ToolResult("t1", "A"),)))),
        ToolDone("t2", "B", is_error=True),
        replace(RT, history=(ASKED, assistant(READ1, READ), results(ToolResult("t1", "A"),
                                                                    ToolResult("t2", "B", True))),
                status=AwaitingLlm(1), next_request=2),
        (*persisted(2, results(ToolResult("t1", "A"), ToolResult("t2", "B", True))),
         status("awaiting_llm", "running_tool", U), RequestLlm(1))),
    Row("a closed batch carries the pending notes", running(READ1, notes=("n1", "n2")), ToolDone("t1", "A"),
        replace(running(READ1), history=(ASKED, assistant(READ1), results(ToolResult("t1", "A"), Text("n1"),
                                                                          Text("n2"))),
                status=AwaitingLlm(1), next_request=2),
        (*persisted(2, results(ToolResult("t1", "A"), Text("n1"), Text("n2"))), status("awaiting_llm", "running_tool",
                                                                                      U), RequestLlm(1))),
    Row("refused by the sandbox is audited", running(READ1, READ, mode=R), ToolDone("t1", "EACCES", True, True),
        replace(running(READ1, READ, mode=R), status=RunningTool(Batch((READ1, READ),
                                                                       (ToolResult("t1", "EACCES", True),)))),
        (PersistState(), Audit(Actor.SYSTEM, "toolRefused", {"tool": "read_file", "by": "sandbox"}),
         RunTool(READ, R))),
    Row("stale", RT, ToolDone("t2", "B"), None, refused("Tool result t2 is stale (running t1)", "stale")),
)
def test_tool_done(row: Row) -> None:
    check(row)


def dispatched(calls: tuple[ToolUse, ...], state: ConversationState = WU) -> tuple[ConversationState, Effects]:
    """The outcome of a response with ``calls``, less the usage bookkeeping every response has."""
    new, effects = transition(state, done(1, *calls, stop="tool_use"))
    return replace(new, context_tokens=0, turns=0, usage=UsageTotals(), last_usage=None), effects


def after(state: ConversationState, calls: tuple[ToolUse, ...], *more: Message, **fields: object
          ) -> ConversationState:
    return replace(state, history=(*state.history, assistant(*calls), *more), **fields)  # type: ignore[arg-type]


UNKNOWN = ToolUse("t1", "format_disk", {})
BAD = ToolUse("t1", "bash", {}, input_error="Invalid bash input: 'command' is required.")
WI = waiting(conv(U, settings=SMALL))  # Unrestricted, interactive
WR = waiting(conv(R, settings=SMALL))  # Restricted
UNKNOWN_MESSAGE = ("Unknown tool 'format_disk': this conversation has no such tool. Use one of: read_file, "
                   "list_directory, search_files, bash, patch, request_mode_upgrade, spawn_agents.")


@pytest.mark.req("REQ-SEC-003", "REQ-PERM-002", "REQ-PATCH-009", "REQ-CORE-008", "REQ-BED-015", "REQ-BED-008")
@pytest.mark.parametrize(
    ("start", "calls", "expected"),
    [
        (WI, (UNKNOWN,), lambda s: (
            after(s, (UNKNOWN,), results(result(UNKNOWN, UNKNOWN_MESSAGE)), status=AwaitingLlm(2), next_request=3),
            (RequestLlm(2),))),
        (WI, (BAD,), lambda s: (
            after(s, (BAD,), results(result(BAD, BAD.input_error or "")), status=AwaitingLlm(2), next_request=3),
            (RequestLlm(2),))),
        (WR, (PATCH, READ), lambda s: (
            after(s, (PATCH, READ), status=RunningTool(Batch((PATCH, READ), (result(PATCH, PATCH_DISABLED),)))),
            (status("running_tool", "awaiting_llm", R),
             ToolRefused("t1", "patch"),
             Audit(Actor.SYSTEM, "toolRefused", {"tool": "patch", "by": "mode"}), RunTool(READ, R)))),
        (WI, (BASH, READ), lambda s: (
            after(s, (BASH, READ), status=AwaitingApproval(Batch((BASH, READ)), "t1")),
            (status("awaiting_approval", "awaiting_llm", U), AskApproval(BASH, (AllowRule("bash"),)),
             Audit(Actor.AGENT, "approvalRequested", {"tool": "bash", "toolUseId": "t1"})))),
        (WI, (LS,), lambda s: (
            after(s, (LS,), status=AwaitingApproval(Batch((LS,)), "t1")),
            (status("awaiting_approval", "awaiting_llm", U),
             AskApproval(LS, (AllowRule("bash", (("ls",),)), AllowRule("bash"))),
             Audit(Actor.AGENT, "approvalRequested", {"tool": "bash", "toolUseId": "t1"})))),
        (WR, (UPGRADE, READ), lambda s: (
            after(s, (UPGRADE, READ), status=AwaitingUpgrade(Batch((UPGRADE, READ)), "edit a")),
            (status("awaiting_upgrade", "awaiting_llm", R), AskUpgrade("t1", "edit a"),
             Audit(Actor.AGENT, "upgradeRequested", {"reason": "edit a"})))),
        (WI, (UPGRADE,), lambda s: (
            after(s, (UPGRADE,), results(result(UPGRADE, texts.ALREADY_UNRESTRICTED)), status=AwaitingLlm(2),
                  next_request=3), (RequestLlm(2),))),
        (WR, (ToolUse("t1", "request_mode_upgrade", {"reason": " "}),), lambda s: (
            after(s, (ToolUse("t1", "request_mode_upgrade", {"reason": " "}),), results(ToolResult(
                "t1", "request_mode_upgrade needs a non-empty 'reason' string.", True)), status=AwaitingLlm(2),
                next_request=3), (RequestLlm(2),))),
        (WR, (ToolUse("t1", "request_mode_upgrade", {"reason": 3}),), lambda s: (
            after(s, (ToolUse("t1", "request_mode_upgrade", {"reason": 3}),), results(ToolResult(
                "t1", "request_mode_upgrade needs a non-empty 'reason' string.", True)), status=AwaitingLlm(2),
                next_request=3), (RequestLlm(2),))),
        (WI, (SPAWN,), lambda s: (
            after(s, (SPAWN,), status=AwaitingAgents(Batch((SPAWN,)), (AgentSlot("c1.t1.0", "look at a"),
                                                                        AgentSlot("c1.t1.1", "look at b")))),
            (status("awaiting_agents", "awaiting_llm", U),
             SpawnAgents("t1", (AgentSpec("c1.t1.0", "look at a"), AgentSpec("c1.t1.1", "look at b")), R)))),
        (waiting(conv(U, sandbox=False, settings=SMALL)), (SPAWN,), lambda s: (
            after(s, (SPAWN,), status=AwaitingAgents(Batch((SPAWN,)), (AgentSlot("c1.t1.0", "look at a"),
                                                                        AgentSlot("c1.t1.1", "look at b")))),
            (status("awaiting_agents", "awaiting_llm", U),
             SpawnAgents("t1", (AgentSpec("c1.t1.0", "look at a"), AgentSpec("c1.t1.1", "look at b")), U)))),
        (WR, (PATCH, UPGRADE2), lambda s: (
            after(s, (PATCH, UPGRADE2), status=AwaitingUpgrade(Batch((PATCH, UPGRADE2),
                                                                     (result(PATCH, PATCH_DISABLED),)), "edit a")),
            (status("awaiting_upgrade", "awaiting_llm", R),
             ToolRefused("t1", "patch"),
             Audit(Actor.SYSTEM, "toolRefused", {"tool": "patch", "by": "mode"}),
             AskUpgrade("t2", "edit a"), Audit(Actor.AGENT, "upgradeRequested", {"reason": "edit a"})))),
        (WU, (UPGRADE, READ), lambda s: (
            after(s, (UPGRADE, READ), status=RunningTool(Batch((UPGRADE, READ), (
                result(UPGRADE, texts.ALREADY_UNRESTRICTED),)))),
            (status("running_tool", "awaiting_llm", U), RunTool(READ, U)))),
        (WU, (ToolUse("t1", "spawn_agents", {"tasks": []}), READ), lambda s: (
            after(s, (ToolUse("t1", "spawn_agents", {"tasks": []}), READ), status=RunningTool(Batch((
                ToolUse("t1", "spawn_agents", {"tasks": []}), READ), (ToolResult(
                    "t1", "spawn_agents needs 'tasks': a non-empty list of task descriptions (strings).", True),)))),
            (status("running_tool", "awaiting_llm", U), RunTool(READ, U)))),
        (WR, (ToolUse("t1", "request_mode_upgrade", {}), READ), lambda s: (
            after(s, (ToolUse("t1", "request_mode_upgrade", {}), READ), status=RunningTool(Batch((
                ToolUse("t1", "request_mode_upgrade", {}), READ), (ToolResult(
                    "t1", "request_mode_upgrade needs a non-empty 'reason' string.", True),)))),
            (status("running_tool", "awaiting_llm", R), RunTool(READ, R)))),
    ],
    ids=["unknown", "bad input", "patch refused", "ask", "ask bash prefix", "upgrade", "already",
         "empty reason", "reason not a string", "spawn", "spawn without sandbox", "refused then upgrade",
         "already, then the next call", "a bad spawn, then the next call", "no reason, then the next call"],
)
def test_dispatch(
    start: ConversationState, calls: tuple[ToolUse, ...],
    expected: Callable[[ConversationState], tuple[ConversationState, Effects]],
) -> None:
    state, effects = dispatched(calls, start)
    want_state, want_effects = expected(start)
    assert state == want_state
    # the response's persistence and usage come first; the dispatch's effects after them
    messages = want_state.history[len(start.history):]
    assert effects[: len(messages) + 2] == (*persisted(1, *messages), usage_note(100, WINDOW))
    assert effects[len(messages) + 2:] == want_effects


@pytest.mark.req("REQ-BED-008")
@pytest.mark.parametrize(
    ("tasks", "error"),
    [
        (None, "spawn_agents needs 'tasks': a non-empty list of task descriptions (strings)."),
        ("a", "spawn_agents needs 'tasks': a non-empty list of task descriptions (strings)."),
        ([], "spawn_agents needs 'tasks': a non-empty list of task descriptions (strings)."),
        (["t"] * 11, "spawn_agents accepts at most 10 tasks per call; split the work."),
        (["a", " "], "spawn_agents: every task must be a non-empty string."),
        (["a", 3], "spawn_agents: every task must be a non-empty string."),
    ],
)
def test_a_bad_spawn_is_answered_with_what_is_wrong(tasks: object, error: str) -> None:
    call = ToolUse("t1", "spawn_agents", {} if tasks is None else {"tasks": tasks})
    state, effects = dispatched((call,), WI)
    assert state == after(WI, (call,), results(result(call, error)), status=AwaitingLlm(2), next_request=3)
    assert effects[-1] == RequestLlm(2)


@pytest.mark.req("REQ-BED-008")
def test_ten_tasks_are_allowed() -> None:
    call = ToolUse("t1", "spawn_agents", {"tasks": [f"task {i}" for i in range(10)]})
    state, _ = dispatched((call,), WI)
    assert isinstance(state.status, AwaitingAgents) and len(state.status.agents) == 10
    assert state.status.agents[9] == AgentSlot("c1.t1.9", "task 9")


# ------------------------------------------------------------------------------------------- approvals

AP = approval(BASH, READ)
LSAP = approval(LS)
PREFIX = AllowRule("bash", (("ls",),))


def resolved(decision: str, request: str = "approval", tool_use_id: str = "t1") -> Notification:
    if request == "upgrade":
        return UpgradeResolved(tool_use_id, decision)  # type: ignore[arg-type]
    return ApprovalResolved(tool_use_id, decision)  # type: ignore[arg-type]


def answered(tool: str, decision: str, **more: object) -> Audit:
    return Audit(Actor.USER, "approvalResolved", {"tool": tool, "decision": decision, **more})


@pytest.mark.req("REQ-PERM-002", "REQ-PERM-003", "REQ-PERM-004", "REQ-PERM-020", "REQ-PERM-022", "REQ-PERM-023",
                  "REQ-PROTO-021")
@rows(
    Row("allow", AP, ApprovalAnswer("t1", Decision.ALLOW), replace(AP, status=RunningTool(Batch((BASH, READ)))),
        (PersistState(), status("running_tool", "awaiting_approval", U), answered("bash", "allow"),
         resolved("allow"), RunTool(BASH, U))),
    Row("deny goes on with the next call", AP, ApprovalAnswer("t1", Decision.DENY),
        replace(AP, status=RunningTool(Batch((BASH, READ), (result(BASH, texts.DENIED),)))),
        (PersistState(), status("running_tool", "awaiting_approval", U), answered("bash", "deny"),
         resolved("deny"), RunTool(READ, U))),
    Row("deny unseen: the model is told why", AP, ApprovalAnswer("t1", Decision.DENY, reason="too long to show"),
        replace(AP, status=RunningTool(Batch((BASH, READ), (result(BASH, "too long to show"),)))),
        (PersistState(), status("running_tool", "awaiting_approval", U),
         answered("bash", "deny", reason="too long to show"), resolved("deny"), RunTool(READ, U))),
    Row("always allow, the narrowest scope", LSAP, ApprovalAnswer("t1", Decision.ALWAYS_ALLOW),
        replace(LSAP, status=RunningTool(Batch((LS,))), always_allow=(PREFIX,)),
        (PersistState(), status("running_tool", "awaiting_approval", U),
         answered("bash", "alwaysAllow", rule="bash: ls *"), resolved("alwaysAllow"),
         Audit(Actor.USER, "alwaysAllowGranted", {"tool": "bash", "rule": "bash: ls *"}),
         AlwaysAllowChanged(PREFIX, allowed=True),
         RunTool(LS, U))),
    Row("always allow, the whole tool by name", LSAP, ApprovalAnswer("t1", Decision.ALWAYS_ALLOW, " bash "),
        replace(LSAP, status=RunningTool(Batch((LS,))), always_allow=(AllowRule("bash"),)),
        (PersistState(), status("running_tool", "awaiting_approval", U),
         answered("bash", "alwaysAllow", rule="bash"), resolved("alwaysAllow"),
         Audit(Actor.USER, "alwaysAllowGranted", {"tool": "bash", "rule": "bash"}),
         AlwaysAllowChanged(AllowRule("bash"), allowed=True),
         RunTool(LS, U))),
    Row("always allow, a rule already there: granted once", approval(BASH, always_allow=(AllowRule("bash"),)),
        ApprovalAnswer("t1", Decision.ALWAYS_ALLOW),
        replace(approval(BASH, always_allow=(AllowRule("bash"),)), status=RunningTool(Batch((BASH,)))),
        (PersistState(), status("running_tool", "awaiting_approval", U),
         answered("bash", "alwaysAllow", rule="bash"), resolved("alwaysAllow"), RunTool(BASH, U))),
    Row("always allow, a scope not offered", LSAP, ApprovalAnswer("t1", Decision.ALWAYS_ALLOW, "rm *"), None,
        refused("'rm *' is not a scope offered;choose one of 'ls *', 'bash';the approval is still open",
                "no_such_rule")),
    Row("another id", AP, ApprovalAnswer("t7", Decision.ALLOW), None,
        refused("no pending approval t7;already answered, cancelled, or never existed;The pending one is t1;"
                "Nothing was changed", "no_such_approval")),
    Row("nothing pending", conv(), ApprovalAnswer("t7", Decision.ALLOW), None,
        refused("no pending approval t7;or never existed. Nothing was changed.", "no_such_approval")),
    Row("the mode changed while it was open: decided again",
        replace(approval(PATCH, READ), mode=R), ApprovalAnswer("t1", Decision.ALLOW),
        replace(approval(PATCH, READ), mode=R, status=RunningTool(Batch((PATCH, READ),
                                                                        (result(PATCH, PATCH_DISABLED),)))),
        (PersistState(), status("running_tool", "awaiting_approval", R), answered("patch", "allow"),
         resolved("allow"), Audit(Actor.SYSTEM, "toolRefused", {"tool": "patch", "by": "mode"}),
         RunTool(READ, R))),
)
def test_approval_answer(row: Row) -> None:
    check(row)


UP = conv(R, status=AwaitingUpgrade(Batch((UPGRADE, READ)), "edit a"), history=(ASKED, assistant(UPGRADE, READ)))
APPROVED = replace(UP, mode=U, notes=(texts.MODE_NOTE[U],),
                   status=RunningTool(Batch((UPGRADE, READ), (ToolResult("t1", texts.UPGRADE_APPROVED),))))
DENIED = replace(UP, status=RunningTool(Batch((UPGRADE, READ), (result(UPGRADE, texts.UPGRADE_DENIED),))))


@pytest.mark.req("REQ-BED-015", "REQ-BED-017", "REQ-LAYER-002")
@rows(
    Row("approve", UP, UpgradeAnswer(True), APPROVED,
        (PersistState(), status("running_tool", "awaiting_upgrade", U),
         Audit(Actor.USER, "upgradeResolved", {"approve": True}), resolved("approve", "upgrade"),
         *mode_effects(U, R, "upgrade_request"), RunTool(READ, U))),
    Row("deny", UP, UpgradeAnswer(False), DENIED,
        (PersistState(), status("running_tool", "awaiting_upgrade", R),
         Audit(Actor.USER, "upgradeResolved", {"approve": False}), resolved("deny", "upgrade"), RunTool(READ, R))),
    Row("/execute approves", UP, SetMode(U), APPROVED,
        (PersistState(), status("running_tool", "awaiting_upgrade", U),
         Audit(Actor.USER, "upgradeResolved", {"approve": True}), resolved("approve", "upgrade"),
         *mode_effects(U, R, "upgrade_request"), RunTool(READ, U))),
    Row("/plan denies", UP, UserMessage("/plan"), DENIED,
        (PersistState(), status("running_tool", "awaiting_upgrade", R),
         Audit(Actor.USER, "upgradeResolved", {"approve": False}), resolved("deny", "upgrade"), RunTool(READ, R),
         UserCommand("plan"))),
    Row("nothing pending", conv(), UpgradeAnswer(True), None,
        refused("no pending upgrade request;already answered or cancelled;Nothing was changed",
                "no_pending_upgrade")),
)
def test_upgrade_answer(row: Row) -> None:
    check(row)


@pytest.mark.req("REQ-BED-016", "REQ-PATCH-009")
@rows(
    Row("a pending bash call is run sandboxed", AP, SetMode(R),
        replace(AP, mode=R, notes=(texts.MODE_NOTE[R],), status=RunningTool(Batch((BASH, READ)))),
        (PersistState(), status("running_tool", "awaiting_approval", R), *mode_effects(R, U, "setMode"),
         resolved("superseded"), RunTool(BASH, R))),
    Row("a pending patch is refused", approval(PATCH, READ), SetMode(R),
        replace(approval(PATCH, READ), mode=R, notes=(texts.MODE_NOTE[R],),
                status=RunningTool(Batch((PATCH, READ), (result(PATCH, PATCH_DISABLED),)))),
        (PersistState(), status("running_tool", "awaiting_approval", R), *mode_effects(R, U, "setMode"),
         resolved("superseded"), ToolRefused("t1", "patch"),
         Audit(Actor.SYSTEM, "toolRefused", {"tool": "patch", "by": "mode"}), RunTool(READ, R))),
    Row("a running tool keeps its mode", running(BASH), SetMode(R),
        running(BASH, mode=R, notes=(texts.MODE_NOTE[R],)),
        (PersistState(), status("running_tool", "running_tool", R), *mode_effects(R, U, "setMode"))),
)
def test_mode_change_while_busy(row: Row) -> None:
    check(row)


# ---------------------------------------------------------------------------------- settings


@pytest.mark.req("REQ-LAYER-001", "REQ-LAYER-006", "REQ-PERM-007")
@rows(
    Row("style, Restricted: suggest /execute", conv(), SetStyle(Style.DEVELOPMENT), conv(style=Style.DEVELOPMENT),
        (PersistState(), StyleChanged(Style.DEVELOPMENT, Style.CHAT),
         Audit(Actor.USER, "styleChanged", {"style": "development"}),
         StyleSuggested(texts.SUGGESTIONS[(Style.DEVELOPMENT, R)], Mode.UNRESTRICTED, "/execute"))),
    Row("style, Unrestricted with sandbox: suggest /plan", conv(U), SetStyle(Style.PLAN), conv(U, style=Style.PLAN),
        (PersistState(), StyleChanged(Style.PLAN, Style.CHAT),
         Audit(Actor.USER, "styleChanged", {"style": "plan"}),
         StyleSuggested(texts.SUGGESTIONS[(Style.PLAN, U)], Mode.RESTRICTED, "/plan"))),
    Row("style, no sandbox: nothing to suggest", conv(U, sandbox=False), SetStyle(Style.PLAN),
        conv(U, sandbox=False, style=Style.PLAN),
        (PersistState(), StyleChanged(Style.PLAN, Style.CHAT),
         Audit(Actor.USER, "styleChanged", {"style": "plan"}))),
    Row("style with no suggestion", conv(), SetStyle(Style.PLAN), conv(style=Style.PLAN),
        (PersistState(), StyleChanged(Style.PLAN, Style.CHAT),
         Audit(Actor.USER, "styleChanged", {"style": "plan"}))),
    Row("the same style", conv(), SetStyle(Style.CHAT), None, ()),
    Row("a finished sub-agent's style", child(status=Finished(True, "r")), SetStyle(Style.TASK),
        child(status=Finished(True, "r"), style=Style.TASK),
        (PersistState(), StyleChanged(Style.TASK, Style.CHAT),
         Audit(Actor.USER, "styleChanged", {"style": "task"}),
         StyleSuggested(texts.SUGGESTIONS[(Style.TASK, R)], Mode.UNRESTRICTED, "/execute"))),
    Row("policy", conv(), SetPolicy(Policy.AUTO), conv(policy=Policy.AUTO),
        (PersistState(), PolicyChanged(Policy.AUTO, Policy.INTERACTIVE),
         Audit(Actor.USER, "policyChanged", {"policy": "auto"}))),
    Row("the same policy", conv(), SetPolicy(Policy.INTERACTIVE), None, ()),
    Row("instructions", conv(), SetInstructions("be nice", (InstructionFile("/w/AGENTS.md", 7, 7),)),
        conv(instructions="be nice", instruction_files=(InstructionFile("/w/AGENTS.md", 7, 7),)), (PersistState(),)),
    Row("new files, same text", conv(instructions="x"), SetInstructions("x", (InstructionFile("/w/A.md", 1, 1),)),
        conv(instructions="x", instruction_files=(InstructionFile("/w/A.md", 1, 1),)), (PersistState(),)),
    Row("the same instructions", conv(instructions="x"), SetInstructions("x", ()), None, ()),
)
def test_settings(row: Row) -> None:
    check(row)


BIG = conv(settings=Settings(context_window=200_000), context_tokens=90_000)


@pytest.mark.req("REQ-MODEL-003")
@rows(
    Row("switch", BIG, SetModel("n", 120_000),
        replace(BIG, model="n", settings=Settings(context_window=120_000), warned=False),
        (PersistState(), ModelChanged("n", "m", 120_000),
         Audit(Actor.USER, "modelChanged", {"model": "n", "previous": "m"}))),
    Row("switch into the warning zone, exactly at 80%", BIG, SetModel("n", 112_500),
        replace(BIG, model="n", settings=Settings(context_window=112_500), warned=True),
        (PersistState(), ModelChanged("n", "m", 112_500),
         Audit(Actor.USER, "modelChanged", {"model": "n", "previous": "m"}))),
    Row("a wider window clears the warning", replace(BIG, warned=True), SetModel("n", 1_000_000),
        replace(BIG, model="n", settings=Settings(context_window=1_000_000), warned=False),
        (PersistState(), ModelChanged("n", "m", 1_000_000),
         Audit(Actor.USER, "modelChanged", {"model": "n", "previous": "m"}))),
    Row("too small, exactly at 90%", BIG, SetModel("n", 100_000), None,
        refused("n cannot take over;(100,000 tokens);90,000 tokens in use;90% of the window;Nothing was changed;"
                "m still answers;phoenix/triggerContinuation", "context_too_large")),
    Row("the same model", BIG, SetModel("m", 5), None, ()),
)
def test_set_model(row: Row) -> None:
    check(row)


BASH_RULES = (AllowRule("bash"), PREFIX, AllowRule("bash", (("git", "log"),)), AllowRule("patch"))


@pytest.mark.req("REQ-PERM-003", "REQ-PERM-021", "REQ-PERM-022")
@rows(
    Row("one rule", conv(always_allow=BASH_RULES), RevokeAlwaysAllow("bash", "bash: ls *"),
        conv(always_allow=(AllowRule("bash"), AllowRule("bash", (("git", "log"),)), AllowRule("patch"))),
        (PersistState(), Audit(Actor.USER, "alwaysAllowRevoked", {"tool": "bash", "rule": "bash: ls *"}),
         AlwaysAllowChanged(PREFIX, allowed=False))),
    Row("every rule of the tool", conv(always_allow=BASH_RULES), RevokeAlwaysAllow("bash"),
        conv(always_allow=(AllowRule("patch"),)),
        (PersistState(),
         Audit(Actor.USER, "alwaysAllowRevoked", {"tool": "bash", "rule": "bash"}),
         AlwaysAllowChanged(AllowRule("bash"), allowed=False),
         Audit(Actor.USER, "alwaysAllowRevoked", {"tool": "bash", "rule": "bash: ls *"}),
         AlwaysAllowChanged(PREFIX, allowed=False),
         Audit(Actor.USER, "alwaysAllowRevoked", {"tool": "bash", "rule": "bash: git log *"}),
         AlwaysAllowChanged(AllowRule("bash", (("git", "log"),)), allowed=False))),
    Row("a tool not allowed", conv(always_allow=BASH_RULES), RevokeAlwaysAllow("read_file"), None,
        refused("^'read_file' is not always allowed in this conversation", "not_always_allowed")),
    Row("a rule not there", conv(always_allow=BASH_RULES), RevokeAlwaysAllow("bash", "rm *"), None,
        refused("The rule 'rm *' of 'bash' is not always allowed", "not_always_allowed")),
    Row("a rule of another tool", conv(always_allow=BASH_RULES), RevokeAlwaysAllow("read_file", "ls *"), None,
        refused("The rule 'ls *' of 'read_file'", "not_always_allowed")),
)
def test_revoke(row: Row) -> None:
    check(row)


# ---------------------------------------------------------------------------------- cancel and stop

SLOTS = (AgentSlot("c1.t1.0", "look at a"), AgentSlot("c1.t1.1", "look at b", True, True, "found it"),
         AgentSlot("c1.t1.2", "look at c"))
AGENTS = conv(U, status=AwaitingAgents(Batch((SPAWN, READ)), SLOTS), history=(ASKED, assistant(SPAWN, READ)))


def agents_report(*parts: tuple[str, str, str]) -> str:
    return "\n\n".join(f"## Sub-agent {i} ({agent}): {task}\n{outcome}" for i, (agent, task, outcome) in
                       enumerate(parts, 1))


AGENTS3 = conv(U, status=AwaitingAgents(Batch((SPAWN, READ, READ3)), SLOTS),
               history=(ASKED, assistant(SPAWN, READ, READ3)))
CANCELLED_AGENTS = agents_report(("c1.t1.0", "look at a", f"FAILED: {texts.CANCELLED_RUNNING}"),
                                 ("c1.t1.1", "look at b", "Result:\nfound it"),
                                 ("c1.t1.2", "look at c", f"FAILED: {texts.CANCELLED_RUNNING}"))
CLOSED_BY_CANCEL = results(ToolResult("t1", CANCELLED_AGENTS, False), result(READ, texts.CANCELLED_QUEUED))


@pytest.mark.req("REQ-BED-005", "REQ-BED-008")
@rows(
    Row("llm", conv(status=AwaitingLlm(4)), Cancel(), conv(), (PersistState(), status("idle", "awaiting_llm"),
                                                                CancelLlm(4))),
    Row("summary", conv(status=Summarizing(4)), Cancel(), conv(), (PersistState(), status("idle", "summarizing"),
                                                                    CancelLlm(4))),
    Row("tool", running(BASH, READ, notes=("n",)), Cancel(),
        replace(running(BASH, READ), history=(ASKED, assistant(BASH, READ), results(
            result(BASH, texts.CANCELLED_RUNNING), result(READ, texts.CANCELLED_QUEUED), Text("n"))),
                status=Idle()),
        (*persisted(2, results(result(BASH, texts.CANCELLED_RUNNING), result(READ, texts.CANCELLED_QUEUED),
                               Text("n"))), status("idle", "running_tool", U), CancelTool("t1"))),
    Row("the second of three tools", running(READ1, BASH2, READ3, answered=(ToolResult("t1", "A"),)), Cancel(),
        replace(running(READ1, BASH2, READ3), history=(ASKED, assistant(READ1, BASH2, READ3), results(
            ToolResult("t1", "A"), result(BASH2, texts.CANCELLED_RUNNING), result(READ3, texts.CANCELLED_QUEUED))),
                status=Idle()),
        (*persisted(2, results(ToolResult("t1", "A"), result(BASH2, texts.CANCELLED_RUNNING),
                               result(READ3, texts.CANCELLED_QUEUED))), status("idle", "running_tool", U),
         CancelTool("t2"))),
    Row("approval", AP, Cancel(),
        replace(AP, history=(ASKED, assistant(BASH, READ), results(
            result(BASH, texts.CANCELLED_RUNNING), result(READ, texts.CANCELLED_QUEUED))), status=Idle()),
        (*persisted(2, results(result(BASH, texts.CANCELLED_RUNNING), result(READ, texts.CANCELLED_QUEUED))),
         status("idle", "awaiting_approval", U), resolved("cancelled"))),
    Row("upgrade", UP, Cancel(),
        replace(UP, history=(ASKED, assistant(UPGRADE, READ), results(
            result(UPGRADE, texts.CANCELLED_RUNNING), result(READ, texts.CANCELLED_QUEUED))), status=Idle()),
        (*persisted(2, results(result(UPGRADE, texts.CANCELLED_RUNNING), result(READ, texts.CANCELLED_QUEUED))),
         status("idle", "awaiting_upgrade"), resolved("cancelled", "upgrade"))),
    Row("agents", AGENTS, Cancel(),
        replace(AGENTS, history=(ASKED, assistant(SPAWN, READ), CLOSED_BY_CANCEL), status=Idle()),
        (*persisted(2, CLOSED_BY_CANCEL), status("idle", "awaiting_agents", U),
         StopAgents(("c1.t1.0", "c1.t1.2"), "the parent conversation was cancelled"))),
    Row("agents, two calls after", AGENTS3, Cancel(),
        replace(AGENTS3, history=(ASKED, assistant(SPAWN, READ, READ3), results(
            ToolResult("t1", CANCELLED_AGENTS, False), result(READ, texts.CANCELLED_QUEUED),
            result(READ3, texts.CANCELLED_QUEUED))), status=Idle()),
        (*persisted(2, results(ToolResult("t1", CANCELLED_AGENTS, False), result(READ, texts.CANCELLED_QUEUED),
                               result(READ3, texts.CANCELLED_QUEUED))), status("idle", "awaiting_agents", U),
         StopAgents(("c1.t1.0", "c1.t1.2"), "the parent conversation was cancelled"))),
    Row("idle: nothing to do", conv(), Cancel(), None, ()),
    Row("error: nothing to do", conv(status=Error("e")), Cancel(), None, ()),
    Row("stop a sub-agent's tool", replace(child(), status=RunningTool(Batch((BASH, READ))),
                                           history=(ASKED, assistant(BASH, READ))), Stop("timed out"),
        replace(child(), history=(ASKED, assistant(BASH, READ), results(
            result(BASH, "Stopped: timed out."), result(READ, "Not executed: timed out."))),
                status=Finished(False, "timed out")),
        (*persisted(2, results(result(BASH, "Stopped: timed out."), result(READ, "Not executed: timed out."))),
         status("finished", "running_tool"), CancelTool("t1"), report(False, "timed out"))),
    Row("stop a waiting sub-agent", child(status=AwaitingLlm(2), notes=("n",)), Stop("timed out"),
        child(status=Finished(False, "timed out"), history=(ASKED, note("n"))),
        (*persisted(1, note("n")), status("finished", "awaiting_llm"), CancelLlm(2), report(False, "timed out"))),
    Row("stop an idle sub-agent", child(), Stop("restart"), child(status=Finished(False, "restart")),
        (PersistState(), status("finished", "idle"), report(False, "restart"))),
    Row("stop a finished sub-agent", child(status=Finished(True, "r")), Stop("late"), None,
        refused("already finished", "finished")),
    Row("stop a conversation", conv(status=AwaitingLlm(1)), Stop("x"), None,
        refused("Only sub-agents can be stopped;use cancel", "not_subagent")),
)
def test_cancel_and_stop(row: Row) -> None:
    check(row)


@pytest.mark.req("REQ-BED-023")
@rows(
    Row("manual continuation", conv(context_tokens=500, settings=SMALL, next_request=3), TriggerContinuation(),
        conv(context_tokens=500, settings=SMALL, next_request=4, status=Summarizing(3)),
        (PersistState(), status("summarizing", "idle"),
         ContinuationStarted(ContextUsage(500, WINDOW,
                            0.5), manual=True),
         RequestLlm(3, purpose="summary", instruction=texts.summary_instruction(())))),
    Row("from the error state", conv(status=Error("e"), settings=SMALL), TriggerContinuation(),
        conv(settings=SMALL, next_request=2, status=Summarizing(1)),
        (PersistState(), status("summarizing", "error"),
         ContinuationStarted(ContextUsage(0, WINDOW,
                            0.0), manual=True),
         RequestLlm(1, purpose="summary", instruction=texts.summary_instruction(())))),
)
def test_continuation(row: Row) -> None:
    check(row)


@pytest.mark.req("REQ-BED-020")
def test_the_summary_instruction_names_what_was_not_run() -> None:
    plain = texts.summary_instruction(())
    assert "summary" in plain and "next steps" in plain and "Do not call tools" in plain
    assert "not executed" not in plain
    assert texts.summary_instruction(("bash", "patch")).endswith(
        " These tool calls were requested but not executed: bash, patch.")


# ------------------------------------------------------------------------------------------ sub-agents

AGENTS_DONE = agents_report(("c1.t1.0", "look at a", "Result:\nok a"), ("c1.t1.1", "look at b", "Result:\nfound it"),
                            ("c1.t1.2", "look at c", "FAILED: timed out"))


@pytest.mark.req("REQ-BED-008")
@rows(
    Row("one of three", AGENTS, AgentEnded("c1.t1.2", False, "timed out"),
        replace(AGENTS, status=AwaitingAgents(Batch((SPAWN, READ)), (
            SLOTS[0], SLOTS[1], AgentSlot("c1.t1.2", "look at c", True, False, "timed out")))),
        (PersistState(),)),
    Row("the last one", replace(AGENTS, status=AwaitingAgents(Batch((SPAWN, READ)), (
        SLOTS[0], SLOTS[1], AgentSlot("c1.t1.2", "look at c", True, False, "timed out")))),
        AgentEnded("c1.t1.0", True, "ok a"),
        replace(AGENTS, status=RunningTool(Batch((SPAWN, READ), (ToolResult("t1", AGENTS_DONE, False),)))),
        (PersistState(), status("running_tool", "awaiting_agents", U), RunTool(READ, U))),
    Row("all failed is an error result", replace(AGENTS, status=AwaitingAgents(Batch((SPAWN,)), (
        AgentSlot("c1.t1.0", "look at a"),))), AgentEnded("c1.t1.0", False, "boom"),
        replace(AGENTS, history=(ASKED, assistant(SPAWN, READ), results(ToolResult(
            "t1", "## Sub-agent 1 (c1.t1.0): look at a\nFAILED: boom", True))), status=AwaitingLlm(1),
            next_request=2),
        (*persisted(2, results(ToolResult("t1", "## Sub-agent 1 (c1.t1.0): look at a\nFAILED: boom", True))),
         status("awaiting_llm", "awaiting_agents", U), RequestLlm(1))),
    Row("one already done", AGENTS, AgentEnded("c1.t1.1", True, "again"), None,
        refused("Sub-agent c1.t1.1 is not awaited", "stale")),
    Row("unknown", AGENTS, AgentEnded("nobody", True, "r"), None, refused("Sub-agent nobody is not awaited", "stale")),
    Row("usage while waiting", AGENTS, AgentUsage("c1.t1.0", Usage(10, 5, 3, 2)),
        replace(AGENTS, agents_usage=UsageTotals(1, 10, 5, 3, 2)), (PersistState(),)),
    Row("usage adds up", conv(agents_usage=UsageTotals(2, 1, 1, 1, 1, 1, 1)), AgentUsage("x", Usage(10, 5, 3, 2, 1)),
        conv(agents_usage=UsageTotals(3, 11, 6, 4, 3, 2, 1)), (PersistState(),)),
)
def test_agents(row: Row) -> None:
    check(row)


# ------------------------------------------------------------------------------------------- restore

RESTORED_AGENTS = agents_report(("c1.t1.0", "look at a", f"FAILED: {texts.AGENT_RESTART}"),
                                ("c1.t1.1", "look at b", "Result:\nfound it"),
                                ("c1.t1.2", "look at c", f"FAILED: {texts.AGENT_RESTART}"))
RESTART_FILLED = results(result(BASH, texts.RESTART_RUNNING), result(READ, texts.RESTART_QUEUED))


@pytest.mark.req("REQ-BED-007", "REQ-PERM-006")
@rows(
    Row("an open approval is asked again", AP, Restore(), None, (AskApproval(BASH, (AllowRule("bash"),)),)),
    Row("with its scopes", LSAP, Restore(), None, (AskApproval(LS, (PREFIX, AllowRule("bash"))),)),
    Row("an open upgrade is asked again", UP, Restore(), None, (AskUpgrade("t1", "edit a"),)),
    Row("a running tool is interrupted", running(BASH, READ, notes=("n",)), Restore(),
        replace(running(BASH, READ), history=(ASKED, assistant(BASH, READ), results(
            result(BASH, texts.RESTART_RUNNING), result(READ, texts.RESTART_QUEUED), Text("n"))), status=Idle()),
        (*persisted(2, results(result(BASH, texts.RESTART_RUNNING), result(READ, texts.RESTART_QUEUED), Text("n"))),
         status("idle", "running_tool", U))),
    Row("waiting agents", AGENTS, Restore(),
        replace(AGENTS, history=(ASKED, assistant(SPAWN, READ), results(
            ToolResult("t1", RESTORED_AGENTS, False), result(READ, texts.RESTART_QUEUED))), status=Idle()),
        (*persisted(2, results(ToolResult("t1", RESTORED_AGENTS, False), result(READ, texts.RESTART_QUEUED))),
         status("idle", "awaiting_agents", U))),
    Row("an LLM request", conv(status=AwaitingLlm(3), notes=("n",)), Restore(),
        conv(history=(ASKED, note("n"))), (*persisted(1, note("n")), status("idle", "awaiting_llm"))),
    Row("a summary", conv(status=Summarizing(3)), Restore(), conv(), (PersistState(), status("idle", "summarizing"))),
    Row("idle", conv(notes=("n",)), Restore(), conv(history=(ASKED, note("n"))), persisted(1, note("n"))),
    Row("error", conv(status=Error("e")), Restore(), conv(), (PersistState(), status("idle", "error"))),
    Row("exhausted", conv(status=Exhausted("s")), Restore(), None, ()),
    Row("a sub-agent's tool", replace(child(), status=RunningTool(Batch((BASH, READ))),
                                      history=(ASKED, assistant(BASH, READ))), Restore(),
        replace(child(), history=(ASKED, assistant(BASH, READ), RESTART_FILLED),
                status=Finished(False, "stopped because the server restarted")),
        (*persisted(2, RESTART_FILLED), status("finished", "running_tool"))),
    Row("a sub-agent's approval", replace(child(mode=U), status=AwaitingApproval(Batch((BASH, READ)), "t1"),
                                          history=(ASKED, assistant(BASH, READ))), Restore(),
        replace(child(mode=U), history=(ASKED, assistant(BASH, READ), RESTART_FILLED),
                status=Finished(False, "stopped because the server restarted")),
        (*persisted(2, RESTART_FILLED), status("finished", "awaiting_approval", U))),
    Row("a sub-agent's agents", replace(child(), status=AwaitingAgents(Batch((BASH, READ)), ()),
                                        history=(ASKED, assistant(BASH, READ))), Restore(),
        replace(child(), history=(ASKED, assistant(BASH, READ), RESTART_FILLED),
                status=Finished(False, "stopped because the server restarted")),
        (*persisted(2, RESTART_FILLED), status("finished", "awaiting_agents"))),
    Row("a waiting sub-agent", child(status=AwaitingLlm(2), notes=("n",)), Restore(),
        child(history=(ASKED, note("n")), status=Finished(False, "stopped because the server restarted")),
        (*persisted(1, note("n")), status("finished", "awaiting_llm"))),
    Row("a finished sub-agent", child(status=Finished(True, "r")), Restore(), None, ()),
    Row("waiting agents, two calls after", AGENTS3, Restore(),
        replace(AGENTS3, history=(ASKED, assistant(SPAWN, READ, READ3), results(
            ToolResult("t1", RESTORED_AGENTS, False), result(READ, texts.RESTART_QUEUED),
            result(READ3, texts.RESTART_QUEUED))), status=Idle()),
        (*persisted(2, results(ToolResult("t1", RESTORED_AGENTS, False), result(READ, texts.RESTART_QUEUED),
                               result(READ3, texts.RESTART_QUEUED))), status("idle", "awaiting_agents", U))),
)
def test_restore(row: Row) -> None:
    check(row)


# ---------------------------------------------------------------------------------- a plan's host calls

PLAN = ToolUse("t1", "run_plan", {"goal": "g"})
UPDATE = "mcp://records/update_record"
HOST = ToolUse("t1.1", UPDATE, {"id": 1})
HOST_READ = ToolUse("t1.2", "mcp://records/list_records", {})
PLANNING = (ASKED, assistant(PLAN))
REFUSED_WRITE = HOST_WRITE_DISABLED.format(tool=UPDATE)
WHOLE = AllowRule(UPDATE)


def plan_running(mode: Mode = U, **fields: object) -> ConversationState:
    return conv(mode, route=Route.AGENT, history=PLANNING, status=RunningTool(Batch((PLAN,))), **fields)


def plan_waiting(mode: Mode = U, **fields: object) -> ConversationState:
    return conv(mode, route=Route.AGENT, history=PLANNING, status=AwaitingApproval(Batch((PLAN,)), "t1.1", HOST),
                **fields)


def host(call: ToolUse = HOST, kind: ToolKind = ToolKind.WRITE, plan: str = "t1") -> HostCall:
    return HostCall(plan, call, kind)


def allowed_write(call: ToolUse = HOST) -> tuple[Audit, AnswerHostCall]:
    return Audit(Actor.SYSTEM, "hostCallAllowed", {"tool": call.name, "toolUseId": call.id}), AnswerHostCall(
        call.id, True)


def refused_by_mode(call: ToolUse = HOST) -> Effects:
    return (ToolRefused(call.id, call.name),
            Audit(Actor.SYSTEM, "toolRefused", {"tool": call.name, "by": "mode"}),
            AnswerHostCall(call.id, False, REFUSED_WRITE, "mode"))


def resolved(decision: str, *, rule: str | None = None, reason: str | None = None) -> tuple[Audit, Notification]:
    detail: dict[str, object] = {"tool": UPDATE, "decision": decision}
    if rule is not None:
        detail["rule"] = rule
    if reason is not None:
        detail["reason"] = reason
    return Audit(Actor.USER, "approvalResolved", detail), ApprovalResolved("t1.1", decision)  # type: ignore[arg-type]


CANCEL_FILLED = results(result(PLAN, texts.CANCELLED_RUNNING))
RESTART_PLAN = results(result(PLAN, texts.RESTART_RUNNING))


@pytest.mark.req("REQ-AGENT-014", "REQ-AGENT-015", "REQ-SEC-003")
@rows(
    Row("a read goes ahead in Restricted", plan_running(R), host(HOST_READ, ToolKind.READ), None,
        (AnswerHostCall("t1.2", True),)),
    Row("a read goes ahead under interactive", plan_running(U), host(HOST_READ, ToolKind.READ), None,
        (AnswerHostCall("t1.2", True),)),
    Row("a write is refused in Restricted", plan_running(R), host(), None, refused_by_mode()),
    Row("a write under auto", plan_running(U, policy=Policy.AUTO), host(), None, allowed_write()),
    Row("an always-allowed write", plan_running(U, always_allow=(WHOLE,)), host(), None, allowed_write()),
    Row("a write under interactive is asked about", plan_running(U), host(), plan_waiting(U),
        (PersistState(), status("awaiting_approval", "running_tool", U), AskApproval(HOST, (WHOLE,)),
         Audit(Actor.AGENT, "approvalRequested", {"tool": UPDATE, "toolUseId": "t1.1", "plan": "t1"}))),
    Row("a kind that is neither", plan_running(U, policy=Policy.AUTO), host(kind=ToolKind.EXEC), None,
        (AnswerHostCall("t1.1", False, "A host call must be a read or a write, not exec; nothing was run.",
                        "unknown_tool"),)),
    Row("an approval node in Restricted", plan_running(R), host(kind=ToolKind.PLAN), None, refused_by_mode()),
    Row("an approval node under interactive: no question", plan_running(U), host(kind=ToolKind.PLAN), None,
        allowed_write()),
    Row("an approval node under auto", plan_running(U, policy=Policy.AUTO), host(kind=ToolKind.PLAN), None,
        allowed_write()),
    Row("for another call", plan_running(U), host(plan="t9"), None,
        refused("^Host call t1.1 belongs to t9, which is not a running plan", "stale")),
    Row("from a call that is no plan", conv(U, status=RunningTool(Batch((BASH,)))), host(), None,
        refused("^Host call t1.1 belongs to t1", "stale")),
    Row("while another waits", plan_waiting(U), host(HOST_READ, ToolKind.READ), None,
        refused(f"approval of {UPDATE} (tool call t1.1)", "busy")),
    Row("Allow", plan_waiting(U), ApprovalAnswer("t1.1", Decision.ALLOW), plan_running(U),
        (PersistState(), status("running_tool", "awaiting_approval", U), *resolved("allow"), *allowed_write())),
    Row("Deny", plan_waiting(U), ApprovalAnswer("t1.1", Decision.DENY), plan_running(U),
        (PersistState(), status("running_tool", "awaiting_approval", U), *resolved("deny"),
         AnswerHostCall("t1.1", False, texts.DENIED, "user"))),
    Row("Deny unseen", plan_waiting(U), ApprovalAnswer("t1.1", Decision.DENY, reason="unseen"), plan_running(U),
        (PersistState(), status("running_tool", "awaiting_approval", U), *resolved("deny", reason="unseen"),
         AnswerHostCall("t1.1", False, "unseen", "user"))),
    Row("Always Allow", plan_waiting(U), ApprovalAnswer("t1.1", Decision.ALWAYS_ALLOW),
        plan_running(U, always_allow=(WHOLE,)),
        (PersistState(), status("running_tool", "awaiting_approval", U), *resolved("alwaysAllow", rule=WHOLE.label),
         Audit(Actor.USER, "alwaysAllowGranted", {"tool": UPDATE, "rule": WHOLE.label}),
         AlwaysAllowChanged(WHOLE, allowed=True),
         *allowed_write())),
    Row("an answer for the plan's own id", plan_waiting(U), ApprovalAnswer("t1", Decision.ALLOW), None,
        refused("no pending approval t1;The pending one is t1.1", "no_such_approval")),
    Row("/plan while it waits", plan_waiting(U), SetMode(R), plan_running(R, notes=(texts.MODE_NOTE[R],)),
        (PersistState(), status("running_tool", "awaiting_approval", R),
         ModeChanged(Mode.RESTRICTED, Mode.UNRESTRICTED, Actor.USER, "setMode"),
         Audit(Actor.USER, "modeChanged", {"mode": "restricted", "via": "setMode"}),
         ApprovalResolved("t1.1", "superseded"),
         *refused_by_mode())),
    Row("auto while it waits: asked already, still asked", plan_waiting(U), SetPolicy(Policy.AUTO),
        plan_waiting(U, policy=Policy.AUTO),
        (PersistState(), PolicyChanged(Policy.AUTO, Policy.INTERACTIVE),
         Audit(Actor.USER, "policyChanged", {"policy": "auto"}))),
    Row("cancel while it waits", plan_waiting(U), Cancel(),
        conv(U, route=Route.AGENT, history=(*PLANNING, CANCEL_FILLED), status=Idle()),
        (*persisted(2, CANCEL_FILLED), status("idle", "awaiting_approval", U),
         ApprovalResolved("t1.1", "cancelled"),
         AnswerHostCall("t1.1", False, texts.CANCELLED_RUNNING), CancelTool("t1"))),
    Row("a restart while it waits", plan_waiting(U), Restore(),
        conv(U, route=Route.AGENT, history=(*PLANNING, RESTART_PLAN), status=Idle()),
        (*persisted(2, RESTART_PLAN), status("idle", "awaiting_approval", U))),
)
def test_host_calls(row: Row) -> None:
    check(row)


# ------------------------------------------------------------------------------------------ the table


@pytest.mark.req("REQ-BED-007")
def test_persistence_first_then_what_happened_then_the_status_then_the_rest() -> None:
    # an error: persisted, told, then the status it leads to
    _, effects = transition(replace(WF, notes=("n",)), LlmFailed(3, False, "bad"))
    assert [type(e).__name__ for e in effects] == ["PersistMessage", "PersistState", "ErrorReported", "StatusChanged"]
    # a mode change alone, no status change: a status notification still tells the new mode
    _, effects = transition(conv(), SetMode(U))
    assert effects[2] == status("idle", "idle", U)
    # a change of state with the same status and mode: persisted, no status notification
    _, effects = transition(conv(), SetPolicy(Policy.AUTO))
    assert effects[0] == PersistState() and not [e for e in effects if isinstance(e, StatusChanged)]


@pytest.mark.req("REQ-BED-014")
@pytest.mark.parametrize(("sandbox", "mode"), [(True, R), (False, U)])
def test_new_conversation(sandbox: bool, mode: Mode) -> None:
    state = machine.new_conversation("c9", model="m9", working_directory="/x", sandbox=sandbox, policy=Policy.AUTO)
    assert state == ConversationState(id="c9", model="m9", working_directory="/x", sandbox=sandbox, mode=mode,
                                      policy=Policy.AUTO)


@pytest.mark.req("REQ-BED-012")
def test_context_usage() -> None:
    assert machine.context_usage(conv(context_tokens=333, settings=Settings(context_window=1000))) == ContextUsage(
        used_tokens=333, context_window=1000, fraction=0.333)
    assert machine.context_usage(conv(context_tokens=1, settings=Settings(context_window=3))) == ContextUsage(
        used_tokens=1, context_window=3, fraction=0.3333)
    assert machine.context_usage(conv(context_tokens=5, settings=Settings(context_window=0))).fraction == 0
