"""The store's event log: what clients that reconnect catch up from (the newest events of each conversation)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from phoenix_lsp.store.database import Database, require_limit
from phoenix_lsp.store.errors import EventSeqError, UnknownConversationError


class Events(Database):
    """Events, in strictly increasing seq per conversation; only the newest ``max_events_per_conversation``
    are kept."""

    def append_event(self, conversation_id: str, seq: int, json: str) -> None:
        """Store an event for clients that catch up after a reconnect.

        ``seq`` must be greater than every stored seq of the conversation. Only the newest
        ``max_events_per_conversation`` events are kept; older ones are dropped in the same transaction.
        """
        self.append_events([(conversation_id, seq, json)])

    def append_events(self, events: Sequence[tuple[str, int, str]]) -> None:
        """Store ``(conversation_id, seq, json)`` events, of one or several conversations, in one transaction:
        all of them or (on any error) none. The rules of :meth:`append_event` hold for each, in order."""
        for conversation_id, seq, text in events:
            self.guard.check(text, f"event {seq} of conversation {conversation_id!r}")
        if not events:
            return
        ids = list(dict.fromkeys(conversation_id for conversation_id, _, _ in events))
        with self._write() as conn:
            # one query for every conversation of the batch (a flush holds the deltas of many streams)
            last: dict[str, int | None] = {}
            count: dict[str, int] = {}  # the conversation's events once these are in
            for start in range(0, len(ids), 500):  # SQLite's limit on bound parameters
                chunk = ids[start : start + 500]
                rows = conn.execute(
                    "SELECT id, event_count, (SELECT MAX(seq) FROM events WHERE conversation_id = c.id) "
                    f"FROM conversations AS c WHERE id IN ({','.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
                for conversation_id, stored, top in rows:
                    count[conversation_id] = int(stored)
                    last[conversation_id] = None if top is None else int(top)
            for conversation_id in ids:
                if conversation_id not in last:
                    raise UnknownConversationError(conversation_id)
            for conversation_id, seq, _ in events:
                before = last[conversation_id]
                if before is not None and seq <= before:
                    raise EventSeqError(
                        f"event seq {seq} for conversation {conversation_id!r} is not greater than the last "
                        f"stored seq {before}; seqs must strictly increase so clients can detect gaps - "
                        "continue from last_seq() + 1"
                    )
                last[conversation_id] = seq
                count[conversation_id] += 1
            conn.executemany(
                "INSERT INTO events (conversation_id, seq, json) VALUES (?, ?, ?)", list(events)
            )
            for conversation_id, total in count.items():
                excess = total - self._max_events
                if excess > 0:
                    conn.execute(
                        "DELETE FROM events WHERE conversation_id = ? AND seq IN ("
                        "SELECT seq FROM events WHERE conversation_id = ? ORDER BY seq LIMIT ?)",
                        (conversation_id, conversation_id, excess),
                    )

    def events_after(self, conversation_id: str, seq: int, limit: int = 1000) -> list[tuple[int, str]]:
        """Up to ``limit`` ``(seq, json)`` events with a seq greater than ``seq``, oldest first.

        Events older than the retention window are gone: a client whose first received seq is more
        than one above what it asked for missed events and should reload the conversation instead.
        """
        require_limit(limit)
        with self._read() as conn:
            self._require(conn, conversation_id)
            rows = conn.execute(
                "SELECT seq, json FROM events WHERE conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (conversation_id, seq, limit),
            ).fetchall()
        return [(int(s), str(text)) for s, text in rows]

    def last_seq(self, conversation_id: str) -> int | None:
        """The highest stored event seq of the conversation, ``None`` if it has no events yet."""
        with self._read() as conn:
            self._require(conn, conversation_id)
            return _last_seq(conn, conversation_id)


def _last_seq(conn: sqlite3.Connection, conversation_id: str) -> int | None:
    row = conn.execute("SELECT MAX(seq) FROM events WHERE conversation_id = ?", (conversation_id,)).fetchone()
    return None if row[0] is None else int(row[0])
