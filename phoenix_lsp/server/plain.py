"""Plain LSP clients (no ``capabilities.experimental.phoenix``): approvals as ``window/showMessageRequest``,
a turn as ``$/progress``, problems as ``window/showMessage`` (REQ-PROTO-023/024)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from ..core.state import RESTING_KINDS
from ..core.values import Decision, ToolUse
from .lazy import LazyModule

if TYPE_CHECKING:
    from ..protocol import events
    from .runtime import Runtime

ev = LazyModule("phoenix_lsp.protocol.events")  # pydantic is loaded after initialize (start-up budget)

log = logging.getLogger(__name__)

Progress = types.WorkDoneProgressReport | types.WorkDoneProgressEnd


class PlainClient:
    """Speaks to a client that knows only standard LSP."""

    def __init__(self, ls: LanguageServer, spawn: Callable[[Coroutine[Any, Any, Any]], asyncio.Task[Any]]) -> None:
        self.ls = ls
        self.spawn = spawn
        self.requests: dict[str, asyncio.Task[Any]] = {}  # open dialogs by approval/upgrade id
        self._asked = 0  # numbers the window/showMessageRequest ids, so a dialog can be withdrawn by id
        self.progress: dict[str, str] = {}  # conversation id -> its progress token
        # reports/ends of a token whose begin is not out yet (create is a round trip to the client)
        self.held: dict[str, list[Progress]] = {}

    # ------------------------------------------------------------------------------------ progress

    def event(self, event: events.EventKinds) -> None:
        """REQ-PROTO-024: a turn as $/progress, problems as window/showMessage."""
        cid = event.conversation_id
        if isinstance(event, ev.Error):
            self._warn(event.message)
        elif isinstance(event, ev.ContextWarning):
            self._warn(f"Context {round(100 * event.fraction)}% full.")
        caps = self.ls.client_capabilities.window
        if not (caps and caps.work_done_progress):
            return
        if isinstance(event, ev.Status):
            token = self.progress.get(cid)
            if event.status in RESTING_KINDS:
                if token:
                    self.progress.pop(cid)
                    self._send(token, types.WorkDoneProgressEnd(message=event.status))
            elif token is None:
                token = f"phoenix-{cid}-{event.seq}"
                self.progress[cid] = token
                self.held[token] = []
                self.spawn(self._begin(token, cid))
            else:
                self._send(token, types.WorkDoneProgressReport(message=event.status))
        elif isinstance(event, ev.ToolStart | ev.Retry) and cid in self.progress:
            text = f"running {event.tool_name}" if isinstance(event, ev.ToolStart) else f"retrying ({event.attempt})"
            self._send(self.progress[cid], types.WorkDoneProgressReport(message=text))

    def _warn(self, text: str) -> None:
        self.ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=text))

    def _send(self, token: str, value: Progress) -> None:
        """Send a report or the end, or hold it until the token's begin is out (LSP: begin comes first)."""
        held = self.held.get(token)
        if held is not None:
            held.append(value)
        elif isinstance(value, types.WorkDoneProgressEnd):
            self.ls.work_done_progress.end(token, value)
        else:
            self.ls.work_done_progress.report(token, value)

    async def _begin(self, token: str, cid: str) -> None:
        try:
            await self.ls.work_done_progress.create_async(token)
            self.ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title="phoenix", message=cid))
        finally:
            held = self.held.pop(token, [])
        for value in held:
            self._send(token, value)

    # ----------------------------------------------------------------------------------- dialogs

    def ask_approval(self, runtime: Runtime, approval_id: str, call: ToolUse, description: str) -> None:
        args = json.dumps(dict(call.input), separators=(",", ":"), ensure_ascii=False)  # compact (REQ-PERM-005)
        if len(args) > 400:
            args = args[:400] + f"... [{len(args) - 400} more characters]"
        from ..core.rules import scopes_for

        narrowest = scopes_for(runtime.state.always_allow, call)[0]  # what "Always Allow" adds (REQ-PERM-020)
        text = (
            f"phoenix wants to run {call.name} in conversation {runtime.id[:8]}: {description[:200]}"
            f"\nArguments: {args}\nAlways Allow adds the rule: {narrowest.label}"
        )
        actions = {"Allow": Decision.ALLOW, "Deny": Decision.DENY, "Always Allow": Decision.ALWAYS_ALLOW}

        async def ask() -> None:
            choice = await self._show(approval_id, text, list(actions))
            if choice is not False:  # False: the client could not answer; the request stays open
                runtime.answer_approval(approval_id, actions.get(str(choice or "Deny"), Decision.DENY))

        self.requests[approval_id] = self.spawn(ask())

    def ask_upgrade(self, runtime: Runtime, request_id: str, reason: str) -> None:
        text = f"phoenix asks for Unrestricted mode (write access) in conversation {runtime.id[:8]}: {reason}"

        async def ask() -> None:
            choice = await self._show(request_id, text, ["Approve", "Deny"])
            if choice is not False:
                runtime.answer_upgrade(choice == "Approve")

        self.requests[request_id] = self.spawn(ask())

    async def _show(self, request_id: str, text: str, titles: list[str]) -> str | bool | None:
        """The title the user chose, None when dismissed (counts as deny), False when the client failed."""
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Warning, message=text, actions=[types.MessageActionItem(title=t) for t in titles]
        )
        self._asked += 1
        msg_id = f"phoenix-ask-{self._asked}"
        try:
            result = await self.ls.protocol.send_request_async("window/showMessageRequest", params, msg_id=msg_id)
        except asyncio.CancelledError:
            # Answered some other way (another client, a cancel): take the dialog back (REQ-PROTO-023).
            with contextlib.suppress(Exception):
                self.ls.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
            raise
        except Exception as exc:  # REQ-PERM-016: never approve by default; the request stays pending
            log.warning("could not ask the client about %s (%s); it stays pending", request_id, exc)
            return False
        finally:
            self.requests.pop(request_id, None)
        if result is None:
            return None  # dismissed (Escape) counts as deny
        title = result.get("title") if isinstance(result, dict) else getattr(result, "title", None)
        return str(title) if title else None

    def withdraw(self, request_id: str) -> None:
        task = self.requests.pop(request_id, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()
