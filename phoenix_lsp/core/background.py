"""A background command's changes reviewed at rest (REQ-BASH-044) and told when discarded (REQ-BASH-046).

A captured background command that ends while no turn runs is reviewed at once, through the review a foreground
command gets: the server asks (``ReviewBackground``), which is allowed at rest only (``idle``, ``error``,
``exhausted``; a turn that runs keeps it for its next bash call or for its end) and one at a time, never during an
undo. While it is under way (``reviewing``) no turn starts and no undo does. Its question is a host call outside a
turn: the patch tool's policy decides it (``decide_host``) exactly as during a turn, and when it asks, the
question waits in ``review_question`` for the user's answer (a cancel says no). ``BackgroundReviewed`` ends it and
writes what the model is told into the history, as the note of a user message; so does ``ChangesDiscarded``, which
also tells the user.
"""

from __future__ import annotations

from dataclasses import replace

from . import texts
from .approvals import answer_host, is_review, on_approval
from .effects import AnswerHostCall, AskApproval, Audit, Effect
from .events import ApprovalAnswer, BackgroundReviewed, Cancel, ChangesDiscarded, HostCall, ReviewBackground
from .notifications import AlwaysAllowChanged, ApprovalResolved, ErrorReported
from .permissions import Ask, decide_host
from .rules import add_rule, scopes_for
from .state import BUSY, ConversationState
from .steps import Out, reject, rule_detail, settle
from .undo import undoing_refusal
from .values import Actor, Decision


def on_review_background(state: ConversationState, ev: ReviewBackground) -> Out:
    if (busy := undoing_refusal(state)) is not None:
        return busy
    state = replace(state, reviewing=ev.job)
    return state, (Audit(Actor.SYSTEM, "backgroundReviewStarted", {"job": ev.job, "command": ev.command[:200]}),)


def on_rest_host_call(state: ConversationState, ev: HostCall) -> Out:
    """The review's question of the background command under review (``reviewing``), outside a turn."""
    if state.reviewing is None or ev.tool_use_id != state.reviewing or not is_review(ev.call, ev.kind) \
            or state.review_question is not None:
        return reject(state, "stale", f"Host call {ev.call.id} belongs to {ev.tool_use_id}, which is no background "
                                       "command under review; it was not made.")
    verdict = decide_host(state, ev.call, ev.kind)
    if isinstance(verdict, Ask):
        return replace(state, review_question=ev.call), (
            AskApproval(ev.call, scopes_for(state.always_allow, ev.call)),
            Audit(Actor.AGENT, "approvalRequested", {"tool": ev.call.name, "toolUseId": ev.call.id,
                                                    "background": ev.tool_use_id}),
        )
    return answer_host(state, ev.call, [], ev.kind)


def on_rest_approval(state: ConversationState, ev: ApprovalAnswer) -> Out | None:
    """The user's answer to the question of a review at rest; None when it is no answer to that question."""
    call = state.review_question
    if call is None or ev.tool_use_id != call.id:
        return None
    state = replace(state, review_question=None)
    resolved: dict[str, object] = {"tool": call.name, "decision": ev.decision.value}
    effects: list[Effect] = [Audit(Actor.USER, "approvalResolved", resolved), ApprovalResolved(call.id, ev.decision)]
    if ev.decision is Decision.DENY:
        return state, (*effects, AnswerHostCall(call.id, False, ev.reason or texts.DENIED, "user"))
    if ev.decision is Decision.ALWAYS_ALLOW:
        scopes = scopes_for(state.always_allow, call)
        rule = scopes[0] if ev.rule is None else next((s for s in scopes if s.names(ev.rule)), None)
        if rule is None:
            state = replace(state, review_question=call)
            offered = ", ".join(f"'{s.rule}'" for s in scopes)
            return reject(state, "no_such_rule", f"'{ev.rule}' is not a scope offered for this approval; choose "
                                                 f"one of {offered}. Nothing was changed; the approval is still open.")
        resolved["rule"] = rule.label
        if rule not in state.always_allow:
            state = replace(state, always_allow=add_rule(state.always_allow, rule))
            effects += [Audit(Actor.USER, "alwaysAllowGranted", rule_detail(rule)), AlwaysAllowChanged(rule, True)]
    return answer_host(state, call, effects)  # decided again: the mode may have changed while it waited


def on_approval_at_rest(state: ConversationState, ev: ApprovalAnswer) -> Out:
    """At rest an answer is the answer to a background review's question, or refused as answering nothing."""
    out = on_rest_approval(state, ev)
    return on_approval(state, ev) if out is None else out


def on_rest_cancel(state: ConversationState, ev: Cancel) -> Out:
    """A cancel at rest: a review's open question is answered no (its layer is discarded); else nothing runs."""
    call = state.review_question
    if call is None:
        return state, ()
    state = replace(state, review_question=None)
    return state, (ApprovalResolved(call.id, "cancelled"), AnswerHostCall(call.id, False, texts.CANCELLED, "user"))


def on_background_reviewed(state: ConversationState, ev: BackgroundReviewed) -> Out:
    if state.reviewing != ev.job:
        return state, ()  # stale: not the review under way
    state = replace(state, reviewing=None, review_question=None)
    audit = Audit(Actor.SYSTEM, "backgroundReviewed", {"job": ev.job})
    if not ev.told:
        return state, (audit,)
    return _tell(state, ev.told), (audit,)


def on_changes_discarded(state: ConversationState, ev: ChangesDiscarded) -> Out:
    """Told to the user now (an error event of kind ``discarded``) and to the model in the history."""
    return _tell(state, ev.told), (Audit(Actor.SYSTEM, "backgroundDiscarded", {"told": ev.told[:500]}),
                                   ErrorReported(ev.told, "discarded"))


def _tell(state: ConversationState, told: str) -> ConversationState:
    """``told`` for the model: written into the history at rest, else at the end of the running batch."""
    state = replace(state, notes=(*state.notes, f"[system] {told}"))
    if not isinstance(state.status, BUSY):
        state = settle(state, state.status)
    return state
