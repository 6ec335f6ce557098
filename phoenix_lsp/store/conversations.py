"""The conversations table of the store, with their messages and latest state (REQ-BED-007)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from phoenix_lsp.limits import STORED_ROW_BYTES
from phoenix_lsp.store.database import Database, require_limit, require_time
from phoenix_lsp.store.errors import (
    DamagedRowError,
    DuplicateConversationError,
    InvalidRecordError,
    MessageIndexError,
    UnknownConversationError,
)
from phoenix_lsp.store.records import ConversationRecord, ConversationSummary, LoadedConversation

_CONVERSATION_COLUMNS = "id, parent_id, origin_id, is_subagent, working_directory, model, title, created_at"


class Conversations(Database):
    """Conversations: created, renamed, their state replaced, their messages appended and loaded."""

    def create_conversation(self, rec: ConversationRecord) -> None:
        """Store a new conversation. Its parent and origin, when given, must already exist."""
        if not isinstance(rec.id, str) or not rec.id:
            raise InvalidRecordError("a conversation id must be a non-empty string")
        if rec.is_subagent and rec.parent_id is None:
            raise InvalidRecordError(
                f"conversation {rec.id!r} is a sub-agent without a parent_id; a sub-agent is always "
                "spawned by a parent conversation (REQ-BED-008) - pass the spawning conversation's id"
            )
        if rec.id in (rec.parent_id, rec.origin_id):
            raise InvalidRecordError(f"conversation {rec.id!r} cannot be its own parent or origin")
        require_time(rec.created_at, "created_at")
        what = f"conversation {rec.id!r}"
        for field, value in (
            ("id", rec.id),
            ("working_directory", rec.working_directory),
            ("model", rec.model),
            ("title", rec.title),
        ):
            self.guard.check(value, f"the {field} of {what}")
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM conversations WHERE id = ?", (rec.id,)).fetchone():
                raise DuplicateConversationError(rec.id)
            if rec.parent_id is not None:
                self._require(conn, rec.parent_id, "parent conversation")
            if rec.origin_id is not None:
                self._require(conn, rec.origin_id, "origin conversation")
            conn.execute(
                f"INSERT INTO conversations ({_CONVERSATION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rec.id,
                    rec.parent_id,
                    rec.origin_id,
                    int(rec.is_subagent),
                    rec.working_directory,
                    rec.model,
                    rec.title,
                    rec.created_at,
                ),
            )

    def update_title(self, conversation_id: str, title: str) -> None:
        """Replace a conversation's title (titles are often known only after the first exchange)."""
        self.guard.check(title, f"the title of conversation {conversation_id!r}")
        with self._write() as conn:
            self._require(conn, conversation_id)
            conn.execute("UPDATE conversations SET title = ? WHERE id = ?", (title, conversation_id))

    def update_model(self, conversation_id: str, model: str) -> None:
        """Record the model a conversation now uses (the user switched it between turns)."""
        self.guard.check(model, f"the model of conversation {conversation_id!r}")
        with self._write() as conn:
            self._require(conn, conversation_id)
            conn.execute("UPDATE conversations SET model = ? WHERE id = ?", (model, conversation_id))

    def save_state(self, conversation_id: str, state_json: str, status: str, updated_at: float) -> None:
        """Replace the conversation's state (one row per conversation; the previous one is gone)."""
        require_time(updated_at, "updated_at")
        self.guard.check(state_json, f"the state of conversation {conversation_id!r}")
        self.guard.check(status, f"the status of conversation {conversation_id!r}")
        with self._write() as conn:
            self._require(conn, conversation_id)
            conn.execute(
                "INSERT INTO conversation_states (conversation_id, state_json, status, updated_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (conversation_id) DO UPDATE SET "
                "state_json = excluded.state_json, status = excluded.status, "
                "updated_at = excluded.updated_at",
                (conversation_id, state_json, status, updated_at),
            )

    def append_messages(self, conversation_id: str, items: Sequence[tuple[int, str]]) -> int:
        """Append ``(index, json)`` messages in one transaction; return the new message count.

        Indexes must continue the stored history without gap or repeat: the first must equal the
        number of messages already stored, and each next one must be one more. Otherwise nothing is
        written and ``MessageIndexError`` says which index was wrong.
        """
        for index, text in items:
            self.guard.check(text, f"message {index} of conversation {conversation_id!r}")
        with self._write() as conn:
            row = conn.execute("SELECT message_count FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
            if row is None:
                raise UnknownConversationError(conversation_id)
            expected = int(row[0])
            for index, _text in items:
                if index != expected:
                    raise MessageIndexError(_index_problem(conversation_id, index, expected))
                expected += 1
            conn.executemany(
                "INSERT INTO messages (conversation_id, idx, json) VALUES (?, ?, ?)",
                ((conversation_id, index, text) for index, text in items),
            )
            return expected

    def load(self, conversation_id: str) -> LoadedConversation:
        """The conversation's record, latest state and complete message history (REQ-BED-007)."""
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_CONVERSATION_COLUMNS} FROM conversations WHERE id = ?", (conversation_id,)
            ).fetchone()
            if row is None:
                raise UnknownConversationError(conversation_id)
            # each row measured before it is read (REQ-SEC-044): the file may have been changed on the disk
            state = conn.execute(
                "SELECT CASE WHEN length(state_json) <= ? THEN state_json END, length(state_json), status, updated_at "
                "FROM conversation_states WHERE conversation_id = ?",
                (STORED_ROW_BYTES, conversation_id),
            ).fetchone()
            if state is not None and state[0] is None:
                raise DamagedRowError(conversation_id, "its stored state", _too_long(state[1]))
            messages: list[str] = []
            for index, text, size in conn.execute(
                "SELECT idx, CASE WHEN length(json) <= ? THEN json END, length(json) FROM messages "
                "WHERE conversation_id = ? ORDER BY idx", (STORED_ROW_BYTES, conversation_id),
            ):
                if text is None:
                    raise DamagedRowError(conversation_id, f"its message {index}", _too_long(size))
                messages.append(str(text))
        return LoadedConversation(
            record=_record(row),
            state_json=state[0] if state else None,
            messages=messages,
            status=state[2] if state else None,
            updated_at=state[3] if state else None,
        )

    def load_messages(self, conversation_id: str, after: int = -1, limit: int | None = None) -> list[tuple[int, str]]:
        """``(index, json)`` pairs with index > ``after``, in order, at most ``limit`` of them."""
        if limit is not None:
            require_limit(limit)
        with self._read() as conn:
            self._require(conn, conversation_id)
            rows = conn.execute(
                "SELECT idx, json FROM messages WHERE conversation_id = ? AND idx > ? ORDER BY idx LIMIT ?",
                (conversation_id, after, -1 if limit is None else limit),
            ).fetchall()
        return [(int(index), str(text)) for index, text in rows]

    def first_index_after_seq(self, conversation_id: str, seq: int) -> int:
        """The index of the first message whose event ``seq`` (the ``seq`` field of its JSON) is above
        ``seq``; the message count when there is none. Messages are stored in event order, so their seqs
        rise with the index: a binary search of O(log n) point reads, not a scan of the history."""
        with self._read() as conn:
            self._require(conn, conversation_id)
            count = int(conn.execute("SELECT message_count FROM conversations WHERE id = ?",
                                     (conversation_id,)).fetchone()[0])
            low, high = 0, count
            while low < high:
                middle = (low + high) // 2
                row = conn.execute(
                    "SELECT CASE WHEN json_valid(json) THEN json_extract(json, '$.seq') END FROM messages "
                    "WHERE conversation_id = ? AND idx = ?", (conversation_id, middle)).fetchone()
                value = row[0] if row else None
                if isinstance(value, int) and value > seq:
                    high = middle
                else:
                    low = middle + 1
        return low

    def message_count(self, conversation_id: str) -> int:
        """How many messages the conversation has (the next index ``append_messages`` expects)."""
        row = self._conn.execute("SELECT message_count FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        if row is None:
            raise UnknownConversationError(conversation_id)
        return int(row[0])

    def list_conversations(self, include_subagents: bool = False,
                           working_directory: str | None = None) -> list[ConversationSummary]:
        """Summaries, newest (by ``created_at``) first; sub-agents only on request (REQ-BED-009); only those of
        ``working_directory`` (compared as stored) when it is given."""
        # message_count is a maintained column, so this is one index walk plus a primary-key join.
        conditions = [] if include_subagents else ["c.is_subagent = 0"]
        args: list[object] = []
        if working_directory is not None:
            conditions.append("c.working_directory = ?")
            args.append(working_directory)
        where = f"WHERE {' AND '.join(conditions)} " if conditions else ""
        rows = self._conn.execute(
            "SELECT c.id, c.title, s.status, c.model, c.created_at, COALESCE(s.updated_at, c.created_at), "
            "c.message_count, c.parent_id, c.origin_id, c.working_directory "
            "FROM conversations AS c LEFT JOIN conversation_states AS s ON s.conversation_id = c.id "
            f"{where}ORDER BY c.created_at DESC, c.id DESC",
            args,
        ).fetchall()
        return [ConversationSummary(*row) for row in rows]

    def conversation_ids(self) -> list[str]:
        """Every conversation id, sub-agents included, oldest first (the order to restore them in)."""
        return [str(cid) for (cid,) in self._conn.execute("SELECT id FROM conversations ORDER BY created_at, id")]

    def exists(self, conversation_id: str) -> bool:
        """Whether a conversation with this id is stored."""
        row = self._conn.execute("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        return row is not None


def _record(row: Sequence[object]) -> ConversationRecord:
    return ConversationRecord(
        id=str(row[0]),
        parent_id=cast("str | None", row[1]),
        origin_id=cast("str | None", row[2]),
        is_subagent=bool(row[3]),
        working_directory=str(row[4]),
        model=str(row[5]),
        title=str(row[6]),
        created_at=float(cast(float, row[7])),
    )


def _index_problem(conversation_id: str, index: int, expected: int) -> str:
    if index < expected:
        kind = f"is already stored (the conversation has {expected} messages, indexes 0..{expected - 1})"
    else:
        kind = f"would leave a gap: the next index must be {expected}"
    return (
        f"message index {index} for conversation {conversation_id!r} {kind}; nothing was written. "
        "Indexes must be contiguous - append from message_count(conversation_id)"
    )


def _too_long(size: int | None) -> str:
    """Why a row measured at ``size`` characters (None: no text at all) was not read."""
    if size is None:
        return "it holds no text"
    return (f"it is {size:,} characters long, over the limit of {STORED_ROW_BYTES:,} for a stored row, so it was "
            "not read")
