"""Running a tool call (``RunTool``) with its context, what an approval shows of a call, and the host calls of a
running plan (REQ-AGENT-014/015)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...agent.timing import Stopwatch
from ...core.effects import AnswerHostCall, RunTool
from ...core.events import HostCall, ToolDone
from ...core.rules import scopes_for
from ...core.values import Image, Mode, ToolUse
from ...protocol import events as ev
from ...tools import registry
from ...tools.mcp_direct import is_mcp
from ...tools.mcp_images import Picture
from .. import wire
from ..adapter import Conversation
from ..patch_preview import preview_diff
from ..shell_review import ShellCapture
from ..usecases import images
from .base import HubLike

log = logging.getLogger(__name__)


def describe_tool(name: str) -> str:
    return registry.describe(name)


class Tools:
    """A conversation's tool calls (a part of ``conversation.Runtime``): those running, the patch tool's
    clipboards, and a running plan's host calls waiting for the core. It is the conversation as the agent
    route's tools reach it (``base.AgentHost``)."""

    def __init__(self, conversation: Conversation, hub: HubLike) -> None:
        self.conversation = conversation  # as the client sees it: the client is asked about it
        self.hub = hub
        self.tool_tasks: dict[str, asyncio.Task[Any]] = {}  # tool call id -> the call running
        self.clipboards: dict[str, str] = {}  # the patch tool's clipboards, replaced when a patch applies
        #: host calls of a running plan waiting for the core's answer: call id -> (allowed, message, by)
        self.host_calls: dict[str, asyncio.Future[tuple[bool, str, str]]] = {}
        self.host_descriptions: dict[str, str] = {}  # host call id -> what its approval question says
        self.host_diffs: dict[str, str] = {}  # host call id -> the diff its question shows (a command's review)

    @property
    def id(self) -> str:
        return self.conversation.id

    def run(self, effect: RunTool) -> None:
        """Start the tool call (``RunTool``); its result comes back as the core's next event."""
        self.tool_tasks[effect.call.id] = self.hub.spawn(self._tool(effect))

    def cancel(self, tool_use_id: str) -> None:
        """Cancel the tool call (``CancelTool``); a plan's nodes started early stop too (REQ-AGENT-044)."""
        if task := self.tool_tasks.pop(tool_use_id, None):
            task.cancel()
        if (route := self.hub.config.agent_route) is not None:
            route.early.drop(self.id, tool_use_id)

    def keep_clipboards(self, clipboards: Mapping[str, str]) -> None:
        """The clipboards after a patch was applied replace those before it (REQ-PATCH-003)."""
        self.clipboards.clear()
        self.clipboards.update(clipboards)

    async def _tool(self, effect: RunTool) -> None:
        call = effect.call
        timing = Stopwatch("tool")
        self.conversation.emit(ev.ToolStart(tool_use_id=call.id, tool_name=call.name, arguments=dict(call.input),
                               mode=effect.mode, access=call.mcp_kind))
        pictures: list[Picture] = []
        answer: str | None = None  # a plan's rendered answer (REQ-AGENT-039)
        try:
            if is_mcp(call.name) and (route := self.hub.config.agent_route) is not None:  # issue 37
                mcp = await route.direct.run(call, self.conversation.id)
                output, is_error, refused, pictures = mcp.text, mcp.is_error, False, mcp.pictures
            else:
                output, is_error, refused, answer = await self._run_tool(call, effect.mode)
        except asyncio.CancelledError:
            self.conversation.emit(ev.ToolEnd(tool_use_id=call.id, is_error=True, summary="cancelled"))
            return
        except Exception as exc:
            log.exception("tool %s failed", call.name)
            output, is_error, refused = f"Internal error while running {call.name}: {exc}", True, False
        finally:
            self.tool_tasks.pop(call.id, None)
        timing.mark("run")
        output = self.hub.store.guard.redact(output)
        images, output = self._keep_images(pictures, output)
        shown = "".join(f"{p.shown()}\n" for p in pictures[:len(images)])  # what every client shows of them
        self.conversation.emit(ev.ToolEnd(tool_use_id=call.id, is_error=is_error, summary=(shown + output)[:200]))
        if answer is not None:
            answer = self.hub.store.guard.redact(answer)
        self.conversation.apply(ToolDone(call.id, output, is_error, refused, images, answer))
        timing.mark("done")
        timing.log(log)

    def _keep_images(self, pictures: list[Picture], output: str) -> tuple[tuple[Image, ...], str]:
        """An MCP result's images in the store, like an attachment's (the conversation's rows hold their ids;
        REQ-MCP-021); one the store refuses (it holds a secret's bytes) becomes a note in the output."""
        kept: list[Image] = []
        for number, picture in enumerate(pictures, 1):
            try:
                kept.append(images.keep(self.hub.store, (picture.data, picture.media_type)))  # gated already
            except Exception as exc:  # a SecretLeakError, a full disk: the model is told, the call goes on
                output += (f"\n\nImage {number} of the result was left out: the store refused it "
                           f"({self.hub.store.guard.redact(str(exc))[:300]}).")
                break
        return tuple(kept), output

    async def _run_tool(self, call: ToolUse, mode: Mode) -> tuple[str, bool, bool, str | None]:
        # the editor's text of the files this call reads, asked first (an ACP client's, REQ-ACP-010)
        conversation, state = self.conversation, self.conversation.state
        asked: Mapping[Path, str] = dict(await self.hub.sink.documents_for(conversation, call))

        def open_documents() -> Mapping[Path, str]:
            return {**self.hub.sink.open_documents(), **asked} if asked else self.hub.sink.open_documents()

        context = registry.ToolContext(
            working_directory=Path(state.working_directory),
            mode=mode,
            conversation_id=conversation.id,
            open_documents=open_documents,
            apply_patch=lambda c: self.hub.sink.apply_patch(conversation, c),
            env=self.hub.config.env,
            sandbox=self.hub.sandbox,
            bash_timeout_s=self.hub.config.bash_timeout_s,
            deny_read=self.hub.config.deny_read,
            background_timeout_s=self.hub.config.background_timeout_s,
            editor=self._editor(),
            capture=self._capture,
            **self._agent_context(),
        )
        done = await registry.run(call, context)
        return done.output, done.is_error, done.refused_by_sandbox, done.answer

    def _capture(self, call: ToolUse) -> ShellCapture:
        """The review of an Unrestricted bash call's changes (REQ-BASH-032, ``shell_review.py``)."""
        return ShellCapture(self.conversation, self, self.hub.sink, call, self.hub.store.path.parent,
                            self.hub.store.guard.redact)

    def _editor(self) -> Any:
        """The editor's sight for this conversation's tools (REQ-SIGHT-002), or None: it has none, or the client
        connected now does not offer it."""
        if not self.conversation.state.editor_sight:
            return None
        return self.hub.sink.sight_for(self.conversation)

    def _agent_context(self) -> dict[str, Any]:
        route = self.hub.config.agent_route
        if route is None:
            return {}
        if route.unavailable is not None:
            return {"agent_unavailable": route.unavailable}
        return {"agent": route.tools_for(self)}

    def answer_host_call(self, effect: AnswerHostCall) -> None:
        """The core's answer to a host call (``AnswerHostCall``), for the plan waiting for it."""
        waiting = self.host_calls.pop(effect.call_id, None)
        if waiting is not None and not waiting.done():
            waiting.set_result((effect.allowed, effect.message, effect.by))

    def approval_fields(self, call: ToolUse) -> dict[str, Any]:
        return {
            "tool_use_id": call.id,
            "tool_name": call.name,
            "description": self.call_description(call),
            "arguments": dict(call.input),
            "diff": self.patch_diff(call),
            "scopes": [wire.scope_to_wire(s) for s in scopes_for(self.conversation.state.always_allow, call)],
        }

    def call_description(self, call: ToolUse) -> str:
        """What an approval question says the call does: a host call's own words, else its tool's description
        (an MCP tool's own, issue 37)."""
        return self.host_descriptions.get(call.id) or describe_tool(call.name) or self._mcp_about(call)

    def _mcp_about(self, call: ToolUse) -> str:
        """What an MCP tool does, for its approval question (issue 37)."""
        route = self.hub.config.agent_route
        return route.direct.describe(call.name) if route is not None and is_mcp(call.name) else ""

    def patch_diff(self, call: ToolUse) -> str | None:
        """The unified diff a patch call would make now (REQ-PERM-005), or a bash command's changes under review
        (REQ-BASH-032); None when there is none or the patch would fail."""
        if call.id in self.host_diffs:
            return self.host_diffs[call.id]
        if call.name != "patch":
            return None
        return preview_diff(Path(self.conversation.state.working_directory), call, self.hub.sink.open_documents(),
                            self.clipboards)

    async def host_call(self, tool_use_id: str, call: ToolUse, kind: Any,
                        description: str = "", diff: str | None = None) -> tuple[bool, str, str]:
        """Ask the core whether a running tool's host call may go ahead: a plan's (REQ-AGENT-014/015) or a bash
        command's review of its changes (REQ-BASH-032); waits for the user's answer when the policy asks (the
        question shows ``description`` and ``diff``). The answer is (allowed, the refusal's message, who
        refused: ``AnswerHostCall.by``); a rejected event is a no with its message."""
        waiting: asyncio.Future[tuple[bool, str, str]] = asyncio.get_running_loop().create_future()
        self.host_calls[call.id] = waiting
        if description:
            self.host_descriptions[call.id] = description
        if diff is not None:
            self.host_diffs[call.id] = diff
        try:
            outcome = self.conversation.apply(HostCall(tool_use_id, call, kind))
            if outcome.reject is not None:
                return False, outcome.reject.message, ""
            return await waiting
        finally:
            self.host_calls.pop(call.id, None)
            self.host_descriptions.pop(call.id, None)
            self.host_diffs.pop(call.id, None)
