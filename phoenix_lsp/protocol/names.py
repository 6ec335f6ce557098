"""The names of the ``phoenix/*`` requests and of the plain clients' commands, in the order specs/protocol.md lists
them.

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
    "phoenix/undoChanges",
    "phoenix/reviewBackground",
)

#: The commands of editors without the phoenix protocol (``workspace/executeCommand``, REQ-PROTO-038), in the
#: order specs/protocol.md lists them: announced in ``executeCommandProvider`` from here, served by
#: ``server/commands.py``, which takes its names from this very tuple.
COMMAND_NAMES: tuple[str, ...] = (
    "phoenix.ask",
    "phoenix.newConversation",
    "phoenix.send",
    "phoenix.showConversation",
    "phoenix.cancel",
    "phoenix.restricted",
    "phoenix.unrestricted",
    "phoenix.auto",
    "phoenix.interactive",
)
