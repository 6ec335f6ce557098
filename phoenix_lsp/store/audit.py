"""The store's audit log (REQ-LAYER-004): who changed what, appended and never rewritten."""

from __future__ import annotations

import json
from typing import cast

from phoenix_lsp.store.database import Database, require_limit, require_time
from phoenix_lsp.store.errors import InvalidRecordError
from phoenix_lsp.store.records import ACTORS, Actor, AuditEntry, AuditRecord


class AuditLog(Database):
    """Audit entries, appended and queried by conversation."""

    def append_audit(self, entry: AuditEntry) -> int:
        """Append an audit entry (REQ-LAYER-004); return its id."""
        if entry.actor not in ACTORS:
            raise InvalidRecordError(f"audit actor {entry.actor!r} is not one of {', '.join(ACTORS)}; say who acted")
        if not entry.action:
            raise InvalidRecordError("an audit entry needs an action such as 'mode_change'")
        require_time(entry.time, "time")
        try:
            json.loads(entry.detail)
        except ValueError as exc:
            raise InvalidRecordError(
                f"audit detail for action {entry.action!r} is not valid JSON ({exc}); pass json.dumps(...)"
            ) from exc
        for field, value in (
            ("conversation_id", entry.conversation_id),
            ("action", entry.action),
            ("mode", entry.mode),
            ("style", entry.style),
            ("detail", entry.detail),
        ):
            if value is not None:
                self.guard.check(value, f"the {field} of an audit entry ({entry.action})")
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO audit_log (time, conversation_id, actor, action, mode, style, detail) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    entry.time,
                    entry.conversation_id,
                    entry.actor,
                    entry.action,
                    entry.mode,
                    entry.style,
                    entry.detail,
                ),
            )
            return int(cast(int, cursor.lastrowid))

    def query_audit(self, conversation_id: str | None, after_id: int = 0, limit: int = 200) -> list[AuditRecord]:
        """Audit entries with id > ``after_id``, oldest first; ``conversation_id=None`` means all."""
        require_limit(limit)
        columns = "id, time, conversation_id, actor, action, mode, style, detail"
        if conversation_id is None:
            rows = self._conn.execute(
                f"SELECT {columns} FROM audit_log WHERE id > ? ORDER BY id LIMIT ?", (after_id, limit)
            ).fetchall()
        else:
            rows = self._conn.execute(
                f"SELECT {columns} FROM audit_log WHERE conversation_id = ? AND id > ? ORDER BY id LIMIT ?",
                (conversation_id, after_id, limit),
            ).fetchall()
        return [
            AuditRecord(
                id=int(r[0]),
                time=float(r[1]),
                conversation_id=r[2],
                actor=Actor(r[3]),
                action=str(r[4]),
                mode=r[5],
                style=r[6],
                detail=str(r[7]),
            )
            for r in rows
        ]
