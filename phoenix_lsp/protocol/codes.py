"""The JSON-RPC error code of each ``data.kind`` (REQ-PROTO-003). Plain data: the server imports it at
start-up, before pydantic is loaded."""

from __future__ import annotations

#: data.kind -> JSON-RPC error code
CODES: dict[str, int] = {
    "invalidParams": -32602,
    "conversationNotFound": -32001,
    "agentBusy": -32002,
    "notInitialized": -32002,
    "requestNotOpen": -32003,
    "sandboxUnavailable": -32004,
    "contextExhausted": -32005,
    "notAllowed": -32006,
    "settingsNotSaved": -32007,
    "setupFailed": -32603,
}
