"""Runs conversations: feeds events to the pure core and carries out its effects (REQ-PROTO-029).

One ``Runtime`` per conversation, all on the server's event loop. ``apply`` runs a transition and executes
its effects synchronously in order — persistence first (REQ-BED-007) — and starts asynchronous work (LLM
requests, tools) as tasks whose outcomes come back through ``apply``. Cancelling is applied the moment it
arrives; a late outcome of cancelled work carries a stale id and the core drops it (REQ-BED-005).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from .. import codec
from ..core import machine
from ..core.effects import (
    AskApproval,
    AskUpgrade,
    Audit,
    CancelLlm,
    CancelTool,
    Effect,
    Notify,
    PersistMessage,
    PersistState,
    Reject,
    ReportToParent,
    RequestLlm,
    RunTool,
    SpawnAgents,
    StopAgents,
)
from ..core.events import (
    AgentEnded,
    ApprovalAnswer,
    Event,
    LlmDone,
    LlmFailed,
    Restore,
    Stop,
    ToolDone,
    UpgradeAnswer,
    UserMessage,
)
from ..core.state import BUSY, ConversationState, Failed, Settings
from ..core.values import Decision, Message, Mode, Policy, Style, Text, ToolUse, Usage
from ..store import AuditEntry, ConversationRecord, Store
from . import prompts, wire
from .settings import context_window

log = logging.getLogger(__name__)

#: Statuses that need nothing after a restart; anything else is loaded and restored at start-up.
RESTING = ("idle", "error", "exhausted", "finished")


class Sink(Protocol):
    """What the runtime needs from the LSP side (implemented in app.py)."""

    def event(self, params: dict[str, Any]) -> None: ...
    def ask_approval(self, runtime: Runtime, approval_id: str, call: ToolUse) -> None: ...
    def ask_upgrade(self, runtime: Runtime, request_id: str, reason: str) -> None: ...
    def withdraw(self, runtime: Runtime, request_id: str) -> None: ...
    def open_documents(self) -> Mapping[Path, str]: ...
    async def apply_patch(self, runtime: Runtime, call: ToolUse) -> tuple[str, bool]: ...


class LlmLike(Protocol):
    async def stream(self, request: Any, on_text: Callable[[str], None]) -> Any: ...


@dataclass
class HubConfig:
    model: str
    retry_base_ms: int = 1000
    bash_timeout_s: float | None = None
    agent_time_limit_s: float = 600.0
    agent_max_turns: int = 50
    agent_concurrency: int = 4
    env: Mapping[str, str] = field(default_factory=dict)


def clean_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment tools run with: no API keys or other credentials (REQ-SEC-001)."""
    secret_words = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
    return {
        k: v
        for k, v in environ.items()
        if not k.startswith("ANTHROPIC_") and not any(w in k.upper() for w in secret_words)
    }


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
    ) -> Runtime:
        cid = conversation_id or uuid.uuid4().hex
        model = model or self.config.model
        settings = Settings(retry_base_ms=self.config.retry_base_ms, context_window=context_window(model))
        if parent is not None:
            settings = replace(settings, max_turns=self.config.agent_max_turns)
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
        empty = replace(state, history=())
        effects: tuple[Effect, ...] = (PersistMessage(0, seed), PersistState()) if seed else (PersistState(),)
        runtime._persist(empty, effects)
        return runtime

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
            if summary.status not in RESTING:
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
        self.suggestion: dict[str, str] | None = None  # the last style suggestion, for the setStyle answer
        self.deadline: asyncio.Task[Any] | None = None  # a sub-agent's time limit (REQ-BED-008)

    @property
    def id(self) -> str:
        return self.state.id

    # ------------------------------------------------------------------------------------ events

    def emit(self, kind: str, **fields: Any) -> int:
        """Send one phoenix/event, numbered and stored first (so catch-up can rely on it)."""
        self.seq += 1
        params: dict[str, Any] = {"conversationId": self.id, "seq": self.seq, "time": time.time(), "kind": kind}
        if self.state.parent_id:
            params["parentConversationId"] = self.state.parent_id
        params.update(fields)
        self.hub.store.append_event(self.id, self.seq, json.dumps(params))
        self.hub.sink.event(params)
        return self.seq

    def apply(self, event: Event) -> Reject | None:
        """Run one event through the core and carry out the effects. Returns the refusal, if any."""
        before = self.state
        self.state, effects = machine.transition(before, event)
        reject: Reject | None = None
        self._persist(before, effects)
        if isinstance(self.state.status, Failed) and not isinstance(before.status, Failed):
            # before the status event, so a client that prompts on "error" status already has the message
            self.emit("error", message=self.state.status.message, errorKind="llm")
        for effect in effects:
            if isinstance(effect, PersistMessage | PersistState):
                continue
            if isinstance(effect, Reject):
                reject = effect
                continue
            try:
                self._execute(effect, before)
            except Exception:  # one failing effect must not take the conversation down
                log.exception("effect %s of %s failed", type(effect).__name__, self.id)
        return reject

    def _persist(self, before: ConversationState, effects: tuple[Effect, ...]) -> None:
        messages = [e for e in effects if isinstance(e, PersistMessage)]
        now = time.time()
        if messages:
            items = []
            for e in messages:
                seq = self.seq + 1 + len(items)  # the seq of the "message" event announcing it, just below
                body = {"seq": seq, "time": now, "message": json.loads(codec.encode_message(e.message))}
                items.append((e.index, json.dumps(body)))
            self.hub.store.append_messages(self.id, items)
            first_user = next((e.message for e in messages if e.message.role == "user" and not e.message.tag), None)
            if first_user is not None and not any(m.role == "user" and not m.tag for m in before.history):
                self.hub.store.update_title(self.id, first_user.text()[:80])
        if any(isinstance(e, PersistState) for e in effects):
            self.hub.store.save_state(self.id, codec.encode_state(self.state), self.state.status.kind, now)
        for e in messages:
            self.emit("message", message=wire.message_to_wire(e.message, self.seq + 1, e.index, now))

    def _execute(self, effect: Effect, before: ConversationState) -> None:
        if isinstance(effect, RequestLlm):
            self.llm_tasks[effect.request_id] = self.hub.spawn(self._llm(effect))
        elif isinstance(effect, CancelLlm):
            task = self.llm_tasks.pop(effect.request_id, None)
            if task:
                task.cancel()
        elif isinstance(effect, RunTool):
            self.tool_tasks[effect.call.id] = self.hub.spawn(self._tool(effect))
        elif isinstance(effect, CancelTool):
            task = self.tool_tasks.pop(effect.tool_use_id, None)
            if task:
                task.cancel()
        elif isinstance(effect, AskApproval):
            self.emit("approvalRequested", **self.approval_fields(effect.approval_id, effect.call))
            self.hub.sink.ask_approval(self, effect.approval_id, effect.call)
        elif isinstance(effect, AskUpgrade):
            self.emit("upgradeRequested", requestId=effect.tool_use_id, toolUseId=effect.tool_use_id,
                      reason=effect.reason)
            self.hub.sink.ask_upgrade(self, effect.tool_use_id, effect.reason)
        elif isinstance(effect, Notify):
            self._notify(effect, before)
        elif isinstance(effect, Audit):
            self.hub.store.append_audit(
                AuditEntry(
                    time=time.time(),
                    conversation_id=self.id,
                    actor=effect.actor.value,  # type: ignore[arg-type]
                    action=effect.action,
                    mode=self.state.mode.value,
                    style=self.state.style.value,
                    detail=json.dumps(dict(effect.detail)),
                )
            )
        elif isinstance(effect, SpawnAgents):
            self._spawn_agents(effect)
        elif isinstance(effect, StopAgents):
            for agent_id in effect.agent_ids:
                with contextlib.suppress(NotFound):
                    self.hub.get(agent_id).apply(Stop(effect.reason))
        elif isinstance(effect, ReportToParent):
            if self.deadline is not None and self.deadline is not asyncio.current_task():
                self.deadline.cancel()  # finished in time: the timer must not outlive the agent
            self.deadline = None
            with contextlib.suppress(NotFound):
                parent = self.hub.get(effect.parent_id)
                # persist the result in the parent first: a client is never told of a result a crash could lose
                parent.apply(AgentEnded(effect.agent_id, effect.ok, effect.result))
                parent.emit("subAgentFinished", agentId=effect.agent_id,
                            outcome="submitted" if effect.ok else "failed", reason=None if effect.ok else effect.result)

    def approval_fields(self, approval_id: str, call: ToolUse) -> dict[str, Any]:
        return {
            "approvalId": approval_id,
            "toolUseId": call.id,
            "toolName": call.name,
            "description": describe_tool(call.name),
            "arguments": dict(call.input),
            **({"diff": diff} if (diff := self.patch_diff(call)) is not None else {}),
        }

    def patch_diff(self, call: ToolUse) -> str | None:
        """The unified diff a patch call would make now (REQ-PERM-005), or None when it would fail."""
        if call.name != "patch":
            return None
        from .edits import preview_diff

        return preview_diff(Path(self.state.working_directory), call, self.hub.sink.open_documents(), self.clipboards)

    def _notify(self, effect: Notify, before: ConversationState) -> None:
        d = dict(effect.detail)
        if effect.kind == "status":
            self.emit("status", status=d["status"], previous=before.status.kind, mode=d["mode"])
        elif effect.kind == "mode":
            self.emit("modeChanged", mode=d["mode"], previous=before.mode.value, actor="user", via=d.get("via"))
        elif effect.kind == "style":
            self.emit("styleChanged", style=d["style"], previous=before.style.value)
        elif effect.kind == "suggestion":
            command = "/execute" if self.state.mode is Mode.RESTRICTED else "/plan"
            mode = "unrestricted" if command == "/execute" else "restricted"
            self.emit("styleSuggestion", mode=mode, command=command, text=d["text"])
            self.suggestion = {"mode": mode, "command": command, "text": str(d["text"])}
        elif effect.kind == "policy":
            self.emit("policyChanged", policy=d["policy"], previous=before.policy.value)
        elif effect.kind == "retry":
            self.emit("retry", attempt=d["attempt"], maxAttempts=d["of"], delayMs=d["delayMs"], reason=d["error"])
        elif effect.kind == "context":
            kind = {"warning": "contextWarning", "continuing": "continuationStarted"}.get(str(d["state"]))
            if kind:
                self.emit(kind, **self.usage_fields())
            if d["state"] == "exhausted":
                status = self.state.status
                self.emit("continuation", summary=getattr(status, "summary", ""), fallback=False)
        elif effect.kind == "approval_resolved":
            request_id = str(d["approvalId"])
            if before.status.kind == "awaiting_upgrade":
                self.emit("upgradeResolved", requestId=request_id, approved=d["decision"] == "approve",
                          cancelled=d["decision"] == "cancelled")
            else:
                self.emit("approvalResolved", approvalId=request_id, decision=d["decision"])
                granted = set(self.state.always_allow) - set(before.always_allow)
                for tool in sorted(granted):  # REQ-PROTO-021: an always-allow grant is announced like a revoke
                    self.emit("alwaysAllowChanged", toolName=tool, allowed=True)
            self.hub.sink.withdraw(self, request_id)
        elif effect.kind == "tool_refused":
            self.emit("toolRefused", toolUseId=d["toolUseId"], toolName=d["tool"], by="mode")

    def usage_fields(self) -> dict[str, Any]:
        window = self.state.settings.context_window
        used = self.state.context_tokens
        return {"usedTokens": used, "contextWindow": window, "fraction": round(used / window, 4) if window else 0}

    # ------------------------------------------------------------------------------------- the LLM

    async def _llm(self, effect: RequestLlm) -> None:
        from ..llm.client import LlmFailure, LlmRequest
        from ..tools import registry

        try:
            if effect.delay_ms:
                await asyncio.sleep(effect.delay_ms / 1000)
            state = self.state
            request = LlmRequest(
                model=state.model,
                system=prompts.system_prompt(state.style, state.working_directory, state.is_subagent,
                                             self._started_restricted()),
                messages=wire.history_to_api(state.history, self.hub.store.get_image, effect.instruction),
                tools=registry.definitions(state.is_subagent, state.working_directory)
                if effect.purpose == "turn"
                else None,
            )
            guard = self.hub.store.guard

            def on_text(text: str) -> None:
                self.emit("textDelta", text=guard.redact(text), requestId=effect.request_id)

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
            self.apply(LlmFailed(effect.request_id, outcome.retryable, outcome.message, outcome.status))
            return
        content = tuple(self._block(b) for b in outcome.content if b.get("type") in ("text", "tool_use"))
        usage = Usage(**{k: int(v) for k, v in outcome.usage.items() if k in Usage.__dataclass_fields__})
        self.apply(LlmDone(effect.request_id, content, outcome.stop_reason, usage))
        self.emit("usage", **self.usage_fields())

    def _block(self, block: dict[str, Any]) -> Text | ToolUse:
        from ..llm.client import TOOL_INPUT_ERROR_KEY
        from ..tools import registry

        guard = self.hub.store.guard
        if block["type"] == "text":
            return Text(guard.redact(block.get("text", "")))
        tool_input = block.get("input")
        name = str(block["name"])
        error = registry.check(name, tool_input, block.get(TOOL_INPUT_ERROR_KEY))  # REQ-CORE-007
        return ToolUse(str(block["id"]), name, tool_input if isinstance(tool_input, dict) else {}, input_error=error)

    def _started_restricted(self) -> bool:
        return (self.state.sandbox and not self.state.is_subagent) or self.state.mode is Mode.RESTRICTED

    # ----------------------------------------------------------------------------------- tools

    async def _tool(self, effect: RunTool) -> None:
        call = effect.call
        self.emit("toolStart", toolUseId=call.id, toolName=call.name, arguments=dict(call.input),
                  mode=effect.mode.value)
        try:
            output, is_error, refused = await self._run_tool(call, effect.mode)
        except asyncio.CancelledError:
            self.emit("toolEnd", toolUseId=call.id, isError=True, summary="cancelled")
            return
        except Exception as exc:
            log.exception("tool %s failed", call.name)
            output, is_error, refused = f"Internal error while running {call.name}: {exc}", True, False
        finally:
            self.tool_tasks.pop(call.id, None)
        output = self.hub.store.guard.redact(output)
        self.emit("toolEnd", toolUseId=call.id, isError=is_error, summary=output[:200])
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
        )
        done = await registry.run(call, context)
        return done.output, done.is_error, done.refused_by_sandbox

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
            agents.append({"conversationId": child.id, "task": spec.task})
        self.emit("subAgentsSpawned", toolUseId=effect.tool_use_id, agents=agents)
        for spec in effect.agents:
            child = self.hub.get(spec.agent_id)
            child.apply(UserMessage(spec.task))
            child.deadline = self.hub.spawn(child.time_limit(self.hub.config.agent_time_limit_s))

    async def time_limit(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        if self.state.status.kind != "finished":
            self.apply(Stop(f"timed out after {seconds:g} s"))

    # ------------------------------------------------------------------------------------ answers

    def answer_approval(self, approval_id: str, decision: Decision) -> Reject | None:
        return self.apply(ApprovalAnswer(approval_id, decision))

    def answer_upgrade(self, approve: bool) -> Reject | None:
        return self.apply(UpgradeAnswer(approve))

    @property
    def busy(self) -> bool:
        return isinstance(self.state.status, BUSY)


def describe_tool(name: str) -> str:
    from ..tools import registry

    return registry.describe(name)


def tool_env() -> dict[str, str]:
    return clean_environment(os.environ)
