"""One conversation on the event loop (``Runtime``): an event run through the pure core, what it leads to
persisted first (REQ-BED-007), then the effects carried out in order, each by the part that owns the work
(``effects``): ``turn`` (the model's requests), ``tools`` (tool calls, host calls, the patch tool's
clipboards), ``agents`` (sub-agents and a sub-agent's time limit), ``notes`` (the core's notifications)."""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import replace

from ... import codec
from ...core import machine
from ...core.effects import Effect, PersistMessage, PersistState, Reject, RestoreChanges, UserCommand
from ...core.events import ApprovalAnswer, Cancel, Event, Stop, UpgradeAnswer
from ...core.notifications import StyleSuggested
from ...core.state import BUSY, ConversationState
from ...core.values import Decision, ToolUse
from ...protocol import events as ev
from ...protocol.base import to_wire
from ...store.errors import SecretLeakError
from .. import wire
from .agents import Agents
from .base import HubLike, Outcome
from .effects import HANDLERS
from .notify import Notes
from .tools import Tools
from .turn import Turn

log = logging.getLogger(__name__)


class Runtime:
    """One conversation on the event loop: its state and seq, and its parts, each passed what it needs."""

    def __init__(self, hub: HubLike, state: ConversationState, last_seq: int) -> None:
        self.hub = hub
        self.state = state
        self.seq = last_seq
        self._stopping = False  # ending a turn whose state could not be saved (see ``_unsaved``)
        self.tools = Tools(self, hub)
        self.turn = Turn(self, hub, self.tools)
        self.agents = Agents(self, hub)
        self.notes = Notes(self, hub)

    @property
    def id(self) -> str:
        return self.state.id

    @property
    def busy(self) -> bool:
        """Whether a turn runs (the model answers, or tools or questions are open)."""
        return isinstance(self.state.status, BUSY)

    @property
    def clipboards(self) -> Mapping[str, str]:
        """The patch tool's clipboards (``tools`` keeps them), as an adapter applying a patch reads them."""
        return self.tools.clipboards

    def keep_clipboards(self, clipboards: Mapping[str, str]) -> None:
        """A patch applied by the client: its clipboards replace those before it (``tools`` keeps them)."""
        self.tools.keep_clipboards(clipboards)

    def patch_diff(self, call: ToolUse) -> str | None:
        """The unified diff a patch call would make now (REQ-PERM-005), or a bash command's changes under review
        (REQ-BASH-032); None when there is none or the patch would fail."""
        return self.tools.patch_diff(call)

    def call_description(self, call: ToolUse) -> str:
        """What an approval question says ``call`` does (``tools`` knows a host call's own words)."""
        return self.tools.call_description(call)

    # ------------------------------------------------------------------------------------ events

    def emit(self, event: ev.EventKinds) -> int:
        """Send one phoenix/event, numbered and stored first (so catch-up can rely on it), after the text
        deltas still in the outbox."""
        self.hub.outbox.flush()
        event = event.model_copy(
            update={"conversation_id": self.id, "seq": self.next_seq(), "time": time.time(),
                    "parent_conversation_id": self.state.parent_id}
        )
        params = to_wire(event)
        text = json.dumps(params)
        self.hub.store.append_event(self.id, self.seq, text)
        self.hub.outbox.send([(event, params)], [text])
        return self.seq

    def next_seq(self) -> int:
        """Take the next seq (an event's, or a textDelta's the outbox gathers)."""
        self.seq += 1
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
        if (before.undoing or before.reviewing) and not (self.state.undoing or self.state.reviewing):
            self.hub.background.kick(self.id)  # REQ-BASH-044: a command that ended meanwhile is reviewed now
        for effect in effects:
            match effect:
                case PersistMessage() | PersistState():
                    continue
                case Reject():
                    outcome = replace(outcome, reject=effect)
                case UserCommand():
                    outcome = replace(outcome, command=effect)
                case RestoreChanges():
                    outcome = replace(outcome, restore=effect)
                case StyleSuggested():
                    outcome = replace(outcome, suggestion=wire.suggestion_to_wire(effect))
            try:
                HANDLERS[type(effect)](self, effect)
            except Exception:  # one failing effect must not take the conversation down
                log.exception("effect %s of %s failed", type(effect).__name__, self.id)
        return outcome

    def _unsaved(self, event: Event, exc: Exception) -> Outcome:
        """``event`` was not applied because its state could not be saved (see :meth:`apply`)."""
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
        self.hub.outbox.flush()  # the deltas shown so far come before whatever this transition stores and says
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
            view = wire.message_to_wire(e.message, self.seq + 1, e.index, now, self.hub.store.image_size)
            self.emit(ev.MessageAdded(message=view))

    # ------------------------------------------------------------------------------------ answers

    def answer_approval(self, tool_use_id: str, decision: Decision, rule: str | None = None,
                        reason: str | None = None) -> Reject | None:
        return self.apply(ApprovalAnswer(tool_use_id, decision, rule, reason)).reject

    def answer_upgrade(self, approve: bool) -> Reject | None:
        return self.apply(UpgradeAnswer(approve)).reject


