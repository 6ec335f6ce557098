"""The names of the ``phoenix/*`` requests, in the order specs/protocol.md lists them.

Plain data with no imports, so the server can announce them in its ``InitializeResult`` before the wire models
(pydantic) are loaded (REQ-PROTO-050). ``phoenix_lsp.protocol.methods`` builds its table of params and result
models in this very order and refuses to load if the two differ, so the announcement cannot drift from what the
server serves (REQ-PROTO-001).
"""

from __future__ import annotations

METHOD_NAMES: tuple[str, ...] = (
    "phoenix/newConversation",
    "phoenix/listConversations",
    "phoenix/getConversation",
    "phoenix/sendMessage",
    "phoenix/cancel",
    "phoenix/setMode",
    "phoenix/respondToModeUpgrade",
    "phoenix/respondToApproval",
    "phoenix/setApprovalPolicy",
    "phoenix/setStyle",
    "phoenix/listModels",
    "phoenix/setModel",
    "phoenix/reloadInstructions",
    "phoenix/triggerContinuation",
    "phoenix/getAuditLog",
    "phoenix/listAlwaysAllowed",
    "phoenix/revokeAlwaysAllow",
    "phoenix/getRoute",
    "phoenix/setRoute",
    "phoenix/getArtifact",
)
