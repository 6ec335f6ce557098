"""The middle tier: the runtime driven in-process, between the pure core and the end-to-end tests.

A real ``Hub`` with a real ``Store`` (SQLite in ``tmp_path``) and the real sandbox probe, but a recording
``Sink`` in place of the LSP server and a scripted ``LlmLike`` in place of the Anthropic client. No
subprocess server and no HTTP, so each test takes milliseconds (the bash tests also spawn the command).
Every wait is on an explicit condition (``RecordingSink.wait_until``, woken by each event); nothing sleeps.
Every event the runtime emits is checked against ``specs/protocol.schema.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phoenix_lsp.core.effects import Reject
from phoenix_lsp.core.events import Cancel, SetMode, UserMessage
from phoenix_lsp.core.notifications import Notification
from phoenix_lsp.core.state import RESTING_KINDS
from phoenix_lsp.core.values import Decision, Mode, Policy, Style, ToolUse
from phoenix_lsp.llm.client import LlmFailure, LlmRequest, LlmSuccess
from phoenix_lsp.llm.models import ListedModel
from phoenix_lsp.llm.models import context_window as known_window
from phoenix_lsp.protocol import events as ev
from phoenix_lsp.protocol.base import to_wire
from phoenix_lsp.sandbox import probe
from phoenix_lsp.server import wire
from phoenix_lsp.server.runtime import Hub, HubConfig, Runtime, clean_environment
from phoenix_lsp.store import Store
from tests.core.test_properties import NOTIFY_MODELS, billed
from tests.e2e.harness import drift

SANDBOX = probe()
needs_sandbox = pytest.mark.skipif(not SANDBOX.available, reason=f"no kernel sandbox here: {SANDBOX.reason}")
MODEL = "claude-sonnet-4-5"
WAIT_S = 15.0  # generous: a sandboxed bash command on a loaded machine; a pass never waits this long


# ----------------------------------------------------------------------------------------- the sink


@dataclass
class RecordingSink:
    """The LSP side, recorded: every event (model and wire params), every question asked and withdrawn."""

    docs: dict[Path, str] = field(default_factory=dict)
    events: list[tuple[ev.EventKinds, dict[str, Any]]] = field(default_factory=list)
    asks: list[tuple[str, str, str, Any]] = field(default_factory=list)  # (kind, conversation, id, call/reason)
    withdrawn: list[tuple[str, str]] = field(default_factory=list)  # (conversation, request id)
    patches: list[ToolUse] = field(default_factory=list)
    drifts: list[str] = field(default_factory=list)
    rested: asyncio.Event = field(default_factory=asyncio.Event)  # set by each status event into a resting status
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    editor_sight: bool = False
    logged: list[str] = field(default_factory=list)

    async def documents_for(self, runtime: Runtime, call: ToolUse) -> dict[Path, str]:
        return {}

    def sight_for(self, runtime: Runtime) -> None:
        return None

    def log_to_client(self, text: str) -> None:
        self.logged.append(text)

    def event_batch(self, batch: Sequence[tuple[ev.EventKinds, dict[str, Any]]], texts: Sequence[str]) -> None:
        for event, params in batch:
            self.event(event, params)

    def event(self, event: ev.EventKinds, params: dict[str, Any]) -> None:
        self.drifts += drift("#/$defs/PhoenixEvent", params, f"phoenix/event {params.get('kind')}")
        self.events.append((event, params))
        if isinstance(event, ev.Status) and event.status in RESTING_KINDS:
            self.rested.set()
        self._changed.set()

    def ask_approval(self, runtime: Runtime, tool_use_id: str, call: ToolUse) -> None:
        self.asks.append(("approval", runtime.id, tool_use_id, call))
        self._changed.set()

    def ask_upgrade(self, runtime: Runtime, tool_use_id: str, reason: str) -> None:
        self.asks.append(("upgrade", runtime.id, tool_use_id, reason))
        self._changed.set()

    def withdraw(self, runtime: Runtime, tool_use_id: str) -> None:
        self.withdrawn.append((runtime.id, tool_use_id))
        self._changed.set()

    def poke(self) -> None:
        """Something outside the events changed (the scripted model was asked, or cancelled): re-check."""
        self._changed.set()

    def open_documents(self) -> Mapping[Path, str]:
        return self.docs

    async def apply_patch(self, runtime: Runtime, call: ToolUse) -> tuple[str, bool]:
        self.patches.append(call)
        return "patched", False

    # ------------------------------------------------------------------------------------- reading

    def of(self, cid: str, kind: str | None = None) -> list[dict[str, Any]]:
        """The wire params of the conversation's events (of one kind), in order."""
        return [p for _, p in self.events if p["conversationId"] == cid and (kind is None or p["kind"] == kind)]

    def kinds(self, cid: str, after: int = 0) -> list[str]:
        """The conversation's event kinds after seq ``after``; a status event reads ``status:<new status>``."""
        return [
            f"status:{p['status']}" if p["kind"] == "status" else p["kind"]
            for p in self.of(cid)
            if p["seq"] > after
        ]

    def last_seq(self, cid: str) -> int:
        return max((p["seq"] for p in self.of(cid)), default=0)

    async def wait_until(self, predicate: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
        """Return once ``predicate()`` holds, re-checking it after each event, ask or withdrawal."""
        async with asyncio.timeout(timeout):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()
        # (asyncio.timeout raises TimeoutError; say what was awaited)

    async def wait_event(self, cid: str, kind: str, after: int = 0, timeout: float = WAIT_S) -> dict[str, Any]:
        """The first event of ``kind`` of the conversation with a seq above ``after``."""

        def found() -> list[dict[str, Any]]:
            return [p for p in self.of(cid, kind) if p["seq"] > after]

        try:
            await self.wait_until(lambda: bool(found()), kind, timeout)
        except TimeoutError:
            raise AssertionError(f"no {kind} event after seq {after}; events: {self.kinds(cid)}") from None
        return found()[0]

    async def rest(self, cid: str, after: int = 0, timeout: float = WAIT_S) -> dict[str, Any]:
        """Wait for the conversation's first status event into a resting status with a seq above ``after``."""

        def resting() -> list[dict[str, Any]]:
            return [p for p in self.of(cid, "status") if p["seq"] > after and p["status"] in RESTING_KINDS]

        try:
            async with asyncio.timeout(timeout):
                while not resting():
                    self.rested.clear()
                    await self.rested.wait()
        except TimeoutError:
            raise AssertionError(f"not at rest after seq {after}; events: {self.kinds(cid)}") from None
        return resting()[0]


# ---------------------------------------------------------------------------------------- the model


@dataclass
class Step:
    """One scripted model response: text deltas streamed first, then (after ``gate``, if any) the result."""

    result: LlmSuccess | LlmFailure
    deltas: tuple[str, ...] = ()
    gate: asyncio.Event | None = None  # hold the response until set: the request stays in flight


@dataclass
class ScriptedLlm:
    """An ``LlmLike`` answering from a queue of steps, recording each request and each cancellation."""

    steps: deque[Step] = field(default_factory=deque)
    requests: list[LlmRequest] = field(default_factory=list)
    cancelled: int = 0
    overrun: bool = False  # asked for more responses than scripted
    on_change: Callable[[], None] = lambda: None  # wakes the sink's waiters (requests and cancellations)

    def context_window(self, model: str) -> int:
        return known_window(model)  # the table of known models: no server to learn from

    def learnable(self, model: str) -> bool:
        return False

    async def learn(self, model: str) -> bool:
        return False

    def window_note(self, model: str) -> str:
        return ""

    # the model use cases' members of the port (``adapter.ModelRouter``): any model id, no lists
    def check(self, model: str) -> str | None:
        return None

    async def prepare(self) -> None:
        return None

    async def list_models(self, limit: int = 1000) -> list[ListedModel]:
        return []

    def configured(self) -> list[str]:
        return []

    async def probe_ollama(self) -> bool:
        return False

    async def list_provider(self, name: str) -> list[tuple[str, str, int, bool]]:
        raise LookupError(f"the scripted model has no provider {name!r}")

    def provider_url(self, name: str) -> str:
        return ""

    def enqueue(self, *steps: Step | LlmSuccess | LlmFailure) -> None:
        self.steps.extend(s if isinstance(s, Step) else Step(s) for s in steps)

    async def stream(self, request: LlmRequest, on_text: Callable[[str], None],
                     on_withheld: Callable[[Any], None] | None = None,
                     on_tool: Callable[[str, str, str], None] | None = None) -> LlmSuccess | LlmFailure:
        self.requests.append(request)
        self.on_change()
        if not self.steps:
            self.overrun = True
            return LlmFailure(False, 400, "the test scripted no further response")
        step = self.steps.popleft()
        for delta in step.deltas:
            on_text(delta)
        if step.gate is not None:
            try:
                await step.gate.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                self.on_change()
                raise
        return step.result


def text(reply: str, input_tokens: int = 120, output_tokens: int = 30) -> LlmSuccess:
    return LlmSuccess([{"type": "text", "text": reply}], "end_turn",
                      {"input_tokens": input_tokens, "output_tokens": output_tokens})


def tool(call_id: str, name: str, tool_input: dict[str, Any]) -> LlmSuccess:
    return LlmSuccess([{"type": "tool_use", "id": call_id, "name": name, "input": tool_input}], "tool_use",
                      {"input_tokens": 200, "output_tokens": 20})


def results_of(request: LlmRequest) -> dict[str, dict[str, Any]]:
    """The tool_result blocks of the request's last message, by tool_use_id."""
    content = request.messages[-1]["content"]
    blocks = content if isinstance(content, list) else []
    return {b["tool_use_id"]: b for b in blocks if b.get("type") == "tool_result"}


def result_text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)


# ------------------------------------------------------------------------------------------ the rig


@dataclass
class Rig:
    hub: Hub
    store: Store
    sink: RecordingSink
    llm: ScriptedLlm
    workdir: Path

    def new(self, policy: Policy = Policy.AUTO, mode: Mode | None = None) -> Runtime:
        runtime = self.hub.create(working_directory=str(self.workdir), model=None, style=Style.DEVELOPMENT,
                                  policy=policy)
        if mode is not None and runtime.state.mode is not mode:
            assert runtime.apply(SetMode(mode)).reject is None
        return runtime


def make_hub(store: Store, sink: RecordingSink, llm: ScriptedLlm) -> Hub:
    llm.on_change = sink.poke
    config = HubConfig(model=MODEL, retry_base_ms=1, bash_timeout_s=20, env=clean_environment(os.environ))
    return Hub(store, llm, SANDBOX, config, sink)


async def stop(hub: Hub) -> None:
    """Cancel and await the hub's background work (what the server's shutdown does)."""
    tasks = list(hub.tasks)
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    workdir = tmp_path / "work"
    workdir.mkdir()
    store = Store(tmp_path / "data" / "phoenix.db")
    sink, llm = RecordingSink(), ScriptedLlm()
    hub = make_hub(store, sink, llm)
    try:
        yield Rig(hub, store, sink, llm, workdir)
    finally:
        await stop(hub)
        store.close()
    assert not sink.drifts, "the runtime emitted what specs/protocol.schema.json does not allow:\n" + "\n".join(
        sink.drifts[:20])
    assert not llm.overrun, "the runtime asked the model more often than the test scripted"


# ------------------------------------------------------------------------------------------ the tests


@pytest.mark.req("REQ-PROTO-029", "REQ-BED-002", "REQ-BED-003", "REQ-BED-011", "REQ-CORE-007", "REQ-PROTO-037")
async def test_a_text_turn_emits_numbered_events_in_order_and_persists_first(rig: Rig) -> None:
    runtime = rig.new()
    rig.llm.enqueue(Step(text("It builds with make.", 1000, 50), deltas=("It builds ", "with make.")))
    outcome = runtime.apply(UserMessage("How is this project built?"))
    assert outcome.reject is None
    await rig.sink.rest(runtime.id)

    events = rig.sink.of(runtime.id)
    assert [p["seq"] for p in events] == list(range(1, len(events) + 1)), "seq is 1, 2, 3... with no gap"
    assert rig.sink.kinds(runtime.id) == [  # the two deltas came in one go: one event (REQ-PROTO-049)
        "message", "status:awaiting_llm", "textDelta", "message", "usage", "status:idle",
    ]
    user, assistant = rig.sink.of(runtime.id, "message")
    assert user["message"]["role"] == "user" and assistant["message"]["role"] == "assistant"
    assert json.dumps(user["message"]).count("How is this project built?") == 1
    assert "It builds with make." in json.dumps(assistant["message"])
    assert [p["text"] for p in rig.sink.of(runtime.id, "textDelta")] == ["It builds with make."]
    statuses = rig.sink.of(runtime.id, "status")
    assert [(s["previous"], s["status"]) for s in statuses] == [("idle", "awaiting_llm"), ("awaiting_llm", "idle")]
    usage = rig.sink.of(runtime.id, "usage")[0]
    assert usage["usedTokens"] == 1050 and usage["contextWindow"] > 0  # after the response that reported it
    assert all(p["conversationId"] == runtime.id for p in events)

    # persistence: every event stored under its seq, the messages, the title from the first message
    assert [seq for seq, _ in rig.store.events_after(runtime.id, 0)] == [p["seq"] for p in events]
    assert [json.loads(m)["message"]["role"] for m in rig.store.load(runtime.id).messages] == ["user", "assistant"]
    (summary,) = rig.store.list_conversations()
    assert summary.title == "How is this project built?" and summary.status == "idle"
    (request,) = rig.llm.requests
    assert request.model == MODEL and request.tools, "a turn offers the tools"
    assert request.messages[-1]["role"] == "user"


@pytest.mark.req("REQ-PROTO-029", "REQ-PERM-002", "REQ-BED-004", "REQ-CORE-007", "REQ-PERM-020")
async def test_interactive_bash_asks_runs_after_allow_and_goes_on(rig: Rig) -> None:
    runtime = rig.new(Policy.INTERACTIVE, Mode.UNRESTRICTED)
    (rig.workdir / "VERSION").write_text("4.2\n")
    rig.llm.enqueue(tool("call-1", "bash", {"command": "cat VERSION"}), text("Version 4.2."))
    mark = rig.sink.last_seq(runtime.id)
    runtime.apply(UserMessage("Which version?"))

    asked = await rig.sink.wait_event(runtime.id, "approvalRequested", mark)
    assert asked["toolName"] == "bash" and asked["toolUseId"] == "call-1"
    assert asked["arguments"] == {"command": "cat VERSION"} and asked["description"]
    # the server parses the line for the always-allow rules before the core sees the call (REQ-PERM-019)
    called = ToolUse("call-1", "bash", {"command": "cat VERSION"}, (("cat", "VERSION"),))
    assert rig.sink.asks == [("approval", runtime.id, asked["toolUseId"], called)]
    assert [s["rule"] for s in asked["scopes"]] == ["cat *", "bash"]
    assert runtime.state.status.kind == "awaiting_approval"
    assert not rig.sink.of(runtime.id, "toolStart"), "nothing runs before the answer"
    assert len(rig.llm.requests) == 1

    assert runtime.answer_approval(asked["toolUseId"], Decision.ALLOW) is None
    rest = await rig.sink.rest(runtime.id, asked["seq"])
    assert rest["status"] == "idle"
    assert rig.sink.kinds(runtime.id, asked["seq"]) == [
        "status:running_tool", "approvalResolved", "toolStart", "toolEnd", "message", "status:awaiting_llm",
        "message", "usage", "status:idle",
    ]
    assert rig.sink.of(runtime.id, "approvalResolved")[0]["decision"] == "allow"
    assert rig.sink.withdrawn == [(runtime.id, asked["toolUseId"])], "the question is closed once answered"
    start, end = rig.sink.of(runtime.id, "toolStart")[0], rig.sink.of(runtime.id, "toolEnd")[0]
    assert start["mode"] == "unrestricted" and end["isError"] is False
    result = results_of(rig.llm.requests[1])["call-1"]
    assert "4.2" in result_text(result) and not result.get("is_error")


@needs_sandbox
@pytest.mark.req("REQ-PERM-002", "REQ-PERM-001", "REQ-BASH-001")
async def test_restricted_bash_runs_sandboxed_without_asking_even_when_interactive(rig: Rig) -> None:
    runtime = rig.new(Policy.INTERACTIVE)
    assert runtime.state.mode is Mode.RESTRICTED
    target = rig.workdir / "out.txt"
    rig.llm.enqueue(tool("call-1", "bash", {"command": f"echo hi > {target}; cat /etc/hostname"}), text("ok"))
    runtime.apply(UserMessage("try it"))
    await rig.sink.rest(runtime.id)
    assert not rig.sink.of(runtime.id, "approvalRequested") and rig.sink.asks == []
    assert rig.sink.of(runtime.id, "toolStart")[0]["mode"] == "restricted"
    assert not target.exists(), "the sandbox kept the write out"
    result = result_text(results_of(rig.llm.requests[1])["call-1"])
    assert "out.txt" in result or "ermission" in result or "Read-only" in result


@pytest.mark.req("REQ-PERM-004", "REQ-PERM-002")
async def test_a_denied_call_never_runs_and_the_model_hears_why(rig: Rig) -> None:
    runtime = rig.new(Policy.INTERACTIVE, Mode.UNRESTRICTED)
    target = rig.workdir / "gone.txt"
    target.write_text("keep me\n")
    rig.llm.enqueue(tool("call-1", "bash", {"command": f"rm {target}"}), text("Understood."))
    runtime.apply(UserMessage("clean up"))
    asked = await rig.sink.wait_event(runtime.id, "approvalRequested")

    assert runtime.answer_approval(asked["toolUseId"], Decision.DENY) is None
    await rig.sink.rest(runtime.id, asked["seq"])
    assert target.read_text() == "keep me\n"
    assert not rig.sink.of(runtime.id, "toolStart")
    assert [p["decision"] for p in rig.sink.of(runtime.id, "approvalResolved")] == ["deny"]
    result = results_of(rig.llm.requests[1])["call-1"]
    assert result["is_error"] is True and result_text(result).startswith("The user denied this tool call.")
    assert runtime.state.status.kind == "idle"


@needs_sandbox
@pytest.mark.req("REQ-BED-015", "REQ-LAYER-002")
async def test_an_approved_upgrade_switches_the_mode_and_resumes_the_turn(rig: Rig) -> None:
    runtime = rig.new()
    assert runtime.state.mode is Mode.RESTRICTED
    rig.llm.enqueue(tool("call-1", "request_mode_upgrade", {"reason": "to fix the typo in README"}), text("Done."))
    runtime.apply(UserMessage("fix the typo"))
    asked = await rig.sink.wait_event(runtime.id, "upgradeRequested")
    assert asked["reason"] == "to fix the typo in README" and asked["toolUseId"] == "call-1"
    assert rig.sink.asks == [("upgrade", runtime.id, "call-1", "to fix the typo in README")]
    assert runtime.state.status.kind == "awaiting_upgrade"

    assert runtime.answer_upgrade(True) is None
    await rig.sink.rest(runtime.id, asked["seq"])
    assert runtime.state.mode is Mode.UNRESTRICTED
    (changed,) = rig.sink.of(runtime.id, "modeChanged")
    assert (changed["previous"], changed["mode"], changed["via"]) == ("restricted", "unrestricted", "upgrade_request")
    (resolved,) = rig.sink.of(runtime.id, "upgradeResolved")
    assert resolved["approved"] is True and resolved["cancelled"] is False
    assert rig.sink.withdrawn == [(runtime.id, "call-1")]
    result = results_of(rig.llm.requests[1])["call-1"]
    assert not result.get("is_error") and "nrestricted" in result_text(result)
    assert rig.sink.of(runtime.id, "status")[-1]["mode"] == "unrestricted"


@pytest.mark.req("REQ-BED-002", "REQ-CORE-007", "REQ-CORE-004")
async def test_a_message_while_busy_is_refused_and_changes_nothing(rig: Rig) -> None:
    runtime = rig.new()
    gate = asyncio.Event()
    rig.llm.enqueue(Step(text("slow answer"), gate=gate))
    runtime.apply(UserMessage("first"))
    await rig.sink.wait_until(lambda: len(rig.llm.requests) == 1, "the request in flight")
    state, count, stored = runtime.state, len(rig.sink.events), rig.store.message_count(runtime.id)

    reject = runtime.check(UserMessage("second"))
    assert isinstance(reject, Reject) and reject.code == "busy"
    assert "cancel" in reject.message.lower() and "busy" in reject.message.lower()
    assert runtime.state is state and len(rig.sink.events) == count, "check is pure: nothing happened"
    outcome = runtime.apply(UserMessage("second"))
    assert outcome.reject == reject, "applying it is refused the same way"
    assert runtime.state == state and len(rig.sink.events) == count
    assert rig.store.message_count(runtime.id) == stored, "a refused message is not stored (no hidden queue)"

    gate.set()
    await rig.sink.rest(runtime.id)
    assert len(rig.llm.requests) == 1 and "second" not in json.dumps(rig.llm.requests[0].messages)


@pytest.mark.req("REQ-BED-006", "REQ-CORE-007")
async def test_a_non_retryable_failure_tells_the_error_before_the_error_status(rig: Rig) -> None:
    runtime = rig.new()
    rig.llm.enqueue(LlmFailure(False, 401, "The API key was rejected (401). Set a valid ANTHROPIC_API_KEY."))
    runtime.apply(UserMessage("hello"))
    rest = await rig.sink.rest(runtime.id)
    assert rest["status"] == "error" and rest["previous"] == "awaiting_llm"
    kinds = rig.sink.kinds(runtime.id)
    assert kinds[-2:] == ["error", "status:error"], "the error is told before the status that reports it"
    assert "retry" not in kinds and len(rig.llm.requests) == 1, "a 401 is not retried"
    (error,) = rig.sink.of(runtime.id, "error")
    assert "API key was rejected" in error["message"]
    assert rig.store.list_conversations()[0].status == "error"


@pytest.mark.req("REQ-BED-006")
async def test_a_retryable_failure_is_retried_and_shown(rig: Rig) -> None:
    runtime = rig.new()
    rig.llm.enqueue(LlmFailure(True, 529, "The API is overloaded (529)."), text("Back again."))
    runtime.apply(UserMessage("hello"))
    rest = await rig.sink.rest(runtime.id)
    assert rest["status"] == "idle" and len(rig.llm.requests) == 2
    (retry,) = rig.sink.of(runtime.id, "retry")
    assert retry["attempt"] == 1 and retry["maxAttempts"] == 3 and retry["delayMs"] == 1
    assert "529" in retry["reason"] or "overloaded" in retry["reason"]
    assert rig.sink.kinds(runtime.id) == [
        "message", "status:awaiting_llm", "retry", "message", "usage", "status:idle",
    ], "the conversation stays awaiting_llm through the retry"
    assert rig.llm.requests[0].messages == rig.llm.requests[1].messages


@pytest.mark.req("REQ-BED-005")
async def test_cancel_while_streaming_persists_nothing_partial(rig: Rig) -> None:
    runtime = rig.new()
    gate = asyncio.Event()  # never set: the response never completes
    rig.llm.enqueue(Step(text("a complete answer"), deltas=("partial ans",), gate=gate))
    runtime.apply(UserMessage("go"))
    await rig.sink.wait_event(runtime.id, "textDelta")

    runtime.apply(Cancel())
    rest = await rig.sink.rest(runtime.id)
    assert rest["status"] == "idle" and rest["previous"] == "awaiting_llm"
    await rig.sink.wait_until(lambda: rig.llm.cancelled == 1, "the request cancelled")
    assert not runtime.turn.llm_tasks and all(t.done() for t in rig.hub.tasks), "no work left running"
    messages = [json.loads(m)["message"] for m in rig.store.load(runtime.id).messages]
    assert "partial ans" not in json.dumps(messages) and "a complete answer" not in json.dumps(messages)
    assert all(m.role == "user" or "partial" not in m.text() for m in runtime.state.history)
    assert [p["message"]["role"] for p in rig.sink.of(runtime.id, "message")] == ["user"]
    # the conversation is usable again at once
    rig.llm.enqueue(text("fresh"))
    runtime.apply(UserMessage("again"))
    await rig.sink.rest(runtime.id, rest["seq"])
    assert "partial ans" not in json.dumps(rig.llm.requests[-1].messages)


# ------------------------------------------------------------------------------ coalesced text deltas


@dataclass
class CountingStore:
    """Counts the store's event writes (each one is a SQLite transaction)."""

    store: Store
    writes: int = 0

    def install(self) -> None:
        for name in ("append_event", "append_events"):
            real = getattr(self.store, name)

            def counted(*args: Any, _real: Any = real, **kw: Any) -> Any:
                self.writes += 1
                return _real(*args, **kw)

            setattr(self.store, name, counted)


def stored_events(store: Store, cid: str) -> list[dict[str, Any]]:
    return [json.loads(text) for _, text in store.events_after(cid, 0, limit=10_000)]


@pytest.mark.req("REQ-PROTO-049", "REQ-PROTO-020")
async def test_a_burst_of_deltas_costs_a_few_transactions_and_is_stored_as_sent(rig: Rig) -> None:
    """2,000 deltas arriving in one go (one network read of a fast model): a handful of events and of store
    transactions, not one of each per delta; the text arrives whole and in order; what is stored is exactly
    what was sent."""
    runtime = rig.new()
    pieces = tuple(f"<{i:05d}>" + "x" * 120 for i in range(2_000))  # 256 KB
    rig.llm.enqueue(Step(text("".join(pieces)), deltas=pieces))
    counter = CountingStore(rig.store)
    counter.install()
    runtime.apply(UserMessage("a long answer, please"))
    await rig.sink.rest(runtime.id)
    deltas = rig.sink.of(runtime.id, "textDelta")
    assert "".join(d["text"] for d in deltas) == "".join(pieces)
    assert 1 <= len(deltas) <= 8, len(deltas)
    assert counter.writes <= 20, f"{counter.writes} event transactions for {len(pieces)} deltas"
    sent = rig.sink.of(runtime.id)
    assert [p["seq"] for p in sent] == list(range(1, len(sent) + 1))
    assert stored_events(rig.store, runtime.id) == sent, "persisted = what the client saw"


@pytest.mark.req("REQ-PROTO-049")
async def test_a_delta_is_sent_without_waiting_for_more(rig: Rig) -> None:
    """Coalescing never holds a delta back for the next one: a model that says a few words and then thinks
    has them shown while it thinks."""
    runtime = rig.new()
    gate = asyncio.Event()
    rig.llm.enqueue(Step(text("Let me think. Done."), deltas=("Let me ", "think."), gate=gate))
    runtime.apply(UserMessage("go"))
    delta = await rig.sink.wait_event(runtime.id, "textDelta")
    assert delta["text"] == "Let me think." and runtime.state.status.kind == "awaiting_llm"
    assert stored_events(rig.store, runtime.id)[-1] == delta
    gate.set()
    await rig.sink.rest(runtime.id)


@pytest.mark.req("REQ-PROTO-049", "REQ-BED-005")
async def test_deltas_pending_at_a_cancel_come_before_it_and_nothing_partial_is_kept(rig: Rig) -> None:
    runtime = rig.new()
    gate = asyncio.Event()  # never set: the response never completes
    rig.llm.enqueue(Step(text("never"), deltas=("first words",), gate=gate))
    runtime.apply(UserMessage("go"))
    await rig.sink.wait_event(runtime.id, "textDelta")
    request_id = runtime.state.status.request_id  # type: ignore[union-attr]
    rig.hub.outbox.queue_text(runtime, request_id, " and more")  # arrived in the same tick as the cancel
    runtime.apply(Cancel())
    assert rig.sink.kinds(runtime.id)[-2:] == ["textDelta", "status:idle"], "a delta never follows the idle"
    assert rig.sink.of(runtime.id, "textDelta")[-1]["text"] == " and more"
    assert stored_events(rig.store, runtime.id) == rig.sink.of(runtime.id), "persisted = what the client saw"
    messages = [json.loads(m)["message"] for m in rig.store.load(runtime.id).messages]
    assert [m["role"] for m in messages] == ["user"], "nothing partial is kept"


@pytest.mark.req("REQ-PROTO-049")
async def test_deltas_close_together_share_an_event_and_the_first_goes_at_once(rig: Rig) -> None:
    runtime = rig.new()
    # long, so that what shares a flush does not depend on timing, and so that "at once" (the first delta) is
    # told from "held for the window" on a machine loaded to 20, where at once took more than 0.4 s
    rig.hub.config.event_coalesce_ms = 2000
    gate = asyncio.Event()
    rig.llm.enqueue(Step(text("never"), deltas=("first",), gate=gate))
    loop = asyncio.get_running_loop()
    started = loop.time()
    runtime.apply(UserMessage("go"))
    await rig.sink.wait_event(runtime.id, "textDelta")
    assert loop.time() - started < 2.0, "the first delta after a quiet spell is not held back for the window"
    request_id = runtime.state.status.request_id  # type: ignore[union-attr]
    rig.hub.outbox.queue_text(runtime, request_id, "second ")
    await asyncio.sleep(0)  # a later network read
    rig.hub.outbox.queue_text(runtime, request_id, "third")
    await rig.sink.wait_until(lambda: len(rig.sink.of(runtime.id, "textDelta")) == 2, "the second flush")
    assert [d["text"] for d in rig.sink.of(runtime.id, "textDelta")] == ["first", "second third"]
    assert stored_events(rig.store, runtime.id) == rig.sink.of(runtime.id)
    runtime.apply(Cancel())


@pytest.mark.req("REQ-PROTO-049", "REQ-PROTO-022")
async def test_deltas_of_several_conversations_share_a_flush_but_keep_their_own_seqs(rig: Rig) -> None:
    first, second = rig.new(), rig.new()
    gates = asyncio.Event(), asyncio.Event()
    rig.llm.enqueue(Step(text("one"), deltas=("o", "ne"), gate=gates[0]), Step(text("two"), deltas=("tw", "o"),
                                                                               gate=gates[1]))
    first.apply(UserMessage("1"))
    second.apply(UserMessage("2"))
    for runtime in (first, second):
        await rig.sink.wait_event(runtime.id, "textDelta")
    for gate in gates:
        gate.set()
    for runtime, answer in ((first, "one"), (second, "two")):
        await rig.sink.rest(runtime.id)
        sent = rig.sink.of(runtime.id)
        assert [p["seq"] for p in sent] == list(range(1, len(sent) + 1))
        assert "".join(p["text"] for p in rig.sink.of(runtime.id, "textDelta")) == answer
        assert stored_events(rig.store, runtime.id) == sent


@pytest.mark.req("REQ-BED-007", "REQ-PROTO-020")
async def test_a_restart_restores_a_pending_approval_and_asks_again(rig: Rig, tmp_path: Path) -> None:
    runtime = rig.new(Policy.INTERACTIVE, Mode.UNRESTRICTED)
    rig.llm.enqueue(tool("call-1", "bash", {"command": "echo restored-run"}))
    runtime.apply(UserMessage("run it"))
    asked = await rig.sink.wait_event(runtime.id, "approvalRequested")
    last = rig.sink.last_seq(runtime.id)
    rig.store.close()  # the server stops: nothing is running, the approval is only stored

    store = Store(tmp_path / "data" / "phoenix.db")
    sink, llm = RecordingSink(), ScriptedLlm()
    hub = make_hub(store, sink, llm)
    try:
        assert hub.restore() == 1
        again = hub.get(runtime.id)
        assert again.state.status.kind == "awaiting_approval"
        (asked_again,) = sink.of(runtime.id, "approvalRequested")
        assert asked_again["toolUseId"] == asked["toolUseId"] and asked_again["toolUseId"] == "call-1"
        assert asked_again["seq"] == last + 1, "numbering goes on after a restart"
        assert [a[:3] for a in sink.asks] == [("approval", runtime.id, asked["toolUseId"])]

        llm.enqueue(text("It printed restored-run."))
        assert again.answer_approval(asked["toolUseId"], Decision.ALLOW) is None
        await sink.rest(runtime.id, asked_again["seq"])
        assert "restored-run" in result_text(results_of(llm.requests[0])["call-1"])
        assert [m["role"] for m in llm.requests[0].messages] == ["user", "assistant", "user"]
        assert not sink.drifts and not llm.overrun
    finally:
        await stop(hub)
        store.close()


@pytest.mark.req("REQ-PROTO-029")
async def test_a_slow_conversation_never_delays_another(rig: Rig) -> None:
    slow, quick = rig.new(), rig.new()
    gate = asyncio.Event()
    rig.llm.enqueue(Step(text("slow"), gate=gate), text("quick"))
    slow.apply(UserMessage("take your time"))
    quick.apply(UserMessage("be quick"))
    await rig.sink.rest(quick.id)
    assert slow.state.status.kind == "awaiting_llm", "the other one is still waiting for its model"
    gate.set()
    await rig.sink.rest(slow.id)
    assert slow.state.history[-1].text() == "slow" and quick.state.history[-1].text() == "quick"


@pytest.mark.req("REQ-INSTR-001", "REQ-INSTR-002")
async def test_project_instructions_reach_every_request_byte_stable_and_sub_agents_get_them(rig: Rig) -> None:
    from phoenix_lsp.core.events import SetInstructions
    from phoenix_lsp.core.values import InstructionFile

    rules = "# Project instructions\n\n## /w/AGENTS.md\nrun make test before you say done"
    files = (InstructionFile("/w/AGENTS.md", 33, 33),)
    runtime = rig.hub.create(working_directory=str(rig.workdir), model=None, style=Style.DEVELOPMENT,
                             policy=Policy.AUTO, instructions=(rules, files))
    rig.llm.enqueue(tool("t1", "spawn_agents", {"tasks": ["count the tests"]}),
                    tool("s1", "submit_result", {"result": "42 tests"}), text("There are 42."), text("ok"))
    assert runtime.apply(UserMessage("How many tests?")).reject is None
    await rig.sink.rest(runtime.id)
    def system(request: LlmRequest) -> str:
        return request.system if isinstance(request.system, str) else "".join(b["text"] for b in request.system)

    parent_first, child, parent_last = rig.llm.requests[:3]
    assert system(parent_first).endswith(rules) and system(child).endswith(rules)
    assert parent_last.system == parent_first.system  # byte-stable within the conversation: the cache holds
    # a reload between turns changes what the next request carries
    assert runtime.apply(SetInstructions("# Project instructions\n\nnew rules", ())).reject is None
    assert runtime.apply(UserMessage("again")).reject is None
    await rig.sink.rest(runtime.id, after=rig.sink.last_seq(runtime.id))
    assert system(rig.llm.requests[-1]).endswith("new rules") and rules not in system(rig.llm.requests[-1])


@pytest.mark.req("REQ-PROTO-037")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_the_property_tests_notification_models_are_the_ones_the_server_sends(data: st.DataObject) -> None:
    """tests/core checks every notification the core emits against the event it becomes; that map must not
    drift from the server's translation, which must take every kind of notification the core has."""
    assert set(NOTIFY_MODELS) == set(get_args(Notification))
    for kind, model in NOTIFY_MODELS.items():
        note = data.draw(st.from_type(kind))
        event = wire.notification_event(note, billed)
        assert type(event) is model
        to_wire(event)


@pytest.mark.req("REQ-PROTO-029")
def test_every_effect_of_the_core_has_a_handler() -> None:
    """The runtime carries out each effect by the handler its type has in a table (as the core finds an
    event's handler in its own): an effect the core gains without a handler there would be dropped."""
    from phoenix_lsp.core.effects import Effect
    from phoenix_lsp.server.runtime import HANDLERS

    assert set(HANDLERS) == set(get_args(Effect))
