"""The phoenix/* requests: each method's params and result model, in one table."""

from __future__ import annotations

from dataclasses import dataclass

from . import params as p
from . import results as r
from .base import Wire
from .names import METHOD_NAMES


@dataclass(frozen=True)
class Method:
    name: str
    params: type[Wire]
    result: type[Wire]


_ALL = (
    Method("phoenix/newConversation", p.NewConversationParams, r.NewConversationResult),
    Method("phoenix/listConversations", p.ListConversationsParams, r.ListConversationsResult),
    Method("phoenix/getConversation", p.GetConversationParams, r.GetConversationResult),
    Method("phoenix/sendMessage", p.SendMessageParams, r.SendMessageResult),
    Method("phoenix/cancel", p.ConversationRef, r.CancelResult),
    Method("phoenix/setMode", p.SetModeParams, r.SetModeResult),
    Method("phoenix/respondToModeUpgrade", p.RespondToModeUpgradeParams, r.RespondToModeUpgradeResult),
    Method("phoenix/respondToApproval", p.RespondToApprovalParams, r.RespondToApprovalResult),
    Method("phoenix/setApprovalPolicy", p.SetApprovalPolicyParams, r.SetApprovalPolicyResult),
    Method("phoenix/setStyle", p.SetStyleParams, r.SetStyleResult),
    Method("phoenix/listModels", p.ListModelsParams, r.ListModelsResult),
    Method("phoenix/setModel", p.SetModelParams, r.SetModelResult),
    Method("phoenix/reloadInstructions", p.ConversationRef, r.ReloadInstructionsResult),
    Method("phoenix/triggerContinuation", p.ConversationRef, r.TriggerContinuationResult),
    Method("phoenix/getAuditLog", p.GetAuditLogParams, r.GetAuditLogResult),
    Method("phoenix/listAlwaysAllowed", p.ConversationRef, r.ListAlwaysAllowedResult),
    Method("phoenix/revokeAlwaysAllow", p.RevokeAlwaysAllowParams, r.RevokeAlwaysAllowResult),
    Method("phoenix/getRoute", p.GetRouteParams, r.GetRouteResult),
    Method("phoenix/setRoute", p.SetRouteParams, r.SetRouteResult),
    Method("phoenix/getArtifact", p.GetArtifactParams, r.GetArtifactResult),
    Method("phoenix/undoChanges", p.UndoChangesParams, r.UndoChangesResult),
    Method("phoenix/reviewBackground", p.ReviewBackgroundParams, r.ReviewBackgroundResult),
)

#: method name -> its models, in the order specs/protocol.md lists them
METHODS: dict[str, Method] = {m.name: m for m in _ALL}
if tuple(METHODS) != METHOD_NAMES:  # the announced names (names.py) and this table are one list
    raise ImportError(f"phoenix_lsp.protocol.names.METHOD_NAMES {METHOD_NAMES} differs from the table of "
                      f"methods {tuple(METHODS)}: add or remove the method in both, in the same order")
