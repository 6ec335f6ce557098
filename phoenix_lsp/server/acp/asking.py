"""Approvals and upgrade requests as ``session/request_permission`` (REQ-ACP-007, REQ-ACP-008).

An approval offers ``allow_once``, ``allow_always`` (the narrowest scope, as everywhere: a bash command's parsed
prefix, REQ-PERM-020; an MCP tool's call offers a second one, every tool of its server, REQ-MCP-020, each option
with its own id) and ``reject_once``; an upgrade the model asks for is a tool call of kind ``switch_mode`` with
``allow_once`` and ``reject_once`` only. An answer ``cancelled`` (the client's, after ``session/cancel``) is
a refusal: nothing runs.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any, Literal

from acp.schema import AllowedOutcome, PermissionOption, ToolCallProgress, ToolCallStart, ToolCallUpdate

from ...core.mcp_names import server_part
from ...core.rules import AllowRule, scopes_for
from ...core.values import Decision, ToolUse
from ..adapter import Conversation
from ..shell_review import pending_review
from . import files, updates
from .session import Session, Side

log = logging.getLogger(__name__)

ALLOW, ALWAYS, REJECT = "allow", "always", "reject"
#: the client did not answer (it went away): the request stays open, asked again when the session is loaded
UNANSWERED = "unanswered"
_CONSENTS = itertools.count(1)  # numbers the consent questions' tool calls
CANCELLED_REASON = "The user cancelled the turn while this call waited for approval: it did not run."


async def approval(client: Side, session: Session, conversation: Conversation, call: ToolUse) -> None:
    review = pending_review(conversation.id, call.id)
    if review is not None:  # a bash command's changes: a diff for each text file (REQ-BASH-032)
        content: list[Any] | None = files.review_content(client, review) or None
    else:
        content = await files.preview(client, conversation, call) if call.name == "patch" else None
    for update in session.calls.announce(call.id, call.name, call.input, session.root, content):
        client.update(session.id, update)
    scopes = scopes_for(conversation.state.always_allow, call)
    scopes = scopes if server_part(call.name) is not None else scopes[:1]  # an MCP tool's: the tool, its server
    always = {ALWAYS if i == 0 else f"{ALWAYS}-{i + 1}": scope for i, scope in enumerate(scopes)}
    options = [PermissionOption(option_id=ALLOW, name="Allow", kind="allow_once"),
               *(PermissionOption(option_id=option, name=_always_name(scope), kind="allow_always")
                 for option, scope in always.items()),
               PermissionOption(option_id=REJECT, name="Reject", kind="reject_once")]
    choice = await _ask(client, session, call.id, _tool_call(call, session.root, content), options)
    if choice is UNANSWERED or session.asks.get(call.id) is None:
        return  # no answer (it stays open), or answered elsewhere meanwhile (a cancel): nothing changes
    session.asks.pop(call.id, None)
    rule = None
    if choice == ALLOW or choice in always:
        decision, reason = (Decision.ALLOW if choice == ALLOW else Decision.ALWAYS_ALLOW), None
        rule = always[choice].rule if choice in always and choice != ALWAYS else None  # None: the narrowest
    else:
        decision, reason = Decision.DENY, (CANCELLED_REASON if choice is None else None)
    conversation.answer_approval(call.id, decision, rule=rule, reason=reason)


def _always_name(scope: AllowRule) -> str:
    """What an Always Allow option says it covers: the tool, a bash prefix, or every tool of an MCP server."""
    server = server_part(scope.tool)
    if server is not None:  # an MCP tool's rule: the tool's own, or its server's (mcp__<server>__*)
        tool = scope.tool[len(f"mcp__{server}__"):]
        return f"Always allow every tool of {server}" if tool == "*" else f"Always allow {tool}"
    return "Always allow this tool" if scope.whole_tool else f"Always allow {scope.label}"


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


async def mcp_consent(client: Side, session: Session, question: Any) -> bool | None:
    """A project's MCP server asks for the user's consent (REQ-MCP-009): shown as a tool call of kind
    ``execute`` (a command) or ``fetch`` (a URL) with the exact command or URL, asked with ``allow_always`` /
    ``reject_always`` (the answer is kept for this definition). None: no answer (asked again next turn)."""
    call_id = f"mcp-consent-{question.name}-{next(_CONSENTS)}"
    kind: Literal["fetch", "execute"] = "fetch" if question.url else "execute"
    title = f"Start the project's MCP server {question.name}"
    content = updates.text_content(question.text)
    start = ToolCallStart(session_update="tool_call", tool_call_id=call_id, title=title, kind=kind,
                          status="pending", content=content, raw_input={"server": question.name,
                                                                        "start": question.shown})
    client.update(session.id, start)
    options = [PermissionOption(option_id=ALLOW, name=question.APPROVE, kind="allow_always"),
               PermissionOption(option_id=REJECT, name=question.DECLINE, kind="reject_always")]
    tool_call = ToolCallUpdate(tool_call_id=call_id, title=title, kind=kind, status="pending", content=content)
    choice = await _ask(client, session, call_id, tool_call, options)
    answer = None if choice is UNANSWERED or choice is None else choice == ALLOW
    done = {True: "Started.", False: "Not started: you declined it.", None: "Not answered: asked again next turn."}
    end = ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id,
                           status="completed" if answer else "failed", content=updates.text_content(done[answer]))
    client.update(session.id, end)
    return answer


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
