"""The SQLite store. See the package docstring for the rules of use.

``Store`` is the database (``database.py``: the file, its migrations and transactions) with each table's
queries: ``conversations.py`` (conversations, messages, state), ``events.py``, ``images.py``, ``audit.py``;
and the check of the whole (``check_integrity``, here).
"""

from __future__ import annotations

from phoenix_lsp.store.audit import AuditLog
from phoenix_lsp.store.conversations import Conversations
from phoenix_lsp.store.database import DEFAULT_MAX_EVENTS, Synchronous
from phoenix_lsp.store.events import Events
from phoenix_lsp.store.images import Images

__all__ = ["DEFAULT_MAX_EVENTS", "Store", "Synchronous"]


class Store(Conversations, Events, Images, AuditLog):
    """A phoenix-lsp database: conversations, messages, events, images and the audit log.

    Every method that writes commits before it returns, so whatever it wrote survives the process
    being killed (SIGKILL) right afterwards. Texts are opaque: the store keeps JSON produced by others
    and never interprets it (the audit ``detail`` is only checked to be valid JSON).

    Parameters:
        path: the database file; its directory is created (mode 0700) if missing.
        max_events_per_conversation: how many of the newest events each conversation keeps.
        guard: the secret guard every written text goes through (default: watches ANTHROPIC_API_KEY).
        synchronous: ``"NORMAL"`` (default) survives any process crash; ``"FULL"`` also survives power
            loss or an OS crash, at the cost of one fsync per write.
        migrations: the schema migrations to apply; tests pass extra ones, the server never does.
    """

    # ------------------------------------------------------------------ health

    def check_integrity(self) -> list[str]:
        """Problems found in the database; an empty list means it is consistent.

        Runs SQLite's integrity and foreign-key checks and verifies the maintained counters and that
        every conversation's message indexes are exactly 0..n-1.
        """
        problems: list[str] = []
        with self._read() as conn:
            result = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
            if result != ["ok"]:
                problems.extend(f"integrity: {line}" for line in result)
            problems.extend(f"foreign key: {tuple(r)}" for r in conn.execute("PRAGMA foreign_key_check"))
            bad_counts = conn.execute(
                "SELECT c.id, c.message_count, COUNT(m.idx), COALESCE(MAX(m.idx), -1) "
                "FROM conversations AS c LEFT JOIN messages AS m ON m.conversation_id = c.id "
                "GROUP BY c.id HAVING c.message_count != COUNT(m.idx) OR COALESCE(MAX(m.idx), -1) != "
                "COUNT(m.idx) - 1"
            ).fetchall()
            problems.extend(
                f"messages of {cid!r}: count column {count}, {actual} rows, highest index {top}"
                for cid, count, actual, top in bad_counts
            )
            bad_events = conn.execute(
                "SELECT c.id, c.event_count, COUNT(e.seq) FROM conversations AS c "
                "LEFT JOIN events AS e ON e.conversation_id = c.id GROUP BY c.id "
                "HAVING c.event_count != COUNT(e.seq)"
            ).fetchall()
            problems.extend(
                f"events of {cid!r}: count column {count}, {actual} rows" for cid, count, actual in bad_events
            )
        return problems
