"""The turn's LLM request (``RequestLlm``): the request built from the conversation, streamed, and its answer
(or failure) applied as the core's next event."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, cast

from ...agent.timing import Stopwatch
from ...core.effects import RequestLlm
from ...core.events import LlmDone, LlmFailed
from ...core.tools import CALL_TOOL, DESCRIBE_TOOLS, RUN_PLAN
from ...core.values import Actor, Mode, Route, Text, ToolUse, Usage
from ...llm.cache import build_request
from ...llm.client import TOOL_INPUT_ERROR_KEY, LlmFailure
from ...llm.sink import Finding
from ...protocol import events as ev
from ...store.records import AuditEntry
from ...tools import registry
from ...tools.bash_scope import simple_commands
from ...tools.inputs import invalid_json
from ...tools.mcp_direct import is_mcp, with_mcp
from .. import prompts, wire
from ..usecases import images
from .base import AgentHost, EarlyPlans, HubLike, Peer

log = logging.getLogger(__name__)


class Turn:
    """A conversation's requests to the model (a part of ``conversation.Runtime``): the one under way, by id."""

    def __init__(self, conversation: Peer, hub: HubLike, host: AgentHost | None = None) -> None:
        self.conversation = conversation
        self.hub = hub
        self.host = host  # the conversation as a plan's nodes started early reach it (REQ-AGENT-044)
        self.llm_tasks: dict[int, asyncio.Task[Any]] = {}  # request id -> its request streaming

    def request(self, effect: RequestLlm) -> None:
        """Start the request (``RequestLlm``); its answer comes back as the core's next event."""
        self.llm_tasks[effect.request_id] = self.hub.spawn(self._llm(effect))

    def cancel(self, request_id: int) -> None:
        """Cancel the request (``CancelLlm``); a late answer carries a stale id and the core drops it."""
        if task := self.llm_tasks.pop(request_id, None):
            task.cancel()

    def show(self, request_id: int, text: str) -> None:
        """A reply the core rendered without the model (``ShowAnswer``, REQ-AGENT-039) reaches the clients as the
        model's text does: a textDelta of ``request_id``, redacted, stored with its seq."""
        self.hub.outbox.queue_text(self.conversation, request_id, text)

    async def _llm(self, effect: RequestLlm) -> None:
        conversation = self.conversation
        plans: EarlyPlans | None = None
        try:
            if effect.delay_ms:
                await asyncio.sleep(effect.delay_ms / 1000)
            # an Ollama model's own window, before its answer is measured
            await self.hub.windows.learn_window(conversation)
            state = conversation.state
            catalogue = ""
            route = self.hub.config.agent_route
            if state.route is Route.AGENT and not state.is_subagent and route is not None:
                catalogue = await route.catalogue_text()  # MCP discovery, once per server
                state = conversation.state
                route.early.drop(conversation.id)  # an earlier answer's plan that no run took
                if self.host is not None:  # run_plan's nodes start as the answer streams (REQ-AGENT-044)
                    plans = route.early.plans(route, self.host)
            mcp: list[dict[str, Any]] = []
            if not state.is_subagent and route is not None:  # the MCP tools themselves, on both routes (issue 37)
                # the workspace's own servers start only once the user approved them (REQ-MCP-009)
                await route.project(state.working_directory, self._ask_consent, self._notice)
                mcp = await route.direct.offered(state.settings.context_window)  # or their search
                state = conversation.state
            state, pictures = await self._pictures()  # every image through the gate (REQ-SEC-043)
            system, tools = self._prompt(state, catalogue, mcp)
            request = build_request(  # cache breakpoints, summary tools and instruction: llm/cache.py
                model=state.model,
                system=system,
                messages=wire.history_to_api(state.history, pictures),
                tools=tools,
                cache=self.hub.config.cache,
                summary=effect.purpose == "summary",
                instruction=effect.instruction,
            )
            # the sink check looks for the credential formats too in Restricted (REQ-SEC-012)
            request = replace(request, credential_formats=state.mode is Mode.RESTRICTED)

            def on_text(text: str) -> None:
                # redacted across pieces (REQ-SEC-041)
                self.hub.outbox.queue_text(conversation, effect.request_id, text)

            if state.is_subagent:
                async with self.hub.subagent_slots:
                    outcome = await self.hub.llm.stream(request, on_text, self._withheld)
            elif plans is not None:  # the agent route: run_plan's input is told as it streams
                outcome = await self.hub.llm.stream(request, on_text, self._withheld, on_tool=plans.on_tool)
            else:
                outcome = await self.hub.llm.stream(request, on_text, self._withheld)
        except asyncio.CancelledError:
            if plans is not None:
                plans.stop()  # the nodes started early stop with the turn
            return
        except BaseException:
            if plans is not None:
                plans.stop()
            raise
        finally:
            self.llm_tasks.pop(effect.request_id, None)
            # the text held back goes before the answer is applied
            self.hub.outbox.end_text(conversation, effect.request_id)
        if isinstance(outcome, LlmFailure):
            if plans is not None:
                plans.stop()
            conversation.apply(LlmFailed(effect.request_id, outcome.retryable, outcome.message, outcome.status,
                                 outcome.retry_after_ms))
            return
        timing = Stopwatch("answer")  # from the model's answer's end
        content = tuple(self._block(b) for b in outcome.content if b.get("type") in ("text", "tool_use"))
        usage = Usage(**{k: int(v) for k, v in outcome.usage.items() if k in Usage.__dataclass_fields__})
        conversation.apply(LlmDone(effect.request_id, content, outcome.stop_reason, usage))
        timing.mark("applied")
        timing.log(log)

    async def _pictures(self) -> tuple[Any, Callable[[str], tuple[bytes, str] | str]]:
        """The conversation's state and its history's images for the request, each through the one image gate
        (``usecases/images``) or the note that stands in its place; an image the history gained meanwhile too."""
        found: dict[str, images.KeptImage | str] = {}
        while True:
            state = self.conversation.state
            todo = [i for i in images.images_in(state.history) if i.image_id not in found]
            if not todo:
                break
            found.update(await images.for_model(self.hub.store, todo))

        def picture(image_id: str) -> tuple[bytes, str] | str:
            passed = found[image_id]
            return passed if isinstance(passed, str) else (passed.data, passed.media_type)
        return state, picture

    def _prompt(self, state: Any, catalogue: str, mcp: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
        """The request's system prompt and tools. The agent route's are its own (REQ-AGENT-040): the planning
        prompt and the route's tools, the catalogue in run_plan's description, the MCP tools' definitions not
        sent (call_tool reaches one directly, REQ-AGENT-041); each byte-stable for the server's life, a cache
        prefix of their own. The ask route's (and a sub-agent's) as they always were."""
        route = self.hub.config.agent_route
        restricted = self._started_restricted()
        if state.route is Route.AGENT and not state.is_subagent and route is not None and not route.ask_prompt:
            return (prompts.planning_prompt(restricted, state.instructions),
                    registry.definitions(False, state.working_directory, Route.AGENT, catalogue))
        system = prompts.system_prompt(state.style, state.working_directory, state.is_subagent, restricted,
                                       state.instructions)
        tools = registry.definitions(state.is_subagent, state.working_directory, Route.ASK if
                                     state.route is Route.AGENT else state.route, catalogue, state.editor_sight)
        if state.route is Route.AGENT and not state.is_subagent:  # measurement only: the route as it was before
            tools += registry.definitions_of((DESCRIBE_TOOLS, RUN_PLAN), state.working_directory, catalogue)
        return system, with_mcp(tools, mcp)

    async def _ask_consent(self, question: Any) -> bool | None:
        """Asks the user, through the conversation's client, whether a project's MCP server may start."""
        return await self.hub.sink.ask_mcp_consent(cast(Any, self.conversation), question)

    def _notice(self, text: str) -> None:
        self.hub.sink.mcp_notice(cast(Any, self.conversation), text)

    def _withheld(self, findings: Sequence[Finding]) -> None:
        """The sink check replaced secrets in this conversation's request (REQ-SEC-012): the user is told where
        they came from (never the values) and the audit log keeps it."""
        conversation, state = self.conversation, self.conversation.state
        sources = [f.label for f in findings]
        count = sum(f.count for f in findings)
        self.hub.store.append_audit(AuditEntry(
            time=time.time(), conversation_id=conversation.id, actor=Actor.SYSTEM, action="secret_withheld",
            mode=state.mode.value, style=state.style.value,
            detail=json.dumps({"sources": sources, "count": count, "model": state.model})))
        conversation.emit(ev.SecretWithheld(sources=sources, count=count, message=(
            f"Withheld from the request to {state.model}: {'; '.join(sources)} ({count} in all), replaced "
            "by [REDACTED: ...] before it was sent, because a secret must never reach a model. Find where it "
            "came in (a file the assistant read, a tool's output, a pasted text) and remove it there; the "
            "conversation goes on without it.")))

    def _block(self, block: dict[str, Any]) -> Text | ToolUse:
        guard = self.hub.store.guard
        if block["type"] == "text":
            return Text(guard.redact(block.get("text", "")))
        tool_input = block.get("input")
        name = str(block["name"])
        route = self.hub.config.agent_route
        if name == CALL_TOOL and route is not None and block.get(TOOL_INPUT_ERROR_KEY) is None:
            # REQ-AGENT-041: one catalogue tool called directly becomes that MCP tool's own call
            direct = route.direct.direct_call(str(block["id"]), tool_input)
            if isinstance(direct, ToolUse):
                return direct
            return ToolUse(str(block["id"]), name, tool_input if isinstance(tool_input, dict) else {},
                           input_error=direct)
        error = registry.check(name, tool_input, block.get(TOOL_INPUT_ERROR_KEY))  # REQ-CORE-007
        arguments = tool_input if isinstance(tool_input, dict) else {}
        commands = None
        if name == "bash" and error is None and isinstance(arguments.get("command"), str):
            commands = simple_commands(arguments["command"])  # the core matches rules on these (REQ-PERM-019)
        if is_mcp(name):  # its kind, as the capability gate decided it, for the core's decision (core/mcp_rules.py)
            route = self.hub.config.agent_route
            kind = route.direct.kind(name) if route is not None else None  # None: no server offers it
            json_error = block.get(TOOL_INPUT_ERROR_KEY)
            if json_error is not None:
                error = invalid_json(name, json_error)
            return ToolUse(str(block["id"]), name, arguments, input_error=error,
                           mcp_kind=kind)
        return ToolUse(str(block["id"]), name, arguments, commands, input_error=error)

    def _started_restricted(self) -> bool:
        state = self.conversation.state
        return (state.sandbox and not state.is_subagent) or state.mode is Mode.RESTRICTED
