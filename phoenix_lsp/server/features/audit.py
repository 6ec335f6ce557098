"""The audit log (REQ-LAYER-004, REQ-PROTO-017)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..lazy import LazyModule
from ..lsp import PhoenixServer
from ..requests import Handler, hub, request

if TYPE_CHECKING:
    from ...protocol import params as p
    from ...protocol import results as r

res = LazyModule("phoenix_lsp.protocol.results")


def get_audit_log(ls: PhoenixServer, p: p.GetAuditLogParams) -> r.GetAuditLogResult:
    rows = hub(ls).store.query_audit(p.conversation_id, p.after_id, p.limit)
    entries = [
        res.AuditEntryView(
            id=row.id,
            time=row.time,
            conversation_id=row.conversation_id,
            actor=row.actor,
            kind=row.action,
            mode=row.mode,
            style=row.style,
            details=json.loads(row.detail),
        )
        for row in rows
    ]
    more = entries[-1].id if len(entries) == p.limit else None
    return res.GetAuditLogResult(entries=entries, next_after_id=more)  # type: ignore[no-any-return]


#: the phoenix/* requests this module serves, each with its handler (registered by ``setup``)
HANDLERS: dict[str, Handler] = {
    "phoenix/getAuditLog": get_audit_log,
}


def setup(server: PhoenixServer) -> None:
    for name, handler in HANDLERS.items():
        request(server, name)(handler)
