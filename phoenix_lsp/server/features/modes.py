"""Mode, style and approval policy; answers to approvals and upgrade requests; always-allow rules."""

from __future__ import annotations

from ...core import events
from ...core import state as core_state
from ...protocol import params as p
from ...protocol import results as res
from .. import wire
from ..errors import PhoenixError, refusal
from ..lsp import PhoenixServer
from ..requests import Handler, apply, conversation
from ..usecases import choices
from ..usecases.errors import Refused


def set_mode(ls: PhoenixServer, p: p.SetModeParams) -> res.SetModeResult:
    runtime = conversation(ls, p.conversation_id)
    try:
        done = choices.set_mode(runtime, p.mode)
    except Refused as exc:
        raise refusal(exc.reject, exc.status) from None
    return res.SetModeResult(mode=done.mode, changed=done.changed)


def respond_to_mode_upgrade(ls: PhoenixServer, p: p.RespondToModeUpgradeParams) -> res.RespondToModeUpgradeResult:
    runtime = conversation(ls, p.conversation_id)
    status = runtime.state.status
    if p.tool_use_id is not None and not (
        isinstance(status, core_state.AwaitingUpgrade) and status.batch.current.id == p.tool_use_id
    ):
        raise PhoenixError("requestNotOpen", f"There is no open upgrade request '{p.tool_use_id}': it was "
                           "already answered or cancelled. Nothing was changed.", toolUseId=p.tool_use_id)
    apply(runtime, events.UpgradeAnswer(p.approve))
    return res.RespondToModeUpgradeResult(mode=runtime.state.mode)


def respond_to_approval(ls: PhoenixServer, p: p.RespondToApprovalParams) -> res.RespondToApprovalResult:
    runtime = conversation(ls, p.conversation_id)
    try:
        choices.decide_approval(runtime, p.tool_use_id, p.decision, p.rule)
    except Refused as exc:
        raise refusal(exc.reject, exc.status, toolUseId=p.tool_use_id) from None
    return res.RespondToApprovalResult(tool_use_id=p.tool_use_id, decision=p.decision)


def set_approval_policy(ls: PhoenixServer, p: p.SetApprovalPolicyParams) -> res.SetApprovalPolicyResult:
    runtime = conversation(ls, p.conversation_id)
    try:
        policy = choices.set_policy(runtime, p.policy)
    except Refused as exc:
        raise refusal(exc.reject, exc.status) from None
    return res.SetApprovalPolicyResult(policy=policy)


def set_style(ls: PhoenixServer, p: p.SetStyleParams) -> res.SetStyleResult:
    runtime = conversation(ls, p.conversation_id)
    try:
        done = choices.set_style(runtime, p.style)
    except Refused as exc:
        raise refusal(exc.reject, exc.status) from None
    # REQ-PROTO-014 / REQ-LAYER-006: a suggestion, never a mode change
    return res.SetStyleResult(style=done.style, mode=done.mode, suggestion=done.suggestion)


def list_always_allowed(ls: PhoenixServer, p: p.ConversationRef) -> res.ListAlwaysAllowedResult:
    runtime = conversation(ls, p.conversation_id)
    return res.ListAlwaysAllowedResult(
        tools=[wire.rule_to_wire(r) for r in runtime.state.always_allow]
    )


def revoke_always_allow(ls: PhoenixServer, p: p.RevokeAlwaysAllowParams) -> res.RevokeAlwaysAllowResult:
    runtime = conversation(ls, p.conversation_id)
    revoke = events.RevokeAlwaysAllow(p.tool_name, p.rule)
    if runtime.check(revoke) is not None:  # not in the list: not an error (REQ-PROTO-019)
        return res.RevokeAlwaysAllowResult(revoked=False)
    apply(runtime, revoke)
    return res.RevokeAlwaysAllowResult(revoked=True)


#: the phoenix/* requests this module serves, each with its handler (installed by ``served.py``)
HANDLERS: dict[str, Handler] = {
    "phoenix/setMode": set_mode,
    "phoenix/respondToModeUpgrade": respond_to_mode_upgrade,
    "phoenix/respondToApproval": respond_to_approval,
    "phoenix/setApprovalPolicy": set_approval_policy,
    "phoenix/setStyle": set_style,
    "phoenix/listAlwaysAllowed": list_always_allowed,
    "phoenix/revokeAlwaysAllow": revoke_always_allow,
}

