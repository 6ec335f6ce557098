"""JSON-RPC errors of the phoenix/* requests (REQ-PROTO-003), and the core's refusals mapped onto them."""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcException

from ..core.effects import Reject, RejectCode
from ..protocol.codes import CODES


class PhoenixError(JsonRpcException):
    """A JSON-RPC error with the protocol's code and ``data.kind`` (REQ-PROTO-003)."""

    def __init__(self, kind: str, message: str, **data: Any) -> None:
        super().__init__(message, CODES[kind], {"kind": kind, **data})


def invalid(field: str, message: str) -> PhoenixError:
    return PhoenixError("invalidParams", message, field=field)


#: the core's refusal -> the error's data.kind; anything else is notAllowed
REFUSALS: dict[RejectCode, str] = {
    "busy": "agentBusy",
    "no_such_approval": "requestNotOpen",
    "no_pending_upgrade": "requestNotOpen",
    "sandbox_unavailable": "sandboxUnavailable",
    "context_exhausted": "contextExhausted",
    "empty_message": "invalidParams",
    "no_such_rule": "invalidParams",
}
#: the param an invalidParams refusal is about
_FIELDS: dict[RejectCode, str] = {"empty_message": "text", "no_such_rule": "rule"}


def refusal(reject: Reject, status: str, **data: Any) -> PhoenixError:
    """The core refused: the same message, as the error its reason maps to."""
    kind = REFUSALS.get(reject.code, "notAllowed")
    if kind == "invalidParams":
        return invalid(_FIELDS.get(reject.code, "text"), reject.message)
    if kind == "agentBusy":
        return PhoenixError(kind, reject.message, status=status)
    extra = {"reason": reject.code, **data}
    return PhoenixError(kind, reject.message, status=status, **extra)
