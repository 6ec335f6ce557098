"""The headless run as the runtime sees it: the runtime's ``Editor`` and ``User`` (``adapter.Client``).

Each event is written on stdout as a JSON line when the run streams (the same ``phoenix/event`` params every
client gets, REQ-RUN-003); the run's conversation's status says when its turn is over. With nobody to ask, an
approval is answered at once through the core's own answer event (the decide-approval use case): with the first
``--allow`` rule the core accepts as one of the call's Always Allow scopes, else denied and listed; an upgrade
request is refused and listed (REQ-RUN-006). The answers are given on the next pass of the event loop, never
inside the effect that asked."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...core.rules import scopes_for
from ...core.state import RESTING_KINDS, AwaitingApproval, AwaitingUpgrade
from ...core.values import Decision, ToolUse
from ...protocol import events as ev
from ...protocol.run import DeniedCall
from ...protocol.views import TokenUsage
from ...tools.shell_changes import ChangeKind
from ...tools.shell_changes.edit import Review
from ..adapter import Conversation, Conversations
from ..usecases import choices, conversations
from ..usecases.errors import Refused
from . import files

log = logging.getLogger(__name__)

#: what the model is told about a call denied because nobody could be asked
NOBODY = ("Denied without asking: this is a headless run (phoenix-lsp run) and nobody is there to approve it. Do "
          "not retry it: finish what you can without it and say what you would have done; the user can run again "
          "with --allow {rule} to let such calls run.")
UPGRADE_REFUSED = ("the run stays in the mode it was started with (a headless run has nobody to approve the "
                   "switch; phoenix-lsp run --mode unrestricted starts in Unrestricted)")


class RunClient:
    """What the runtime is given as its client (``Hub(..., client)``) in a headless run."""

    editor_sight = False  # no editor: the editor's tools are not offered (REQ-SIGHT-002)

    def __init__(self, write: Callable[[str], None], stream: bool, allow: Sequence[str] = (),
                 max_turns: int | None = None) -> None:
        self.write = write  # one line on stdout
        self.stream = stream  # --output-format stream-json
        self.allow = tuple(allow)
        self.max_turns = max_turns
        self.hub: Conversations | None = None
        self.conversation_id: str | None = None  # the run's conversation
        self.turn: asyncio.Future[str] | None = None  # its turn's end: the resting status
        self.turns = 0  # the model requests of this run
        self.limited = False  # --max-turns stopped the turn
        self.usage: TokenUsage | None = None
        self.denied: list[DeniedCall] = []
        self.errors: list[str] = []  # the error events of the run's conversation (a turn the runtime stopped)

    # ------------------------------------------------------------------------------- the runtime's User

    def event(self, event: ev.EventKinds, params: dict[str, Any]) -> None:
        if self.stream:
            self.write(json.dumps(params, ensure_ascii=False))
        self._follow(event)

    def event_batch(self, batch: Sequence[tuple[ev.EventKinds, dict[str, Any]]], texts: Sequence[str]) -> None:
        for (event, _params), text in zip(batch, texts, strict=True):
            if self.stream:
                self.write(text)  # the JSON as stored
            self._follow(event)

    def _follow(self, event: ev.EventKinds) -> None:
        if event.conversation_id != self.conversation_id:
            return
        if isinstance(event, ev.Usage):
            self.usage = TokenUsage(request=event.request, total=event.total, sub_agents=event.sub_agents,
                                    estimated_cost=event.estimated_cost)
        elif isinstance(event, ev.Error):
            self.errors.append(event.message)
        elif isinstance(event, ev.Status):
            if event.status == "awaiting_llm" and event.previous != "awaiting_llm":
                self.turns += 1
                if self.max_turns is not None and self.turns > self.max_turns and not self.limited:
                    self.limited = True  # the model asks to go on past the limit: the turn stops, as a cancel
                    asyncio.get_running_loop().call_soon(self._stop)
            if event.status in RESTING_KINDS:
                self.end_turn(event.status)

    def end_turn(self, status: str) -> None:
        if self.turn is not None and not self.turn.done():
            self.turn.set_result(status)

    def _stop(self) -> None:
        assert self.hub is not None and self.conversation_id is not None
        conversations.cancel(self.hub.runtimes[self.conversation_id])

    def log_to_client(self, text: str) -> None:
        log.info("%s", text)

    def ask_approval(self, conversation: Conversation, tool_use_id: str, call: ToolUse) -> None:
        asyncio.get_running_loop().call_soon(self._decide, conversation, call)

    def _decide(self, conversation: Conversation, call: ToolUse) -> None:
        status = conversation.state.status
        if not isinstance(status, AwaitingApproval) or status.tool_use_id != call.id:
            return  # answered or withdrawn meanwhile (a cancel)
        for rule in self.allow:  # the core accepts a rule only as one of the call's Always Allow scopes
            try:
                choices.decide_approval(conversation, call.id, Decision.ALWAYS_ALLOW, rule=rule)
            except Refused:
                continue
            return
        narrowest = scopes_for(conversation.state.always_allow, call)[0]
        guard = self.hub.store.guard if self.hub is not None else None
        self.denied.append(DeniedCall(kind="approval", tool_use_id=call.id, tool_name=call.name,
                                      arguments=_redacted(dict(call.input), guard),
                                      allow_rule=narrowest.label))
        rule = f"'{narrowest.label}'"
        try:
            choices.decide_approval(conversation, call.id, Decision.DENY, reason=NOBODY.format(rule=rule))
        except Refused as exc:
            log.warning("could not deny %s: %s", call.id, exc)

    def ask_upgrade(self, conversation: Conversation, tool_use_id: str, reason: str) -> None:
        asyncio.get_running_loop().call_soon(self._refuse_upgrade, conversation, tool_use_id, reason)

    def _refuse_upgrade(self, conversation: Conversation, tool_use_id: str, reason: str) -> None:
        if not isinstance(conversation.state.status, AwaitingUpgrade):
            return
        guard = self.hub.store.guard if self.hub is not None else None
        self.denied.append(DeniedCall(kind="upgrade", tool_use_id=tool_use_id, tool_name="request_mode_upgrade",
                                      arguments=_redacted({"reason": reason}, guard)))
        reject = conversation.answer_upgrade(False)
        if reject is not None:
            log.warning("could not refuse the upgrade request %s: %s", tool_use_id, getattr(reject, "message", ""))
        log.info("upgrade request refused: %s", UPGRADE_REFUSED)

    async def ask_mcp_consent(self, conversation: Conversation, question: Any) -> bool | None:
        """A project's MCP server is never started by a headless run: nobody is there to read its command line
        (REQ-MCP-009). Left unanswered (None), so an interactive client asks about it later; said on stderr."""
        log.warning("the project's MCP server %s (%s, from %s) was not started: a headless run cannot ask for its "
                    "consent; approve it once in `phoenix-lsp chat` or an editor, then run again",
                    question.name, question.shown, question.where)
        return None

    def mcp_notice(self, conversation: Conversation, text: str) -> None:
        log.warning("%s", text)

    def withdraw(self, conversation: Conversation, tool_use_id: str) -> None:
        return None  # nothing was shown: every question is answered at once

    def ask_again(self, conversation: Conversation) -> None:
        """A resumed conversation's open approval or upgrade request (from an earlier run or client): answered
        now like a new one."""
        status = conversation.state.status
        if isinstance(status, AwaitingApproval):
            self.ask_approval(conversation, status.tool_use_id, status.host_call or status.batch.current)
        elif isinstance(status, AwaitingUpgrade):
            self.ask_upgrade(conversation, status.batch.current.id, status.reason)

    # ------------------------------------------------------------------------------ the runtime's Editor

    def open_documents(self) -> Mapping[Path, str]:
        return {}

    async def documents_for(self, conversation: Conversation, call: ToolUse) -> Mapping[Path, str]:
        return {}  # no editor: the disk is the truth

    async def apply_patch(self, conversation: Conversation, call: ToolUse) -> tuple[str, bool]:
        return await files.apply_patch(conversation, call)

    async def review_texts(self, conversation: Conversation, paths: Sequence[Path]) -> Mapping[Path, str]:
        return {}

    def review_kinds(self) -> frozenset[ChangeKind]:
        return frozenset()  # no editor: the server places a bash command's allowed changes whole

    def cannot_apply(self, review: Review) -> str | None:
        return None

    async def apply_review(self, conversation: Conversation, call_id: str, review: Review) -> str | None:
        return None  # the editor's part is empty (review_kinds)

    def sight_for(self, conversation: Conversation) -> None:
        return None


def _redacted(arguments: dict[str, Any], guard: Any) -> dict[str, Any]:
    """The call's arguments with every secret the server knows replaced, as in every event."""
    if guard is None:
        return arguments
    try:
        value = json.loads(guard.redact(json.dumps(arguments, ensure_ascii=False)))
    except ValueError:
        return {"redacted": guard.redact(json.dumps(arguments, ensure_ascii=False))}
    return value if isinstance(value, dict) else {"value": value}
