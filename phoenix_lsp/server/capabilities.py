"""What the InitializeResult announces, as light data (REQ-PROTO-050): the names of everything served besides
the lifecycle, the options pygls derives capabilities from, and the sandbox facts. Read before ``initialize``
is answered by the dispatchers (``features/lifecycle.py``), and after it by the handlers (``served.py``)."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from ..protocol.names import COMMAND_NAMES, METHOD_NAMES

#: the phoenix/* requests, announced in ``capabilities.experimental.phoenix.methods`` (REQ-PROTO-001)
METHODS = list(METHOD_NAMES)
#: everything served besides the lifecycle: the phoenix/* requests, then what plain clients use (code actions,
#: a transcript's save) and the check of applied edits (``served.FEATURES`` holds their handlers)
FEATURES = (*METHOD_NAMES, types.TEXT_DOCUMENT_CODE_ACTION, types.TEXT_DOCUMENT_DID_SAVE,
            types.TEXT_DOCUMENT_DID_CHANGE)
#: the commands of plain clients (``executeCommandProvider``; ``commands.HANDLERS`` holds their handlers)
COMMANDS = COMMAND_NAMES
#: what the InitializeResult announces with a feature, beside its name
OPTIONS: dict[str, Any] = {
    types.TEXT_DOCUMENT_CODE_ACTION: types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.Empty]),
    types.TEXT_DOCUMENT_DID_SAVE: types.SaveOptions(include_text=True),
}


def sandbox_info(sandbox: Any) -> dict[str, Any]:
    """The sandbox facts announced in the InitializeResult (plain data: pydantic is not loaded yet)."""
    info = {"available": bool(sandbox.available), "reason": sandbox.reason, "missing": list(sandbox.missing),
            "landlockAbi": sandbox.landlock_abi}
    return {k: v for k, v in info.items() if v is not None}
