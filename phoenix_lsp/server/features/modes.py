"""Mode, style and approval policy; answers to approvals and upgrade requests; always-allow rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import PhoenixError, refusal
from ..lazy import LazyModule
from ..lsp import PhoenixServer
from ..requests import Handler, apply, conversation, request

if TYPE_CHECKING:
    from ...protocol import params as p
    from ...protocol import results as r

res = LazyModule("phoenix_lsp.protocol.results")
wire = LazyModule("phoenix_lsp.server.wire")
events = LazyModule("phoenix_lsp.core.events")
core_state = LazyModule("phoenix_lsp.core.state")


def set_mode(ls: PhoenixServer, p: p.SetModeParams) -> r.SetModeResult:
    runtime = conversation(ls, p.conversation_id)
    before = runtime.state.mode
    apply(runtime, events.SetMode(p.mode))
    mode = runtime.state.mode
    return res.SetModeResult(mode=mode, changed=mode is not before)  # type: ignore[no-any-return]


def respond_to_mode_upgrade(ls: PhoenixServer, p: p.RespondToModeUpgradeParams) -> r.RespondToModeUpgradeResult:
    runtime = conversation(ls, p.conversation_id)
    status = runtime.state.status
    if p.tool_use_id is not None and not (
        isinstance(status, core_state.AwaitingUpgrade) and status.batch.current.id == p.tool_use_id
    ):
        raise PhoenixError("requestNotOpen", f"There is no open upgrade request '{p.tool_use_id}': it was "
                           "already answered or cancelled. Nothing was changed.", toolUseId=p.tool_use_id)
    apply(runtime, events.UpgradeAnswer(p.approve))
    return res.RespondToModeUpgradeResult(mode=runtime.state.mode)  # type: ignore[no-any-return]


def respond_to_approval(ls: PhoenixServer, p: p.RespondToApprovalParams) -> r.RespondToApprovalResult:
    runtime = conversation(ls, p.conversation_id)
    reject = runtime.answer_approval(p.tool_use_id, p.decision, p.rule)
    if reject is not None:
        raise refusal(reject, runtime.state.status.kind, toolUseId=p.tool_use_id)
    return res.RespondToApprovalResult(tool_use_id=p.tool_use_id, decision=p.decision)  # type: ignore[no-any-return]


def set_approval_policy(ls: PhoenixServer, p: p.SetApprovalPolicyParams) -> r.SetApprovalPolicyResult:
    runtime = conversation(ls, p.conversation_id)
    apply(runtime, events.SetPolicy(p.policy))
    return res.SetApprovalPolicyResult(policy=runtime.state.policy)  # type: ignore[no-any-return]


def set_style(ls: PhoenixServer, p: p.SetStyleParams) -> r.SetStyleResult:
    runtime = conversation(ls, p.conversation_id)
    outcome = apply(runtime, events.SetStyle(p.style))
    # REQ-PROTO-014 / REQ-LAYER-006: a suggestion, never a mode change
    return res.SetStyleResult(  # type: ignore[no-any-return]
        style=runtime.state.style, mode=runtime.state.mode, suggestion=outcome.suggestion
    )


def list_always_allowed(ls: PhoenixServer, p: p.ConversationRef) -> r.ListAlwaysAllowedResult:
    runtime = conversation(ls, p.conversation_id)
    return res.ListAlwaysAllowedResult(  # type: ignore[no-any-return]
        tools=[wire.rule_to_wire(r) for r in runtime.state.always_allow]
    )


def revoke_always_allow(ls: PhoenixServer, p: p.RevokeAlwaysAllowParams) -> r.RevokeAlwaysAllowResult:
    runtime = conversation(ls, p.conversation_id)
    revoke = events.RevokeAlwaysAllow(p.tool_name, p.rule)
    if runtime.check(revoke) is not None:  # not in the list: not an error (REQ-PROTO-019)
        return res.RevokeAlwaysAllowResult(revoked=False)  # type: ignore[no-any-return]
    apply(runtime, revoke)
    return res.RevokeAlwaysAllowResult(revoked=True)  # type: ignore[no-any-return]


#: the phoenix/* requests this module serves, each with its handler (registered by ``setup``)
HANDLERS: dict[str, Handler] = {
    "phoenix/setMode": set_mode,
    "phoenix/respondToModeUpgrade": respond_to_mode_upgrade,
    "phoenix/respondToApproval": respond_to_approval,
    "phoenix/setApprovalPolicy": set_approval_policy,
    "phoenix/setStyle": set_style,
    "phoenix/listAlwaysAllowed": list_always_allowed,
    "phoenix/revokeAlwaysAllow": revoke_always_allow,
}


def setup(server: PhoenixServer) -> None:
    for name, handler in HANDLERS.items():
        request(server, name)(handler)
