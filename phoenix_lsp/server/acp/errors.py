"""Every error the agent answers says what happened, why and what to do (REQ-ACP-030): as the error's own
``message`` and under ``data.message`` and ``data.error`` (clients read one or the other: CodeCompanion.nvim showed
a bare "Invalid request"), beside the fields that name what was wrong.

The agent's own errors are made by :func:`failure`; those the SDK makes itself (a method it does not serve, params
its schema refuses, an exception nobody caught) are given the same shape by :func:`shaped` as they are written,
the one door every answer leaves by (``lines.watch``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from acp import RequestError

from ..usecases.errors import Invalid, Refused, UseCaseError

INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
NOT_FOUND = -32002

#: the methods the agent serves, named when a client asks for another
SERVED = ("initialize", "session/new", "session/load", "session/list", "session/close", "session/prompt",
          "session/cancel", "session/set_mode", "session/set_config_option")

#: the head of an error answer as the SDK writes it (compact JSON: ``{"jsonrpc":"2.0","id":..,"error":{``)
_ERROR_HEAD = re.compile(rb'\{"jsonrpc":"2\.0","id":(?:-?\d{1,20}|"(?:[^"\\]|\\.){0,200}"|null),"error":\{')
#: the longest error answer reshaped (the SDK's are small; a longer one is left as written)
MAX_SHAPED_BYTES = 256 * 1024


def failure(code: int, text: str, **fields: Any) -> RequestError:
    """An error answer whose message, ``data.message`` and ``data.error`` are ``text`` (what, why, what to do)."""
    return RequestError(code, text, {**fields, "message": text, "error": text})


def invalid_params(text: str, **fields: Any) -> RequestError:
    return failure(INVALID_PARAMS, text, **fields)


def invalid_request(text: str, **fields: Any) -> RequestError:
    return failure(INVALID_REQUEST, text, **fields)


def not_found(text: str, **fields: Any) -> RequestError:
    return failure(NOT_FOUND, text, **fields)


def internal(text: str, **fields: Any) -> RequestError:
    return failure(INTERNAL_ERROR, text, **fields)


def no_session(session_id: str) -> RequestError:
    return invalid_params(f"There is no session {session_id[:80]!r} on this connection (never created here, or "
                          "closed): create one with session/new, or load a stored one with session/load "
                          "(session/list lists them).", sessionId=session_id[:80])


def translated(exc: UseCaseError) -> RequestError:
    """A use case's error as ACP's: a refusal of the core is an invalid request (with the conversation's status;
    an empty message, invalid params), anything else invalid params about the prompt."""
    if isinstance(exc, Refused):
        if exc.reject.code == "empty_message":
            return invalid_params(exc.reject.message, prompt=exc.reject.message)
        return invalid_request(exc.reject.message, status=exc.status)
    assert isinstance(exc, Invalid)
    return invalid_params(exc.reason, prompt=exc.reason)


def _said(code: int, message: str, data: Any) -> str:
    """The what / why / next of an error the SDK made, from what it put in it."""
    fields = data if isinstance(data, dict) else {}
    if code == METHOD_NOT_FOUND:
        method = str(fields.get("method", "?"))[:80]
        return (f"The agent does not serve the method {method!r}: phoenix-lsp serves ACP v1's "
                f"{', '.join(SERVED)}. Nothing was done; use one of those (or a client that speaks ACP v1).")
    if code == INVALID_PARAMS and isinstance(fields.get("errors"), list):
        errors = [e for e in fields["errors"] if isinstance(e, dict)]
        first = errors[0] if errors else {}
        where = ".".join(str(part) for part in first.get("loc", ()) or ("params",))[:120]
        more = f", and {len(errors) - 1} more" if len(errors) > 1 else ""
        return (f"The request's params do not match ACP v1's schema ({where}: {str(first.get('msg', 'invalid'))[:200]}"
                f"{more}), so nothing was done: send the fields this method takes, as the protocol names them.")
    if code == INTERNAL_ERROR:
        details = str(fields.get("details", "") or json.dumps(data)[:300])[:300]
        return (f"The agent failed while handling the request ({details}); it goes on serving. Try again; its "
                "log (stderr) says what went wrong, and belongs in a report if it fails again.")
    return f"{message}: {json.dumps(data)[:300]}" if data is not None else message


def shaped(line: bytes, redact: Callable[[str], str] = lambda text: text) -> bytes:
    """``line`` (one message the agent writes) with the error shape when it is an error answer that lacks it;
    any other line as it is. ``redact``: the process's redactor, for a message made of an exception's text."""
    if not _ERROR_HEAD.match(line, 0, 260) or len(line) > MAX_SHAPED_BYTES:
        return line
    try:
        answer = json.loads(line)
        error = answer["error"]
        code, message, data = int(error.get("code", INTERNAL_ERROR)), str(error.get("message", "")), error.get("data")
    except (ValueError, KeyError, TypeError, AttributeError):
        return line
    if isinstance(data, dict) and isinstance(data.get("message"), str) and data.get("error") == data["message"]:
        return line  # made by failure()
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        text = data["message"]
    else:
        text = redact(_said(code, message, data))
    fields = data if isinstance(data, dict) else ({} if data is None else {"details": data})
    fields = {key: redact(value) if isinstance(value, str) else value for key, value in fields.items()}
    error.update(message=text, data={**fields, "message": text, "error": text})
    return (json.dumps(answer, separators=(",", ":")) + "\n").encode("utf-8")
