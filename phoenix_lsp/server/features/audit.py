"""The audit log (REQ-LAYER-004, REQ-PROTO-017)."""

from __future__ import annotations

import json

from ...core.values import Mode, Style
from ...protocol import params as p
from ...protocol import results as res
from ..lsp import PhoenixServer
from ..requests import Handler, hub


def get_audit_log(ls: PhoenixServer, p: p.GetAuditLogParams) -> res.GetAuditLogResult:
    rows = hub(ls).store.query_audit(p.conversation_id, p.after_id, p.limit)
    entries = [
        res.AuditEntryView(
            id=row.id,
            time=row.time,
            conversation_id=row.conversation_id,
            actor=row.actor,
            kind=row.action,
            mode=Mode(row.mode) if row.mode is not None else None,
            style=Style(row.style) if row.style is not None else None,
            details=json.loads(row.detail),
        )
        for row in rows
    ]
    more = entries[-1].id if len(entries) == p.limit else None
    return res.GetAuditLogResult(entries=entries, next_after_id=more)


#: the phoenix/* requests this module serves, each with its handler (installed by ``served.py``)
HANDLERS: dict[str, Handler] = {
    "phoenix/getAuditLog": get_audit_log,
}

