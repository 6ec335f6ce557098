"""Runs conversations: feeds events to the pure core and carries out its effects (REQ-PROTO-029).

One ``Runtime`` per conversation, all on the server's event loop. ``apply`` runs a transition and executes
its effects synchronously in order — persistence first (REQ-BED-007) — and starts asynchronous work (LLM
requests, tools) as tasks whose outcomes come back through ``apply``. Cancelling is applied the moment it
arrives; a late outcome of cancelled work carries a stale id and the core drops it (REQ-BED-005).

Text deltas are coalesced (REQ-PROTO-049): the model's deltas wait in the hub's outbox, each appended to the
conversation's pending ``textDelta`` event, until the event loop has handled what is ready, and at most once
every ``HubConfig.event_coalesce_ms`` (a delta after a quiet spell goes at once; under load the flushes, each
one store transaction, are paced), or at once when the outbox holds ``OUTBOX_FLUSH_BYTES``. A flush stores
every pending event of every conversation in one transaction and only then sends them. Any other event, and
any transition, first flushes the outbox, so seqs stay in order, what is stored is exactly what clients were
sent, and nothing is sent that a crash could lose.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from .. import codec
from ..core import machine
from ..core.effects import (
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
from ..core.events import (
    AgentEnded,
    AgentUsage,
    ApprovalAnswer,
    Cancel,
    Event,
    LlmDone,
    LlmFailed,
    Restore,
    Stop,
    ToolDone,
    UpgradeAnswer,
    UserMessage,
    WindowReported,
)
from ..core.notifications import (
    ApprovalResolved,
    ModeChanged,
    ModelChanged,
    Notification,
    StatusChanged,
    StyleSuggested,
    UpgradeResolved,
)
from ..core.state import BUSY, RESTING_KINDS, ConversationState, Settings
from ..core.values import Decision, InstructionFile, Message, Mode, Policy, Route, Style, Text, ToolUse, Usage
from ..llm.cache import CacheSettings
from ..llm.models import PRICES, context_window
from ..llm.pricing import Price
from ..protocol import events as ev
from ..protocol.base import to_wire
from ..protocol.views import AgentRef, ContextUsage, StyleSuggestion
from ..sandbox.env import clean_environment  # one rule for the server and `sandbox run` (REQ-BASH-021)
from ..store import AuditEntry, ConversationRecord, Store
from . import prompts, wire

log = logging.getLogger(__name__)

#: The outbox is flushed at once when its text reaches this size (a burst from the model in one read).
OUTBOX_FLUSH_BYTES = 256 * 1024
#: A pending textDelta takes no more text than this; more starts the next event.
MAX_DELTA_EVENT_BYTES = 64 * 1024


@dataclass
class _PendingDelta:
    """A textDelta event whose seq is taken and whose text is still being gathered."""

    runtime: Runtime
    seq: int
    request_id: int
    parts: list[str]
    size: int


@dataclass(frozen=True)
class Outcome:
    """What applying one event did, for the request that caused it: the refusal, or what it accepted."""

    reject: Reject | None = None
    command: UserCommand | None = None
    suggestion: StyleSuggestion | None = None


class Sink(Protocol):
    """What the runtime needs from the LSP side (implemented by the server). A sink may also have
    ``event_batch(events, texts)`` to send several stored events at once (see :meth:`Hub.send`)."""

    def event(self, event: ev.EventKinds, params: dict[str, Any]) -> None: ...
    def ask_approval(self, runtime: Runtime, tool_use_id: str, call: ToolUse) -> None: ...
    def ask_upgrade(self, runtime: Runtime, tool_use_id: str, reason: str) -> None: ...
    def withdraw(self, runtime: Runtime, tool_use_id: str) -> None: ...
    def open_documents(self) -> Mapping[Path, str]: ...
    async def apply_patch(self, runtime: Runtime, call: ToolUse) -> tuple[str, bool]: ...


class LlmLike(Protocol):
    async def stream(self, request: Any, on_text: Callable[[str], None]) -> Any: ...


@dataclass
class HubConfig:
    model: str
    retry_base_ms: int = 1000
    retry_after_max_ms: int = 60_000  # the cap on a provider's retry-after (REQ-BED-006)
    event_coalesce_ms: float = 1.0  # text deltas are flushed (stored, then sent) at most this often (REQ-PROTO-049)
    bash_timeout_s: float | None = None
    agent_time_limit_s: float = 600.0
    agent_max_turns: int = 50
    agent_concurrency: int = 4
    env: Mapping[str, str] = field(default_factory=dict)
    cache: CacheSettings = field(default_factory=CacheSettings)  # prompt caching (issue 16)
    prices: Mapping[str, Price] = field(default_factory=lambda: dict(PRICES))
    deny_read: tuple[Path, ...] | None = None  # None: sandbox defaults (see sandbox/denylist.py)
    background_timeout_s: float | None = None
    config_dir: Path | None = None  # the user-level AGENTS.md's directory; None: the platform's config dir
    agent: Any = None  # the agent route (server/agent_route.py ``AgentRoute``), or None: not set up
    sight_settle_ms: int = 1500  # after a patch, the longest wait for the editor's problems to change
    sight_timeout_ms: int = 1500  # how long beyond that the editor may take to answer (REQ-SIGHT-003)


class NotFound(Exception):
    def __init__(self, conversation_id: str) -> None:
        super().__init__(
            f"No conversation '{conversation_id}': it does not exist on this server (check the id, or list "
            "conversations with phoenix/listConversations)."
        )
        self.conversation_id = conversation_id


class Hub:
    """All conversations of one server process, the store, the LLM client and the way to the clients."""

    def __init__(self, store: Store, llm: LlmLike, sandbox: Any, config: HubConfig, sink: Sink) -> None:
        self.store = store
        self.llm = llm
        self.sandbox = sandbox
        self.config = config
        self.sink = sink
        self.runtimes: dict[str, Runtime] = {}
        self.agent_slots = asyncio.Semaphore(config.agent_concurrency)
        self.tasks: set[asyncio.Task[Any]] = set()
        self.outbox: list[_PendingDelta] = []
        self._outbox_bytes = 0
        self._flush_soon: asyncio.Handle | None = None
        self._flushed_at = float("-inf")  # the loop's time of the last flush
        self.window_lookups: dict[str, asyncio.Task[None]] = {}  # conversation id -> its window being asked

    # ------------------------------------------------------------------------------- text deltas

    def queue_text(self, runtime: Runtime, request_id: int, text: str) -> None:
        """A text delta for ``runtime``'s clients: added to its pending textDelta event (a new one when there is
        none, it belongs to another request or it is full), sent with the next flush."""
        pending = runtime.pending_delta
        if pending is None or pending.request_id != request_id or pending.size >= MAX_DELTA_EVENT_BYTES:
            runtime.seq += 1
            pending = _PendingDelta(runtime, runtime.seq, request_id, [], 0)
            runtime.pending_delta = pending
            self.outbox.append(pending)
        pending.parts.append(text)
        pending.size += len(text)
        self._outbox_bytes += len(text)
        if self._outbox_bytes >= OUTBOX_FLUSH_BYTES:
            self.flush()
        elif self._flush_soon is None:
            # after the callbacks that are ready now (the deltas of one network read travel together), and not
            # sooner than event_coalesce_ms after the previous flush (the deltas of many streams share one)
            loop = asyncio.get_running_loop()
            wait = self._flushed_at + self.config.event_coalesce_ms / 1000 - loop.time()
            self._flush_soon = loop.call_later(wait, self.flush) if wait > 0 else loop.call_soon(self.flush)

    def flush(self) -> None:
        """Store every pending textDelta event in one transaction, then send them, in seq order."""
        if self._flush_soon is not None:
            self._flush_soon.cancel()
            self._flush_soon = None
        if not self.outbox:
            return
        self._flushed_at = asyncio.get_running_loop().time()
        pending, self.outbox, self._outbox_bytes = self.outbox, [], 0
        now = time.time()
        out: list[tuple[ev.TextDelta, dict[str, Any]]] = []
        rows: list[tuple[str, int, str]] = []
        for p in pending:
            runtime = p.runtime
            if runtime.pending_delta is p:
                runtime.pending_delta = None
            text = self.store.guard.redact("".join(p.parts))  # a secret split between these deltas is found
            event = ev.TextDelta(text=text, request_id=p.request_id, conversation_id=runtime.id,
                                 seq=p.seq, time=now, parent_conversation_id=runtime.state.parent_id)
            params = to_wire(event)
            rows.append((runtime.id, p.seq, json.dumps(params)))
            out.append((event, params))
        self.store.append_events(rows)
        self.send(out, [text for _, _, text in rows])

    def send(self, events: Sequence[tuple[ev.EventKinds, dict[str, Any]]], texts: Sequence[str]) -> None:
        """Send stored events (``texts``: each one's JSON as stored). The LSP server sends them in one write,
        framed around the stored JSON, so a big message is not serialised again."""
        send_all = getattr(self.sink, "event_batch", None)
        if send_all is not None:
            send_all(events, texts)
        else:
            for event, params in events:
                self.sink.event(event, params)

    # -------------------------------------------------------------------------------- conversations

    def create(
        self,
        *,
        working_directory: str,
        model: str | None,
        style: Style,
        policy: Policy,
        parent: Runtime | None = None,
        origin_id: str | None = None,
        conversation_id: str | None = None,
        seed: Message | None = None,
        instructions: tuple[str, tuple[InstructionFile, ...]] = ("", ()),
    ) -> Runtime:
        """A new conversation. A sub-agent gets its parent's project instructions (REQ-INSTR-001)."""
        cid = conversation_id or uuid.uuid4().hex
        model = model or self.config.model
        # REQ-SIGHT-002: the editor's tools when the client announced them now; a sub-agent has its parent's
        sight = parent.state.editor_sight if parent is not None else bool(getattr(self.sink, "editor_sight", False))
        settings = Settings(retry_base_ms=self.config.retry_base_ms, retry_after_max_ms=self.config.retry_after_max_ms,
                            context_window=self.window(model))
        if parent is not None:
            settings = replace(settings, max_turns=self.config.agent_max_turns)
            instructions = (parent.state.instructions, parent.state.instruction_files)
        state = machine.new_conversation(
            cid,
            model=model,
            working_directory=working_directory,
            sandbox=bool(self.sandbox.available),
            style=style,
            policy=policy,
            settings=settings,
            is_subagent=parent is not None,
            parent_id=parent.id if parent else None,
            origin_id=origin_id,
            history=(seed,) if seed else (),
            instructions=instructions[0],
            instruction_files=instructions[1],
            editor_sight=sight,
        )
        record = ConversationRecord(
            id=cid,
            parent_id=parent.id if parent else None,
            origin_id=origin_id,
            is_subagent=parent is not None,
            working_directory=working_directory,
            model=model,
            title="",
            created_at=time.time(),
        )
        self.store.create_conversation(record)
        runtime = Runtime(self, state, last_seq=0)
        self.runtimes[cid] = runtime
        effects: tuple[Effect, ...] = (PersistMessage(0, seed), PersistState()) if seed else (PersistState(),)
        runtime._persist(effects)
        self.learn_window_soon(runtime)
        return runtime

    # ---------------------------------------------------------------- the context window (issue 27)

    def learn_window_soon(self, runtime: Runtime) -> None:
        """Ask the model's server for its context window in the background, when nobody has reported it yet
        (an Ollama model chosen before any listModels): the request that created the conversation is answered
        at once, and the first turn waits for the answer (:meth:`learn_window`), which the core then takes."""
        learnable = getattr(self.llm, "learnable", None)
        if learnable is None or not learnable(runtime.state.model) or runtime.id in self.window_lookups:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous caller): the first turn asks
            return
        task = self.spawn(self._learn_window(runtime, runtime.state.model))
        self.window_lookups[runtime.id] = task
        task.add_done_callback(lambda _: self.window_lookups.pop(runtime.id, None))

    async def learn_window(self, runtime: Runtime) -> None:
        """Before a request: the window of the conversation's model, asked now if it is still unknown (at most
        the router's bound), so the request's answer is measured against the right window."""
        pending = self.window_lookups.get(runtime.id)
        if pending is not None:  # asked since the conversation was created (or switched): that answer first
            await asyncio.shield(pending)
        learnable = getattr(self.llm, "learnable", None)
        if learnable is not None and learnable(runtime.state.model):
            await self._learn_window(runtime, runtime.state.model)

    async def _learn_window(self, runtime: Runtime, model: str) -> None:
        router: Any = self.llm
        if not await router.learn(model):
            return
        window = int(router.context_window(model))
        if runtime.state.model == model and window != runtime.state.settings.context_window:
            note = router.window_note(model)
            log.info("%s", note)
            say = getattr(self.sink, "log_to_client", None)
            if say is not None:
                say(note)
            runtime.apply(WindowReported(model, window))  # the core decides (a switch may have come first)

    def window(self, model: str) -> int:
        """The context window of ``model``: its provider's figure (issue 27), else the table of known models."""
        window = getattr(self.llm, "context_window", None)
        return int(window(model)) if window is not None else context_window(model)

    def get(self, conversation_id: str) -> Runtime:
        runtime = self.runtimes.get(conversation_id)
        if runtime is not None:
            return runtime
        if not self.store.exists(conversation_id):
            raise NotFound(conversation_id)
        return self._load(conversation_id)

    def _load(self, conversation_id: str) -> Runtime:
        loaded = self.store.load(conversation_id)
        history = tuple(codec.decode_message(json.dumps(json.loads(m)["message"])) for m in loaded.messages)
        assert loaded.state_json is not None
        state = codec.decode_state(loaded.state_json, history)
        if getattr(state.status, "batch", None) is not None:  # calls still to run may use old field names
            from ..tools import registry

            state = registry.restore_pending(state)
        runtime = Runtime(self, state, last_seq=self.store.last_seq(conversation_id) or 0)
        self.runtimes[conversation_id] = runtime
        return runtime

    def restore(self) -> int:
        """After a start: conversations that were busy are restored (REQ-BED-007). Returns how many."""
        count = 0
        for summary in self.store.list_conversations(include_subagents=True):
            if summary.status not in RESTING_KINDS:
                runtime = self.get(summary.id)
                runtime.apply(Restore())
                count += 1
        return count

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())


class Runtime:
    """One conversation on the event loop."""

    def __init__(self, hub: Hub, state: ConversationState, last_seq: int) -> None:
        self.hub = hub
        self.state = state
        self.seq = last_seq
        self.llm_tasks: dict[int, asyncio.Task[Any]] = {}
        self.tool_tasks: dict[str, asyncio.Task[Any]] = {}
        self.clipboards: dict[str, str] = {}
        self.deadline: asyncio.Task[Any] | None = None  # a sub-agent's time limit (REQ-BED-008)
        self.pending_delta: _PendingDelta | None = None  # the textDelta event still gathering text
        #: host calls of a running plan waiting for the core's answer: call id -> (allowed, message)
        self.host_calls: dict[str, asyncio.Future[tuple[bool, str, str]]] = {}
        self.host_descriptions: dict[str, str] = {}  # host call id -> what its approval question says
        self._stopping = False  # ending a turn whose state could not be saved (see ``_unsaved``)

    @property
    def id(self) -> str:
        return self.state.id

    # ------------------------------------------------------------------------------------ events

    def emit(self, event: ev.EventKinds) -> int:
        """Send one phoenix/event, numbered and stored first (so catch-up can rely on it), after the text
        deltas still in the outbox."""
        self.hub.flush()
        self.seq += 1
        event = event.model_copy(
            update={"conversation_id": self.id, "seq": self.seq, "time": time.time(),
                    "parent_conversation_id": self.state.parent_id}
        )
        params = to_wire(event)
        text = json.dumps(params)
        self.hub.store.append_event(self.id, self.seq, text)
        self.hub.send([(event, params)], [text])
        return self.seq

    def check(self, event: Event) -> Reject | None:
        """The refusal ``event`` would get now, without applying it (the core is pure: nothing happens)."""
        _, effects = machine.transition(self.state, event)
        return next((e for e in effects if isinstance(e, Reject)), None)

    def apply(self, event: Event) -> Outcome:
        """Run one event through the core, persist, and carry out the effects in order.

        A state that cannot be saved never becomes the state (REQ-BED-007): when persisting fails (the store
        refuses a secret, the disk is full), the conversation keeps its state from before the event, none of
        the event's effects is carried out, the user is told (an ``error`` event of kind ``store``), a turn in
        progress ends as if cancelled, and the event is refused (``Outcome.reject``) for whoever sent it."""
        before = self.state
        self.state, effects = machine.transition(before, event)
        try:
            self._persist(effects)
        except Exception as exc:  # whatever the store raised, the new state is not ours
            self.state = before
            return self._unsaved(event, exc)
        outcome = Outcome()
        for effect in effects:
            match effect:
                case PersistMessage() | PersistState():
                    continue
                case Reject():
                    outcome = replace(outcome, reject=effect)
                case UserCommand():
                    outcome = replace(outcome, command=effect)
                case StyleSuggested():
                    outcome = replace(outcome, suggestion=wire.suggestion_to_wire(effect))
            try:
                self._execute(effect)
            except Exception:  # one failing effect must not take the conversation down
                log.exception("effect %s of %s failed", type(effect).__name__, self.id)
        return outcome

    def _unsaved(self, event: Event, exc: Exception) -> Outcome:
        """``event`` was not applied because its state could not be saved (see :meth:`apply`)."""
        from ..store.errors import SecretLeakError

        what = type(event).__name__
        log.error("conversation %s: the state after %s could not be saved, so it was not applied: %s",
                  self.id, what, self.hub.store.guard.redact(str(exc)))
        if isinstance(exc, SecretLeakError):
            why = ("it held a secret (a credential in a tool call's arguments or in the model's output), and a "
                   "secret is never written to the database")
        else:
            why = f"the store failed ({type(exc).__name__}: {self.hub.store.guard.redact(str(exc))[:300]})"
        busy = isinstance(self.state.status, BUSY)
        message = (f"A change to this conversation could not be saved, so it was not made: {why}. "
                   + ("The turn was stopped; nothing of it after this point ran. " if busy else "")
                   + "Send a new message to go on (without the secret, if one was pasted).")
        with contextlib.suppress(Exception):  # telling the user must not fail the refusal
            self.emit(ev.Error(message=message, error_kind="store"))
        if busy and not self._stopping:
            self._stopping = True  # a stop that cannot be saved either must not loop
            try:
                self.apply(Stop(message) if self.state.is_subagent else Cancel())
            finally:
                self._stopping = False
        return Outcome(reject=Reject("illegal_event", message))

    def _persist(self, effects: tuple[Effect, ...]) -> None:
        self.hub.flush()  # the deltas shown so far come before whatever this transition stores and says
        messages = [e for e in effects if isinstance(e, PersistMessage)]
        now = time.time()
        items: list[tuple[int, str]] = []
        for e in messages:
            seq = self.seq + 1 + len(items)  # the seq of the "message" event announcing it, just below
            # the encoded message is put in as it is: a 20 MB answer is not parsed and dumped again
            body = f'{{"seq": {seq}, "time": {json.dumps(now)}, "message": {codec.encode_message(e.message)}}}'
            items.append((e.index, body))
        state_json = codec.encode_state(self.state) if any(isinstance(e, PersistState) for e in effects) else None
        # every text is checked before anything is written: a refused state never leaves its messages behind
        guard = self.hub.store.guard
        for index, body in items:
            guard.check(body, f"message {index} of conversation {self.id!r}")
        if state_json is not None:
            guard.check(state_json, f"the state of conversation {self.id!r}")
        if items:
            self.hub.store.append_messages(self.id, items)
        if state_json is not None:
            self.hub.store.save_state(self.id, state_json, self.state.status.kind, now)
        for e in messages:
            self.emit(ev.MessageAdded(message=wire.message_to_wire(e.message, self.seq + 1, e.index, now)))

    def _execute(self, effect: Effect) -> None:
        match effect:
            case RequestLlm():
                self.llm_tasks[effect.request_id] = self.hub.spawn(self._llm(effect))
            case CancelLlm():
                if task := self.llm_tasks.pop(effect.request_id, None):
                    task.cancel()
            case RunTool():
                self.tool_tasks[effect.call.id] = self.hub.spawn(self._tool(effect))
            case CancelTool():
                if task := self.tool_tasks.pop(effect.tool_use_id, None):
                    task.cancel()
            case AnswerHostCall():
                waiting = self.host_calls.pop(effect.call_id, None)
                if waiting is not None and not waiting.done():
                    waiting.set_result((effect.allowed, effect.message, effect.by))
            case AskApproval():
                self.emit(ev.ApprovalRequested(**self.approval_fields(effect.call)))
                self.hub.sink.ask_approval(self, effect.call.id, effect.call)
            case AskUpgrade():
                self.emit(ev.UpgradeRequested(tool_use_id=effect.tool_use_id,
                                              reason=effect.reason))
                self.hub.sink.ask_upgrade(self, effect.tool_use_id, effect.reason)
            case _ if isinstance(effect, Notification):
                self._notify(effect)
            case Audit():
                self.hub.store.append_audit(
                    AuditEntry(
                        time=time.time(),
                        conversation_id=self.id,
                        actor=effect.actor,
                        action=effect.action,
                        mode=self.state.mode.value,
                        style=self.state.style.value,
                        detail=json.dumps(dict(effect.detail)),
                    )
                )
            case SetTitle():
                self.hub.store.update_title(self.id, effect.title)
            case SpawnAgents():
                self._spawn_agents(effect)
            case StopAgents():
                for agent_id in effect.agent_ids:
                    with contextlib.suppress(NotFound):
                        self.hub.get(agent_id).apply(Stop(effect.reason))
            case ReportToParent():
                self._report(effect)
            case ReportUsage():
                with contextlib.suppress(NotFound):
                    self.hub.get(effect.parent_id).apply(AgentUsage(effect.agent_id, effect.usage))
            case PersistMessage() | PersistState() | Reject() | UserCommand():
                pass  # persisted first, or answered by the request that caused it

    def _report(self, effect: ReportToParent) -> None:
        if self.deadline is not None and self.deadline is not asyncio.current_task():
            self.deadline.cancel()  # finished in time: the timer must not outlive the agent
        self.deadline = None
        with contextlib.suppress(NotFound):
            parent = self.hub.get(effect.parent_id)
            # persist the result in the parent first: a client is never told of a result a crash could lose
            parent.apply(AgentEnded(effect.agent_id, effect.ok, effect.result))
            parent.emit(ev.SubAgentFinished(agent_id=effect.agent_id, outcome="submitted" if effect.ok else "failed",
                                            reason=None if effect.ok else effect.result))

    def approval_fields(self, call: ToolUse) -> dict[str, Any]:
        from ..core.rules import scopes_for

        return {
            "tool_use_id": call.id,
            "tool_name": call.name,
            "description": self.host_descriptions.get(call.id) or describe_tool(call.name),
            "arguments": dict(call.input),
            "diff": self.patch_diff(call),
            "scopes": [wire.scope_to_wire(s) for s in scopes_for(self.state.always_allow, call)],
        }

    def patch_diff(self, call: ToolUse) -> str | None:
        """The unified diff a patch call would make now (REQ-PERM-005), or None when it would fail."""
        if call.name != "patch":
            return None
        from .edits import preview_diff

        return preview_diff(Path(self.state.working_directory), call, self.hub.sink.open_documents(), self.clipboards)

    def _notify(self, effect: Notification) -> None:
        """Send the core's notification as its phoenix/event (the core said everything it says), and do what the
        server does on it."""
        if isinstance(effect, ModelChanged):
            self.hub.store.update_model(self.id, effect.model)  # listings name the model in use
        self.emit(wire.notification_event(effect, self.token_fields))
        match effect:
            case ApprovalResolved() | UpgradeResolved():
                self.hub.sink.withdraw(self, effect.tool_use_id)
            case StatusChanged(status="finished"):
                from ..sandbox.background import end_conversation_jobs

                end_conversation_jobs(self.id)  # its background jobs and their logs end with it
                if self.hub.config.agent is not None:
                    self.hub.config.agent.forget(self.id)  # and its artifacts
            case ModeChanged(previous=Mode.RESTRICTED, mode=mode) if mode is not Mode.RESTRICTED:
                from ..sandbox.background import end_restricted_jobs

                end_restricted_jobs(self.id)  # no lock or lease of the read-only phase outlives it

    def usage(self) -> ContextUsage:
        return wire.usage_to_wire(machine.context_usage(self.state))

    def token_fields(self) -> dict[str, Any]:
        """Billed tokens of the latest request and of the whole conversation, with a cost estimate (issue 16)."""
        from .usage import token_usage

        return token_usage(self.state, self.hub.config.prices, self.hub.config.cache.ttl)

    # ------------------------------------------------------------------------------------- the LLM

    async def _llm(self, effect: RequestLlm) -> None:
        from ..llm.cache import build_request
        from ..llm.client import LlmFailure
        from ..tools import registry

        try:
            if effect.delay_ms:
                await asyncio.sleep(effect.delay_ms / 1000)
            await self.hub.learn_window(self)  # an Ollama model's own window, before its answer is measured
            state = self.state
            catalogue = ""
            if state.route is Route.AGENT and not state.is_subagent and self.hub.config.agent is not None:
                catalogue = await self.hub.config.agent.catalogue_text()  # MCP discovery, once per server
                state = self.state
            request = build_request(  # cache breakpoints, summary tools and instruction: llm/cache.py
                model=state.model,
                system=prompts.system_prompt(state.style, state.working_directory, state.is_subagent,
                                             self._started_restricted(), state.instructions),
                messages=wire.history_to_api(state.history, self.hub.store.get_image),
                tools=registry.definitions(state.is_subagent, state.working_directory, state.route, catalogue,
                                           state.editor_sight),
                cache=self.hub.config.cache,
                summary=effect.purpose == "summary",
                instruction=effect.instruction,
            )
            def on_text(text: str) -> None:
                self.hub.queue_text(self, effect.request_id, text)  # redacted when the event is made

            if state.is_subagent:
                async with self.hub.agent_slots:
                    outcome = await self.hub.llm.stream(request, on_text)
            else:
                outcome = await self.hub.llm.stream(request, on_text)
        except asyncio.CancelledError:
            return
        finally:
            self.llm_tasks.pop(effect.request_id, None)
        if isinstance(outcome, LlmFailure):
            self.apply(LlmFailed(effect.request_id, outcome.retryable, outcome.message, outcome.status,
                                 outcome.retry_after_ms))
            return
        content = tuple(self._block(b) for b in outcome.content if b.get("type") in ("text", "tool_use"))
        usage = Usage(**{k: int(v) for k, v in outcome.usage.items() if k in Usage.__dataclass_fields__})
        self.apply(LlmDone(effect.request_id, content, outcome.stop_reason, usage))

    def _block(self, block: dict[str, Any]) -> Text | ToolUse:
        from ..llm.client import TOOL_INPUT_ERROR_KEY
        from ..tools import registry

        guard = self.hub.store.guard
        if block["type"] == "text":
            return Text(guard.redact(block.get("text", "")))
        tool_input = block.get("input")
        name = str(block["name"])
        error = registry.check(name, tool_input, block.get(TOOL_INPUT_ERROR_KEY))  # REQ-CORE-007
        arguments = tool_input if isinstance(tool_input, dict) else {}
        commands = None
        if name == "bash" and error is None and isinstance(arguments.get("command"), str):
            from ..tools.bash_scope import simple_commands

            commands = simple_commands(arguments["command"])  # the core matches rules on these (REQ-PERM-019)
        return ToolUse(str(block["id"]), name, arguments, commands, input_error=error)

    def _started_restricted(self) -> bool:
        return (self.state.sandbox and not self.state.is_subagent) or self.state.mode is Mode.RESTRICTED

    # ----------------------------------------------------------------------------------- tools

    async def _tool(self, effect: RunTool) -> None:
        call = effect.call
        self.emit(ev.ToolStart(tool_use_id=call.id, tool_name=call.name, arguments=dict(call.input),
                               mode=effect.mode))
        try:
            output, is_error, refused = await self._run_tool(call, effect.mode)
        except asyncio.CancelledError:
            self.emit(ev.ToolEnd(tool_use_id=call.id, is_error=True, summary="cancelled"))
            return
        except Exception as exc:
            log.exception("tool %s failed", call.name)
            output, is_error, refused = f"Internal error while running {call.name}: {exc}", True, False
        finally:
            self.tool_tasks.pop(call.id, None)
        output = self.hub.store.guard.redact(output)
        self.emit(ev.ToolEnd(tool_use_id=call.id, is_error=is_error, summary=output[:200]))
        self.apply(ToolDone(call.id, output, is_error, refused))

    async def _run_tool(self, call: ToolUse, mode: Mode) -> tuple[str, bool, bool]:
        from ..tools import registry

        context = registry.ToolContext(
            working_directory=Path(self.state.working_directory),
            mode=mode,
            conversation_id=self.id,
            open_documents=self.hub.sink.open_documents,
            apply_patch=lambda c: self.hub.sink.apply_patch(self, c),
            env=self.hub.config.env,
            sandbox=self.hub.sandbox,
            bash_timeout_s=self.hub.config.bash_timeout_s,
            deny_read=self.hub.config.deny_read,
            background_timeout_s=self.hub.config.background_timeout_s,
            editor=self._editor(),
            **self._agent_context(),
        )
        done = await registry.run(call, context)
        return done.output, done.is_error, done.refused_by_sandbox

    def _editor(self) -> Any:
        """The editor's sight for this conversation's tools (REQ-SIGHT-002), or None: it has none, or the client
        connected now does not offer it."""
        if not self.state.editor_sight:
            return None
        make = getattr(self.hub.sink, "sight_for", None)
        return make(self) if make is not None else None

    def _agent_context(self) -> dict[str, Any]:
        route = self.hub.config.agent
        if route is None:
            return {}
        if route.unavailable is not None:
            return {"agent_unavailable": route.unavailable}
        return {"agent": route.tools_for(self)}

    async def host_call(self, tool_use_id: str, call: ToolUse, kind: Any,
                        description: str = "") -> tuple[bool, str, str]:
        """Ask the core whether a running plan's host call may go ahead (REQ-AGENT-014/015); waits for the
        user's answer when the policy asks (the question shows ``description``). The answer is (allowed, the
        refusal's message, who refused: ``AnswerHostCall.by``); a rejected event is a no with its message."""
        from ..core.events import HostCall

        waiting: asyncio.Future[tuple[bool, str, str]] = asyncio.get_running_loop().create_future()
        self.host_calls[call.id] = waiting
        if description:
            self.host_descriptions[call.id] = description
        try:
            outcome = self.apply(HostCall(tool_use_id, call, kind))
            if outcome.reject is not None:
                return False, outcome.reject.message, ""
            return await waiting
        finally:
            self.host_calls.pop(call.id, None)
            self.host_descriptions.pop(call.id, None)

    # ------------------------------------------------------------------------------------ sub-agents

    def _spawn_agents(self, effect: SpawnAgents) -> None:
        agents = []
        for spec in effect.agents:
            child = self.hub.create(
                working_directory=self.state.working_directory,
                model=self.state.model,
                style=Style.TASK,
                policy=self.state.policy,
                parent=self,
                conversation_id=spec.agent_id,
            )
            assert child.state.mode is effect.mode
            agents.append(AgentRef(conversation_id=child.id, task=spec.task))
        self.emit(ev.SubAgentsSpawned(tool_use_id=effect.tool_use_id, agents=agents))
        for spec in effect.agents:
            child = self.hub.get(spec.agent_id)
            child.apply(UserMessage(spec.task))
            child.deadline = self.hub.spawn(child.time_limit(self.hub.config.agent_time_limit_s))

    async def time_limit(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        if self.state.status.kind != "finished":
            self.apply(Stop(f"timed out after {seconds:g} s"))

    # ------------------------------------------------------------------------------------ answers

    def answer_approval(self, tool_use_id: str, decision: Decision, rule: str | None = None,
                        reason: str | None = None) -> Reject | None:
        return self.apply(ApprovalAnswer(tool_use_id, decision, rule, reason)).reject

    def answer_upgrade(self, approve: bool) -> Reject | None:
        return self.apply(UpgradeAnswer(approve)).reject

    @property
    def busy(self) -> bool:
        return isinstance(self.state.status, BUSY)


def describe_tool(name: str) -> str:
    from ..tools import registry

    return registry.describe(name)


def tool_env(keys: Sequence[str] = ()) -> dict[str, str]:
    """The environment of the tools: without credentials (``clean_environment``), nor the variables that hold a
    provider's key (``keys``: a providers file may name its key variable anything, REQ-MODEL-010)."""
    drop = set(keys)
    return {k: v for k, v in clean_environment(os.environ).items() if k not in drop}
