"""How the terminal client shows each ``phoenix/event`` and keeps what it knows of the conversation up to date:
its status, mode and open questions, a sub-agent's events nested under it, and a catch-up after a gap in the
event numbers (REQ-PROTO-007)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from pydantic import ValidationError

from ..protocol import events as ev
from ..protocol.results import GetConversationResult
from ..protocol.statuses import RESTING, StatusKind
from ..protocol.views import PendingApproval
from .conversation import Conversation, Question
from .screen import Screen
from .wording import first_line, tool_summary, whole


class EventView:
    """Shows the events of one conversation (and of its sub-agents) on the screen."""

    def __init__(
        self,
        conv: Conversation,
        screen: Screen,
        changed: Callable[[], None],
        request: Callable[[str, dict[str, Any]], Awaitable[Any]],
        spawn: Callable[[Coroutine[Any, Any, None]], None],
    ) -> None:
        self.conv = conv
        self.screen = screen
        #: tells the prompt loop the conversation's state changed (status, a question opened or closed)
        self.changed = changed
        self.request = request
        self.spawn = spawn

    def on_event(self, params: dict[str, Any]) -> None:
        """Show one ``phoenix/event`` and track the conversation's state."""
        try:
            event = ev.parse_event(params)
        except ValidationError:  # a kind this client does not know (a newer server): nothing to show
            return
        cid = event.conversation_id
        if cid != self.conv.id:
            self._agent_event(event)
            return
        missed = self.conv.seq.arrive(event.seq)
        if missed is not None:
            self.spawn(self.catch_up(missed))  # a gap: restore the view (REQ-PROTO-007)
        screen = self.screen
        match event:
            case ev.TextDelta():
                screen.text(event.text)
            case ev.Status():
                self._set_status(event.status)
            case ev.ToolStart():
                self.conv.tool_names[event.tool_use_id] = event.tool_name
                screen.line(f"[tool] {event.tool_name} {tool_summary(event.tool_name, event.arguments)}", "cyan")
            case ev.ToolEnd():
                name = self.conv.tool_names.pop(event.tool_use_id, "tool")
                summary = first_line(event.summary)
                if event.is_error:
                    screen.line(f"[tool] {name} failed: {summary}", "red")
                else:
                    screen.line(f"[tool] {name} done{': ' + summary if summary else ''}", "dim")
            case ev.ToolRefused():
                screen.line(f"[tool] {event.tool_name} refused: not allowed in {self.conv.mode or 'this'} mode",
                            "yellow")
            case ev.ModeChanged():
                self.conv.mode = event.mode.value
                what = ("read-only, sandboxed" if self.conv.mode == "restricted"
                        else "may change files, with your approval")
                screen.line(f"[mode] {self.conv.mode} ({what}); was {event.previous.value}", "cyan")
            case ev.StyleChanged():
                screen.line(f"[style] {event.style.value} (was {event.previous.value})", "cyan")
            case ev.StyleSuggestionEvent():
                text = event.text or f"This style works best in {event.mode.value} mode."
                screen.line(f"[style] {text} Type {event.command} to switch.", "dim")
            case ev.PolicyChanged():
                screen.line(f"[approvals] {event.policy.value} (was {event.previous.value})", "cyan")
            case ev.ModelChanged():
                screen.line(f"[model] {event.model} answers from the next turn (was {event.previous}; "
                            f"context window {event.context_window:,} tokens)", "cyan")
            case ev.ApprovalRequested():
                self._open_approval(cid, event)
            case ev.UpgradeRequested():
                self._open_upgrade(cid, event.tool_use_id, event.reason)
            case ev.ApprovalResolved() | ev.UpgradeResolved():
                self._resolved(cid, event)
            case ev.AlwaysAllowChanged():
                verb = "always allowed" if event.allowed else "asks again"
                what = event.tool_name
                if event.scope == "prefix" and event.rule:
                    what = f"{event.tool_name}: {event.rule}"
                screen.line(f"[approvals] {what} {verb} in this conversation", "dim")
            case ev.Retry():
                asked = "" if event.retry_after_ms is None else f" (the API asked for {event.retry_after_ms} ms)"
                screen.line(
                    f"[retry] attempt {event.attempt}/{event.max_attempts} in {event.delay_ms} ms{asked}: "
                    f"{first_line(event.reason)}",
                    "yellow",
                )
            case ev.ContextWarning():
                screen.line(
                    f"[context] {round(100 * event.fraction)}% of the context window is used; the conversation "
                    "will be summarized and continued when it is full.",
                    "yellow",
                )
            case ev.ContinuationStarted():
                screen.line("[context] the context window is full: summarizing the conversation...", "yellow")
            case ev.Continuation():
                screen.line("[context] the conversation was summarized; its context is exhausted. Start a new "
                            "chat to continue from the summary.", "yellow")
            case ev.SubAgentsSpawned():
                screen.line(f"[agents] {len(event.agents)} sub-agent(s) started", "cyan")
                for agent in event.agents:
                    screen.line(f"  [{agent.conversation_id[:8]}] {first_line(agent.task)}", "dim")
            case ev.SubAgentFinished():
                reason = f": {first_line(event.reason)}" if event.reason else ""
                screen.line(f"[agents] {event.agent_id[:8]} {event.outcome}{reason}",
                            "dim" if event.outcome == "submitted" else "yellow")
            case ev.Error():
                screen.line(f"[error] {event.message}", "red")
                self._error_shown()
            case ev.SecretWithheld():
                screen.line(f"[secret] {event.message}", "yellow")
            case _:
                pass  # message, usage, diff: the deltas, the diff shown at applyEdit and the status cover them

    def _set_status(self, status: StatusKind) -> None:
        previous, self.conv.status = self.conv.status, status
        if status in RESTING and previous not in RESTING:
            self.screen.close_prompt()  # an open question's prompt: the turn ended without the answer
            self.screen.end_line()
            self.conv.drop_questions()
            if status == "error":
                # The server sends the `error` event right after this status; show it before the prompt
                # (and give up waiting for it after a moment).
                self.conv.error_pending = True
                asyncio.get_running_loop().call_later(0.5, self._error_shown)
            if status == "exhausted":
                self.screen.line("[context] this conversation is full. Run phoenix-lsp chat again for a new one.",
                                 "yellow")
        elif status == "summarizing" and previous != status:
            self.screen.line("[context] summarizing the conversation...", "dim")
        self.changed()

    def _error_shown(self) -> None:
        if self.conv.error_pending:
            self.conv.error_pending = False
            self.changed()

    def _open_approval(self, cid: str, event: ev.ApprovalRequested | PendingApproval) -> None:
        description = first_line(event.description, 140)
        name = event.tool_name
        # All of the arguments and all of the diff: the user approves only what they saw (REQ-PERM-023); a long
        # call scrolls the terminal, it is never cut.
        lines = [f"[approval] {name}: {description}" if description else f"[approval] {name}",
                 f"  arguments: {whole(event.arguments)}"]
        if event.diff:
            lines += ["  " + d for d in event.diff.splitlines()]
        scopes = [(s.rule, s.label) for s in event.scopes]
        if len(scopes) > 1:
            lines.append(f"  always allow: [a] {scopes[0][1]}   [t] {scopes[-1][1]} (every call of the tool)")
        if cid != self.conv.id:
            lines[0] = f"[agent {cid[:8]}] " + lines[0]
        self._add_question(Question("approval", cid, event.tool_use_id, lines, scopes=scopes))

    def _open_upgrade(self, cid: str, tool_use_id: str, reason: str) -> None:
        lines = [f"[upgrade] the agent asks for Unrestricted mode (it may change files): {reason.strip()}"]
        self._add_question(Question("upgrade", cid, tool_use_id, lines))

    def _add_question(self, question: Question) -> None:
        if any(q.tool_use_id == question.tool_use_id and q.kind == question.kind for q in self.conv.questions):
            return
        self.conv.questions.append(question)
        self.changed()

    def _resolved(self, cid: str, event: ev.ApprovalResolved | ev.UpgradeResolved) -> None:
        upgrade = isinstance(event, ev.UpgradeResolved)
        tool_use_id = event.tool_use_id
        if isinstance(event, ev.UpgradeResolved):
            verdict = "approved" if event.approved else ("cancelled" if event.cancelled else "denied")
        else:
            verdict = event.decision
        for question in list(self.conv.questions):
            if question.tool_use_id == tool_use_id and question.conversation_id == cid:
                self.conv.questions.remove(question)
                if question.shown:
                    self.screen.close_prompt()
                    self.screen.line(f"[{question.kind}] closed by the server ({verdict})", "dim")
        if upgrade:
            self.screen.line(f"[upgrade] {verdict}", "cyan")
        else:
            label = {"allow": "allowed", "deny": "denied", "alwaysAllow": "always allowed"}.get(verdict)
            self.screen.line(f"[approval] {label or verdict}", "cyan" if label else "dim")
        self.changed()

    def _agent_event(self, event: ev.EventKinds) -> None:
        """Events of a sub-agent (tagged with its parent): shown briefly and nested."""
        cid = event.conversation_id
        tag = f"  [agent {cid[:8]}]"
        match event:
            case ev.ToolStart():
                self.conv.tool_names[event.tool_use_id] = event.tool_name
                self.screen.line(f"{tag} {event.tool_name} {tool_summary(event.tool_name, event.arguments)}", "dim")
            case ev.ToolEnd() if event.is_error:
                name = self.conv.tool_names.pop(event.tool_use_id, "tool")
                self.screen.line(f"{tag} {name} failed: {first_line(event.summary)}", "dim")
            case ev.ApprovalRequested():
                self._open_approval(cid, event)
            case ev.UpgradeRequested():
                self._open_upgrade(cid, event.tool_use_id, event.reason)
            case ev.ApprovalResolved() | ev.UpgradeResolved():
                self._resolved(cid, event)
            case ev.Error():
                self.screen.line(f"{tag} error: {event.message}", "yellow")
            case ev.SecretWithheld():
                self.screen.line(f"{tag} {event.message}", "yellow")
            case _:
                pass

    async def catch_up(self, after_seq: int) -> None:
        """After a gap in ``seq``: restore status and open questions from ``phoenix/getConversation``."""
        try:
            result = await self.request(
                "phoenix/getConversation", {"conversationId": self.conv.id, "afterSeq": after_seq}
            )
        except Exception:
            return
        conversation = GetConversationResult.model_validate(result)
        self.conv.mode = conversation.mode.value
        if conversation.pending_approval is not None:
            self._open_approval(self.conv.id, conversation.pending_approval)
        if conversation.pending_upgrade is not None:
            upgrade = conversation.pending_upgrade
            self._open_upgrade(self.conv.id, upgrade.tool_use_id, upgrade.reason)
        self._set_status(conversation.status)

