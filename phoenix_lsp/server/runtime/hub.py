"""The hub: all conversations of one server process, created, found, loaded from the store and restored after a
start (REQ-BED-007), with the store, the LLM client, and two parts of its own: the way to the clients
(``outbox``) and the context windows (``windows``). What runs beside the conversations (the tasks they
started, the bash tool's background commands, the agent route's workers) is the hub's to stop."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from ... import codec, limits
from ...core import machine
from ...core.effects import Effect, PersistMessage, PersistState
from ...core.events import Restore
from ...core.state import RESTING_KINDS, Settings
from ...core.values import InstructionFile, Message, Policy, Style
from ...sandbox.background import kill_background_jobs
from ...store import ConversationRecord, DamagedRowError, Store
from ...tools import registry
from ..adapter import Client, Modelled
from .background import Background
from .base import HubConfig, LlmLike, NotFound
from .conversation import Runtime
from .outbox import Outbox
from .windows import Windows

log = logging.getLogger(__name__)
T = TypeVar("T")


class Hub:
    """All conversations of one server process, the store, the LLM client and the way to the clients."""

    def __init__(self, store: Store, llm: LlmLike, sandbox: Any, config: HubConfig, sink: Client) -> None:
        self.store = store
        self.llm = llm
        self.sandbox = sandbox
        self.config = config
        self.sink = sink
        self.runtimes: dict[str, Runtime] = {}
        self.subagent_slots = asyncio.Semaphore(config.subagent_concurrency)
        self.tasks: set[asyncio.Task[Any]] = set()  # what the conversations run in the background
        self.outbox = Outbox(store, config, sink)  # text deltas gathered, stored, then sent
        self.windows = Windows(llm, sink, self.spawn)  # the context windows learned from the models' servers
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # built off a loop (a test): ended background commands wait for a bash call
            loop = None
        self.background = Background(self, loop)  # captured background commands reviewed at rest, or told discarded

    @property
    def data_dir(self) -> Path:
        """The data directory: where the database is, and the transcripts and approval documents beside it."""
        return self.store.path.parent

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
        sight = parent.state.editor_sight if parent is not None else self.sink.editor_sight
        settings = Settings(retry_base_ms=self.config.retry_base_ms, retry_after_max_ms=self.config.retry_after_max_ms,
                            context_window=self.windows.window(model))
        if parent is not None:
            settings = replace(settings, max_turns=self.config.subagent_max_turns)
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
        self.windows.learn_window_soon(runtime)
        return runtime

    def learn_window_soon(self, conversation: Modelled) -> None:
        """Ask the model's server for the context window of ``conversation``'s model in the background, when
        nobody has reported it yet (the adapter's ``Conversations`` port; ``windows`` does it)."""
        self.windows.learn_window_soon(conversation)

    def get(self, conversation_id: str) -> Runtime:
        runtime = self.runtimes.get(conversation_id)
        if runtime is not None:
            return runtime
        if not self.store.exists(conversation_id):
            raise NotFound(conversation_id)
        return self._load(conversation_id)

    def _load(self, conversation_id: str) -> Runtime:
        """The stored conversation, read back (REQ-SEC-044): each row measured before it is read and bounded
        before it is decoded; :class:`DamagedRowError` says which row is wrong, why and what to do."""
        loaded = self.store.load(conversation_id)  # DamagedRowError: a row over the size any row has
        history = tuple(_decoded(conversation_id, f"its message {n}", codec.decode_stored_message, text)
                        for n, text in enumerate(loaded.messages))
        if loaded.state_json is None:
            raise DamagedRowError(conversation_id, "its state", "it is missing")
        state = _decoded(conversation_id, "its stored state", lambda t: codec.decode_state(t, history),
                         loaded.state_json)
        if getattr(state.status, "batch", None) is not None:  # calls still to run may use old field names
            state = registry.restore_pending(state)
        runtime = Runtime(self, state, last_seq=self.store.last_seq(conversation_id) or 0)
        self.runtimes[conversation_id] = runtime
        if state.reviewing is not None and state.status.kind in RESTING_KINDS:
            # REQ-BASH-044: a review at rest that a stop cut short is over (its layer went with that server);
            # ``restore`` reaches only the busy ones
            runtime.apply(Restore())
        return runtime

    def restore(self) -> int:
        """After a start: conversations that were busy are restored (REQ-BED-007). Returns how many. One that
        cannot be read back is left as it is on the disk, logged (each request for it says why, REQ-SEC-044)."""
        count = 0
        for summary in self.store.list_conversations(include_subagents=True):
            if summary.status not in RESTING_KINDS:
                try:
                    runtime = self.get(summary.id)
                except DamagedRowError as exc:
                    log.error("%s", self.store.guard.redact(str(exc)))
                    continue
                runtime.apply(Restore())
                count += 1
        return count

    def stop(self) -> None:
        """End what runs beside the conversations: the tasks they started (cancelled), the bash tool's
        background commands (killed, their logs deleted) and the agent route's warm engine workers and MCP
        servers (REQ-PROTO-050). Blocking: each is waited for. Idempotent: at shutdown, and again (then at
        once) at exit. Called off the event loop, the tasks are cancelled on it. The conversations whose captured
        background commands were discarded are told afterwards, on the loop (``background.tell_discarded``)."""
        self.background.close()
        for task in list(self.tasks):
            _cancel(task)
        kill_background_jobs()
        if self.config.agent_route is not None:
            self.config.agent_route.close()

    def close(self) -> None:
        """Stop, then close the store (the process is ending, with or without a shutdown before)."""
        self.stop()
        self.store.close()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())


def _decoded(conversation_id: str, row: str, decode: Callable[[str], T], text: str) -> T:
    """``decode(text)`` of a stored row, or :class:`DamagedRowError` naming it: over its bounds (nested too deep,
    too many values), no JSON, or not what the server writes."""
    try:
        return decode(text)
    except ValueError as exc:  # limits.Refused, the decoder's, pydantic's ValidationError
        why = (str(exc).split(";")[0] if isinstance(exc, limits.Refused)  # what is over, not the sender's advice
               else f"it is not what the server writes ({str(exc)[:300]})")
        raise DamagedRowError(conversation_id, row, why) from None


def _cancel(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` from any thread: at once on its loop, else handed to its loop (a task is not thread-safe)."""
    loop = task.get_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        task.cancel()
    elif not loop.is_closed():
        loop.call_soon_threadsafe(task.cancel)


