"""Running a tool call (``RunTool``) with its context, what an approval shows of a call, and the host calls of a
running plan (REQ-AGENT-014/015)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...core.effects import RunTool
from ...core.events import HostCall, ToolDone
from ...core.rules import scopes_for
from ...core.values import Mode, ToolUse
from ...protocol import events as ev
from ...tools import registry
from .. import wire
from ..patch_preview import preview_diff
from ..shell_review import ShellCapture
from .base import Part

log = logging.getLogger(__name__)


def describe_tool(name: str) -> str:
    return registry.describe(name)


class Tools(Part):
    """A conversation's tool calls (a part of ``conversation.Runtime``)."""

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
        # the editor's text of the files this call reads, asked first (an ACP client's, REQ-ACP-010)
        asked: Mapping[Path, str] = dict(await self.hub.sink.documents_for(self, call))

        def open_documents() -> Mapping[Path, str]:
            return {**self.hub.sink.open_documents(), **asked} if asked else self.hub.sink.open_documents()

        context = registry.ToolContext(
            working_directory=Path(self.state.working_directory),
            mode=mode,
            conversation_id=self.id,
            open_documents=open_documents,
            apply_patch=lambda c: self.hub.sink.apply_patch(self, c),
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
        return done.output, done.is_error, done.refused_by_sandbox

    def _capture(self, call: ToolUse) -> ShellCapture:
        """The review of an Unrestricted bash call's changes (REQ-BASH-032, ``shell_review.py``)."""
        return ShellCapture(self, self.hub.sink, call, self.hub.store.path.parent, self.hub.store.guard.redact)

    def _editor(self) -> Any:
        """The editor's sight for this conversation's tools (REQ-SIGHT-002), or None: it has none, or the client
        connected now does not offer it."""
        if not self.state.editor_sight:
            return None
        return self.hub.sink.sight_for(self)

    def _agent_context(self) -> dict[str, Any]:
        route = self.hub.config.agent_route
        if route is None:
            return {}
        if route.unavailable is not None:
            return {"agent_unavailable": route.unavailable}
        return {"agent": route.tools_for(self)}

    def approval_fields(self, call: ToolUse) -> dict[str, Any]:
        return {
            "tool_use_id": call.id,
            "tool_name": call.name,
            "description": self.call_description(call),
            "arguments": dict(call.input),
            "diff": self.patch_diff(call),
            "scopes": [wire.scope_to_wire(s) for s in scopes_for(self.state.always_allow, call)],
        }

    def call_description(self, call: ToolUse) -> str:
        """What an approval question says the call does: a host call's own words, else its tool's description."""
        return self.host_descriptions.get(call.id) or describe_tool(call.name)

    def patch_diff(self, call: ToolUse) -> str | None:
        """The unified diff a patch call would make now (REQ-PERM-005), or a bash command's changes under review
        (REQ-BASH-032); None when there is none or the patch would fail."""
        if call.id in self.host_diffs:
            return self.host_diffs[call.id]
        if call.name != "patch":
            return None
        return preview_diff(Path(self.state.working_directory), call, self.hub.sink.open_documents(), self.clipboards)

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
            outcome = self.apply(HostCall(tool_use_id, call, kind))
            if outcome.reject is not None:
                return False, outcome.reject.message, ""
            return await waiting
        finally:
            self.host_calls.pop(call.id, None)
            self.host_descriptions.pop(call.id, None)
            self.host_diffs.pop(call.id, None)
