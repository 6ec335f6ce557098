"""Undo afterwards (REQ-BASH-041, REQ-PROTO-070): phoenix/undoChanges takes back an accepted change set."""

from __future__ import annotations

from ...protocol import params as p
from ...protocol import results as res
from ..errors import invalid, refusal
from ..lsp import PhoenixServer
from ..requests import Handler, conversation, hub
from ..usecases import undo
from ..usecases.errors import Invalid, Refused


async def undo_changes(ls: PhoenixServer, p: p.UndoChangesParams) -> res.UndoChangesResult:
    runtime = conversation(ls, p.conversation_id)
    try:
        done = await undo.undo_changes(runtime, ls, hub(ls).data_dir, p.change_set_id)
    except Invalid as exc:
        raise invalid(exc.field, f"Invalid params: '{exc.field}': {exc.reason}") from None
    except Refused as exc:
        raise refusal(exc.reject, exc.status) from None
    return res.UndoChangesResult(
        change_set_id=done.change_set, label=done.label, undone=bool(done.restored), restored=list(done.restored),
        refused=[res.RefusedPath(path=path, why=why) for path, why in done.refused], message=done.message)


#: the phoenix/* requests this module serves, each with its handler (installed by ``served.py``)
HANDLERS: dict[str, Handler] = {"phoenix/undoChanges": undo_changes}
