"""How the terminal client shows each ``phoenix/event`` and keeps what it knows of the conversation up to date:
its status, mode and open questions, a sub-agent's events nested under it, and a catch-up after a gap in the
event numbers (REQ-PROTO-007).

Over 300 lines for a reason: one small handler per event kind, and the two tables (``SHOWN``, ``NESTED``) that
name every kind of the protocol (REQ-PROTO-055), kept together so that a new kind is decided in one place."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from pydantic import ValidationError

from ..core.mcp_names import server_part
from ..protocol import events as ev
from ..protocol.results import GetConversationResult
from ..protocol.statuses import RESTING, StatusKind
from ..protocol.views import PendingApproval
from .approval import WHOLE_HINT, approval_lines, whole_call_lines
from .conversation import Conversation, Question
from .review import review_lines, review_of
from .screen import Screen
from .wording import first_line, scope_words, tool_summary, tool_words


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
        except ValidationError:  # a kind this client does not know (a newer server), or a malformed event
            self._unknown(params)
            return
        own = event.conversation_id == self.conv.id
        show = (SHOWN if own else NESTED).get(event.kind)
        if show is None:  # a kind the protocol has and this table lacks: tests/protocol/test_kinds.py fails too
            self._unknown(params)
            return
        if own:
            missed = self.conv.seq.arrive(event.seq)
            if missed is not None:
                self.spawn(self.catch_up(missed))  # a gap: restore the view (REQ-PROTO-007)
        show(self, event)

    def _unknown(self, params: dict[str, Any]) -> None:
        """Say once per kind that an event could not be read: never dropped without a word (REQ-PROTO-055)."""
        kind = str(params.get("kind") if isinstance(params, dict) else None)[:80]
        if kind in self.conv.unknown_kinds:
            return
        self.conv.unknown_kinds.add(kind)
        known = "an event it could not read" if kind in SHOWN else f"an event of a kind it does not know ({kind!r})"
        self.screen.line(f"[?] the server sent {known}; this client does not show it. Update phoenix-lsp (the "
                         "server may be newer than this client).", "yellow")

    # ------------------------------------------------------------------------- the conversation's own events

    def _nothing(self, event: ev.EventKinds) -> None:
        """A kind with nothing to show (SHOWN and NESTED say why)."""

    def _text_delta(self, event: ev.TextDelta) -> None:
        self.screen.text(event.text)

    def _status(self, event: ev.Status) -> None:
        self._set_status(event.status)

    def _tool_start(self, event: ev.ToolStart) -> None:
        self.conv.tool_names[event.tool_use_id] = event.tool_name
        self.screen.line(f"[tool] {tool_words(event.tool_name)} {tool_summary(event.tool_name, event.arguments)}",
                         "cyan")

    def _tool_end(self, event: ev.ToolEnd) -> None:
        name = tool_words(self.conv.tool_names.pop(event.tool_use_id, "tool"))
        summary = first_line(event.summary)
        if event.is_error:
            self.screen.line(f"[tool] {name} failed: {summary}", "red")
        else:
            self.screen.line(f"[tool] {name} done{': ' + summary if summary else ''}", "dim")

    def _tool_refused(self, event: ev.ToolRefused) -> None:
        hint = " (/execute switches to Unrestricted)" if self.conv.mode == "restricted" else ""
        self.screen.line(f"[tool] {tool_words(event.tool_name)} refused: not allowed in {self.conv.mode or 'this'} "
                         f"mode{hint}", "yellow")

    def _mode_changed(self, event: ev.ModeChanged) -> None:
        self.conv.mode = event.mode.value
        what = "read-only, sandboxed" if self.conv.mode == "restricted" else "may change files, with your approval"
        self.screen.line(f"[mode] {self.conv.mode} ({what}); was {event.previous.value}", "cyan")

    def _style_changed(self, event: ev.StyleChanged) -> None:
        self.screen.line(f"[style] {event.style.value} (was {event.previous.value})", "cyan")

    def _style_suggestion(self, event: ev.StyleSuggestionEvent) -> None:
        text = event.text or f"This style works best in {event.mode.value} mode."
        self.screen.line(f"[style] {text} Type {event.command} to switch.", "dim")

    def _policy_changed(self, event: ev.PolicyChanged) -> None:
        self.screen.line(f"[approvals] {event.policy.value} (was {event.previous.value})", "cyan")

    def _model_changed(self, event: ev.ModelChanged) -> None:
        self.screen.line(f"[model] {event.model} answers from the next turn (was {event.previous}; "
                         f"context window {event.context_window:,} tokens)", "cyan")

    def _approval_requested(self, event: ev.ApprovalRequested) -> None:
        self.open_approval(event.conversation_id, event)

    def _upgrade_requested(self, event: ev.UpgradeRequested) -> None:
        self.open_upgrade(event.conversation_id, event.tool_use_id, event.reason)

    def _resolved_event(self, event: ev.ApprovalResolved | ev.UpgradeResolved) -> None:
        self._resolved(event.conversation_id, event)

    def _always_allow(self, event: ev.AlwaysAllowChanged) -> None:
        verb = "always allowed" if event.allowed else "asks again"
        what = scope_words(event.tool_name)
        if event.scope == "prefix" and event.rule:
            what = f"{event.tool_name}: {event.rule}"
        self.screen.line(f"[approvals] {what} {verb} in this conversation", "dim")

    def _retry(self, event: ev.Retry) -> None:
        asked = "" if event.retry_after_ms is None else f" (the API asked for {event.retry_after_ms} ms)"
        self.screen.line(f"[retry] attempt {event.attempt}/{event.max_attempts} in {event.delay_ms} ms{asked}: "
                         f"{first_line(event.reason)}", "yellow")

    def _context_warning(self, event: ev.ContextWarning) -> None:
        self.screen.line(f"[context] {round(100 * event.fraction)}% of the context window is used; the "
                         "conversation will be summarized and continued when it is full.", "yellow")

    def _continuation_started(self, event: ev.ContinuationStarted) -> None:
        self.screen.line("[context] the context window is full: summarizing the conversation...", "yellow")

    def _continuation(self, event: ev.Continuation) -> None:
        self.screen.line("[context] the conversation was summarized; its context is exhausted. Start a new "
                         "chat to continue from the summary.", "yellow")

    def _agents_spawned(self, event: ev.SubAgentsSpawned) -> None:
        self.screen.line(f"[agents] {len(event.agents)} sub-agent(s) started", "cyan")
        for agent in event.agents:
            self.screen.line(f"  [{agent.conversation_id[:8]}] {first_line(agent.task)}", "dim")

    def _agent_finished(self, event: ev.SubAgentFinished) -> None:
        reason = f": {first_line(event.reason)}" if event.reason else ""
        self.screen.line(f"[agents] {event.agent_id[:8]} {event.outcome}{reason}",
                         "dim" if event.outcome == "submitted" else "yellow")

    def _error(self, event: ev.Error) -> None:
        self.screen.line(f"[error] {event.message}", "red")
        self._error_shown()

    def _secret_withheld(self, event: ev.SecretWithheld) -> None:
        self.screen.line(f"[secret] {event.message}", "yellow")

    # ------------------------------------------------------------------ a sub-agent's events, shown nested

    def _nested_tool_start(self, event: ev.ToolStart) -> None:
        self.conv.tool_names[event.tool_use_id] = event.tool_name
        self.screen.line(f"  [agent {event.conversation_id[:8]}] {event.tool_name} "
                         f"{tool_summary(event.tool_name, event.arguments)}", "dim")

    def _nested_tool_end(self, event: ev.ToolEnd) -> None:
        if event.is_error:
            name = self.conv.tool_names.pop(event.tool_use_id, "tool")
            self.screen.line(f"  [agent {event.conversation_id[:8]}] {name} failed: {first_line(event.summary)}",
                             "dim")

    def _nested_error(self, event: ev.Error) -> None:
        self.screen.line(f"  [agent {event.conversation_id[:8]}] error: {event.message}", "yellow")

    def _nested_secret_withheld(self, event: ev.SecretWithheld) -> None:
        self.screen.line(f"  [agent {event.conversation_id[:8]}] {event.message}", "yellow")

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

    def open_approval(self, cid: str, event: ev.ApprovalRequested | PendingApproval) -> None:
        name = tool_words(event.tool_name)
        review = review_of(event.arguments, event.diff)
        if review is not None:  # several files: the command, the files, the summary, each diff (REQ-PROTO-065)
            lines = [*review_lines(name, review), WHOLE_HINT]
        else:
            # The tool, the file or the command, the diff (issue 38): the user approves only what they saw
            # (REQ-PERM-023), so nothing is cut; the whole call is one keypress away (w).
            lines = approval_lines(name, event.arguments, event.diff)
        scopes = [(s.rule, s.label) for s in event.scopes]
        if len(scopes) > 1:
            narrow, wide = scope_words(scopes[0][1]), scope_words(scopes[-1][0])
            if server_part(scopes[-1][0]) is not None:  # an MCP tool: the tool, or every tool of its server
                lines.append(f"  always allow: [a] {narrow}   [s] {wide}")
            else:
                lines.append(f"  always allow: [a] {narrow}   [t] {wide} (every call of the tool)")
        if cid != self.conv.id:
            lines[0] = f"[agent {cid[:8]}] " + lines[0]
        whole = whole_call_lines(name, event.description, event.arguments)
        self._add_question(Question("approval", cid, event.tool_use_id, lines, scopes=scopes, whole=whole,
                                    diff=event.diff))

    def open_upgrade(self, cid: str, tool_use_id: str, reason: str) -> None:
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
            self.open_approval(self.conv.id, conversation.pending_approval)
        if conversation.pending_upgrade is not None:
            upgrade = conversation.pending_upgrade
            self.open_upgrade(self.conv.id, upgrade.tool_use_id, upgrade.reason)
        self._set_status(conversation.status)



Handler = Callable[[EventView, Any], None]
V = EventView

#: how the terminal client shows each event kind of its conversation: every kind is named, those it shows
#: nothing for with ``_nothing`` and why (REQ-PROTO-055)
SHOWN: dict[str, Handler] = {
    "status": V._status,
    "message": V._nothing,  # the deltas showed the answer as it came
    "textDelta": V._text_delta,
    "toolStart": V._tool_start,
    "toolEnd": V._tool_end,
    "toolRefused": V._tool_refused,
    "diff": V._nothing,  # shown when the edit was applied (workspace/applyEdit)
    "modeChanged": V._mode_changed,
    "styleChanged": V._style_changed,
    "styleSuggestion": V._style_suggestion,
    "policyChanged": V._policy_changed,
    "modelChanged": V._model_changed,
    "approvalRequested": V._approval_requested,
    "approvalResolved": V._resolved_event,
    "upgradeRequested": V._upgrade_requested,
    "upgradeResolved": V._resolved_event,
    "alwaysAllowChanged": V._always_allow,
    "retry": V._retry,
    "usage": V._nothing,  # /usage shows it when asked; contextWarning warns
    "contextWarning": V._context_warning,
    "continuationStarted": V._continuation_started,
    "continuation": V._continuation,
    "subAgentsSpawned": V._agents_spawned,
    "subAgentFinished": V._agent_finished,
    "error": V._error,
    "secretWithheld": V._secret_withheld,
}

#: how a sub-agent's events are shown, nested under their parent: briefly, and its questions like the parent's
NESTED: dict[str, Handler] = {
    **dict.fromkeys(SHOWN, V._nothing),  # its text, statuses and the rest: its result comes back to the parent
    "toolStart": V._nested_tool_start,
    "toolEnd": V._nested_tool_end,
    "approvalRequested": V._approval_requested,
    "approvalResolved": V._resolved_event,
    "upgradeRequested": V._upgrade_requested,
    "upgradeResolved": V._resolved_event,
    "error": V._nested_error,
    "secretWithheld": V._nested_secret_withheld,
}
