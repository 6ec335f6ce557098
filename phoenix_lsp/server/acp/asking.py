"""Approvals and upgrade requests as ``session/request_permission`` (REQ-ACP-007, REQ-ACP-008).

An approval offers ``allow_once``, ``allow_always`` (the narrowest scope, as everywhere: a bash command's parsed
prefix, REQ-PERM-020) and ``reject_once``; an upgrade the model asks for is a tool call of kind ``switch_mode``
with ``allow_once`` and ``reject_once`` only. An answer ``cancelled`` (the client's, after ``session/cancel``) is
a refusal: nothing runs.
"""

from __future__ import annotations

import logging
from typing import Any

from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate

from ...core.rules import scopes_for
from ...core.values import Decision, ToolUse
from ..adapter import Conversation
from ..shell_review import pending_review
from . import files, updates
from .session import Session, Side

log = logging.getLogger(__name__)

ALLOW, ALWAYS, REJECT = "allow", "always", "reject"
#: the client did not answer (it went away): the request stays open, asked again when the session is loaded
UNANSWERED = "unanswered"
CANCELLED_REASON = "The user cancelled the turn while this call waited for approval: it did not run."


async def approval(client: Side, session: Session, conversation: Conversation, call: ToolUse) -> None:
    review = pending_review(conversation.id, call.id)
    if review is not None:  # a bash command's changes: a diff for each text file (REQ-BASH-032)
        content: list[Any] | None = files.review_content(client, review) or None
    else:
        content = await files.preview(client, conversation, call) if call.name == "patch" else None
    for update in session.calls.announce(call.id, call.name, call.input, session.root, content):
        client.update(session.id, update)
    scope = scopes_for(conversation.state.always_allow, call)[0]
    always = "Always allow this tool" if scope.whole_tool else f"Always allow {scope.label}"
    options = [PermissionOption(option_id=ALLOW, name="Allow", kind="allow_once"),
               PermissionOption(option_id=ALWAYS, name=always, kind="allow_always"),
               PermissionOption(option_id=REJECT, name="Reject", kind="reject_once")]
    choice = await _ask(client, session, call.id, _tool_call(call, session.root, content), options)
    if choice is UNANSWERED or session.asks.get(call.id) is None:
        return  # no answer (it stays open), or answered elsewhere meanwhile (a cancel): nothing changes
    session.asks.pop(call.id, None)
    if choice in (ALLOW, ALWAYS):
        decision, reason = (Decision.ALLOW if choice == ALLOW else Decision.ALWAYS_ALLOW), None
    else:
        decision, reason = Decision.DENY, (CANCELLED_REASON if choice is None else None)
    conversation.answer_approval(call.id, decision, reason=reason)


async def upgrade(client: Side, session: Session, conversation: Conversation, tool_use_id: str,
                  reason: str) -> None:
    arguments = {"reason": reason}
    content = updates.text_content(f"The agent asks to switch to Unrestricted mode: {reason}")
    for update in session.calls.announce(tool_use_id, "request_mode_upgrade", arguments, session.root, content):
        client.update(session.id, update)
    options = [PermissionOption(option_id=ALLOW, name="Switch to Unrestricted", kind="allow_once"),
               PermissionOption(option_id=REJECT, name="Stay Restricted", kind="reject_once")]
    call = ToolUse(tool_use_id, "request_mode_upgrade", arguments)
    choice = await _ask(client, session, tool_use_id, _tool_call(call, session.root, content), options)
    if choice is UNANSWERED or session.asks.pop(tool_use_id, None) is None:
        return
    approved = choice == ALLOW
    text = "Switched to Unrestricted mode." if approved else "The user kept Restricted mode."
    # the call's one final update (REQ-ACP-028), before the answer stores its result (which would end it too)
    for update in session.calls.end(tool_use_id, not approved, updates.text_content(text)):
        client.update(session.id, update)
    conversation.answer_upgrade(approved)


def _tool_call(call: ToolUse, root: str, content: list[Any] | None) -> ToolCallUpdate:
    return ToolCallUpdate(tool_call_id=call.id, title=updates.title_of(call.name, call.input),
                          kind=updates.kind_of(call.name, call.mcp_kind), status="pending", content=content,
                          locations=updates.locations(call.input, root), raw_input=dict(call.input))


async def _ask(client: Side, session: Session, call_id: str, tool_call: ToolCallUpdate,
               options: list[PermissionOption]) -> str | None:
    """The option the user chose, None when the client answered ``cancelled``, or ``UNANSWERED`` when it could
    not answer: never an approval by default, and the request stays open (REQ-PERM-016)."""
    await client.sender.drained()  # the tool call the question is about is shown first
    try:
        answer = await client.conn.request_permission(session_id=session.id, tool_call=tool_call, options=options)
    except Exception as exc:
        log.warning("the ACP client did not answer the request about %s (%s): it stays open", call_id, exc)
        session.asks.pop(call_id, None)
        return UNANSWERED
    outcome = answer.outcome
    return outcome.option_id if isinstance(outcome, AllowedOutcome) else None
