"""The SQLite store. See the package docstring for the rules of use."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Literal, cast

from phoenix_lsp.store.errors import (
    DuplicateConversationError,
    EventSeqError,
    ImageNotFoundError,
    InvalidRecordError,
    MessageIndexError,
    SchemaError,
    UnknownConversationError,
)
from phoenix_lsp.store.paths import default_db_path
from phoenix_lsp.store.records import (
    ACTORS,
    Actor,
    AuditEntry,
    AuditRecord,
    ConversationRecord,
    ConversationSummary,
    LoadedConversation,
)
from phoenix_lsp.store.schema import MIGRATIONS, Migration, migrate
from phoenix_lsp.store.secrets import SecretGuard

DEFAULT_MAX_EVENTS = 10_000
Synchronous = Literal["NORMAL", "FULL"]

_CONVERSATION_COLUMNS = "id, parent_id, origin_id, is_subagent, working_directory, model, title, created_at"


class _Checkpointer(threading.Thread):
    """Copies the write-ahead log back into the database on its own thread and connection, every
    ``INTERVAL_S`` (a passive checkpoint: it never waits for the writer, and readers keep reading), so that no
    write of the store's owner pays for it. Used with ``wal_autocheckpoint`` off on the owner's connection."""

    INTERVAL_S = 0.5

    def __init__(self, path: Path, busy_timeout_s: float) -> None:
        super().__init__(name="phoenix-store-checkpoint", daemon=True)
        self._path, self._timeout = path, busy_timeout_s
        self._stopping = threading.Event()

    def run(self) -> None:
        conn = sqlite3.connect(self._path, isolation_level=None, timeout=self._timeout)
        try:
            while not self._stopping.wait(self.INTERVAL_S):
                with contextlib.suppress(sqlite3.Error):  # busy or closing: the next round catches up
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            conn.close()

    def stop(self) -> None:
        self._stopping.set()
        self.join(timeout=10)


class Store:
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

    def __init__(
        self,
        path: Path,
        *,
        max_events_per_conversation: int = DEFAULT_MAX_EVENTS,
        guard: SecretGuard | None = None,
        synchronous: Synchronous = "NORMAL",
        migrations: Sequence[Migration] = MIGRATIONS,
        busy_timeout_s: float = 5.0,
        checkpoint_in_background: bool = False,
    ) -> None:
        if max_events_per_conversation < 1:
            raise InvalidRecordError(
                f"max_events_per_conversation must be at least 1, got {max_events_per_conversation}; "
                "it is how many recent events each conversation keeps for reconnecting clients"
            )
        if synchronous not in ("NORMAL", "FULL"):
            raise InvalidRecordError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        self._path = Path(path)
        self._max_events = max_events_per_conversation
        self.guard = guard if guard is not None else SecretGuard()
        _prepare_file(self._path)
        # Autocommit mode: the store issues BEGIN/COMMIT itself so that every write is one explicit
        # transaction committed before the method returns. check_same_thread stays on: see thread rules.
        self._conn = sqlite3.connect(self._path, isolation_level=None, timeout=busy_timeout_s)
        try:
            mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise SchemaError(
                    f"cannot switch {self._path} to write-ahead logging (SQLite answered {mode!r}); the "
                    "store needs WAL, which fails on some network file systems - set "
                    "PHOENIX_LSP_DATA_DIR to a directory on a local disk"
                )
            self._conn.execute(f"PRAGMA synchronous = {synchronous}")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._schema_version = migrate(self._conn, migrations, where=str(self._path))
            self._checkpointer: _Checkpointer | None = None
            if checkpoint_in_background:
                # The write that crosses SQLite's 1,000-page mark would otherwise copy the log back into the
                # database, with an fsync, on the caller's thread: the server's event loop (REQ-PROTO-049).
                self._conn.execute("PRAGMA wal_autocheckpoint = 0")
                self._checkpointer = _Checkpointer(self._path, busy_timeout_s)
                self._checkpointer.start()
        except BaseException:
            self._conn.close()
            raise

    # ------------------------------------------------------------------ lifecycle

    @staticmethod
    def default_path() -> Path:
        """The platform's default database path (``PHOENIX_LSP_DATA_DIR`` overrides the directory)."""
        return default_db_path()

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    @property
    def schema_version(self) -> int:
        """The schema version the database is at (after migrations)."""
        return self._schema_version

    def close(self) -> None:
        """Close the connection. Everything is already committed; closing only releases the file (the last
        connection to close copies the write-ahead log back and removes it)."""
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        # IMMEDIATE takes the write lock up front, so the checks made inside the transaction still hold
        # when its writes happen, even if another process shares the file.
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        # One snapshot for multi-statement reads, so a load never mixes two versions of a conversation.
        self._conn.execute("BEGIN")
        try:
            yield self._conn
        finally:
            if self._conn.in_transaction:
                self._conn.execute("COMMIT")

    def _require(self, conn: sqlite3.Connection, conversation_id: str, role: str = "conversation") -> None:
        if conn.execute("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)).fetchone() is None:
            raise UnknownConversationError(conversation_id, role)

    # ------------------------------------------------------------------ conversations

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
        _require_time(rec.created_at, "created_at")
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
        _require_time(updated_at, "updated_at")
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
            state = conn.execute(
                "SELECT state_json, status, updated_at FROM conversation_states WHERE conversation_id = ?",
                (conversation_id,),
            ).fetchone()
            messages = [
                str(text)
                for (text,) in conn.execute(
                    "SELECT json FROM messages WHERE conversation_id = ? ORDER BY idx", (conversation_id,)
                )
            ]
        return LoadedConversation(
            record=_record(row),
            state_json=state[0] if state else None,
            messages=messages,
            status=state[1] if state else None,
            updated_at=state[2] if state else None,
        )

    def load_messages(self, conversation_id: str, after: int = -1, limit: int | None = None) -> list[tuple[int, str]]:
        """``(index, json)`` pairs with index > ``after``, in order, at most ``limit`` of them."""
        if limit is not None:
            _require_limit(limit)
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

    def list_conversations(self, include_subagents: bool = False) -> list[ConversationSummary]:
        """Summaries, newest (by ``created_at``) first; sub-agents only on request (REQ-BED-009)."""
        # message_count is a maintained column, so this is one index walk plus a primary-key join.
        where = "" if include_subagents else "WHERE c.is_subagent = 0"
        rows = self._conn.execute(
            "SELECT c.id, c.title, s.status, c.model, c.created_at, COALESCE(s.updated_at, c.created_at), "
            "c.message_count, c.parent_id, c.origin_id "
            "FROM conversations AS c LEFT JOIN conversation_states AS s ON s.conversation_id = c.id "
            f"{where} ORDER BY c.created_at DESC, c.id DESC"
        ).fetchall()
        return [ConversationSummary(*row) for row in rows]

    def conversation_ids(self) -> list[str]:
        """Every conversation id, sub-agents included, oldest first (the order to restore them in)."""
        return [str(cid) for (cid,) in self._conn.execute("SELECT id FROM conversations ORDER BY created_at, id")]

    def exists(self, conversation_id: str) -> bool:
        """Whether a conversation with this id is stored."""
        row = self._conn.execute("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        return row is not None

    # ------------------------------------------------------------------ events

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
        _require_limit(limit)
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

    # ------------------------------------------------------------------ images

    def put_image(self, data: bytes, media_type: str) -> str:
        """Store image bytes; return their id (sha256 hex). Storing the same bytes again is a no-op."""
        if not data:
            raise InvalidRecordError("refusing to store an empty image: the data has no bytes")
        if not media_type:
            raise InvalidRecordError("an image needs a media type such as 'image/png'")
        self.guard.check(media_type, "an image media type")
        self.guard.check_bytes(data, "an image")
        image_id = hashlib.sha256(data).hexdigest()
        with self._write() as conn:
            conn.execute(
                "INSERT INTO images (id, media_type, size, created_at, data) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO NOTHING",
                (image_id, media_type, len(data), time.time(), data),
            )
        return image_id

    def get_image(self, image_id: str) -> tuple[bytes, str]:
        """``(data, media_type)`` of a stored image; ``ImageNotFoundError`` (a KeyError) if unknown."""
        row = self._conn.execute("SELECT data, media_type FROM images WHERE id = ?", (image_id,)).fetchone()
        if row is None:
            raise ImageNotFoundError(image_id)
        return bytes(row[0]), str(row[1])

    # ------------------------------------------------------------------ audit log

    def append_audit(self, entry: AuditEntry) -> int:
        """Append an audit entry (REQ-LAYER-004); return its id."""
        if entry.actor not in ACTORS:
            raise InvalidRecordError(f"audit actor {entry.actor!r} is not one of {', '.join(ACTORS)}; say who acted")
        if not entry.action:
            raise InvalidRecordError("an audit entry needs an action such as 'mode_change'")
        _require_time(entry.time, "time")
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
        _require_limit(limit)
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


def _prepare_file(path: Path) -> None:
    # Conversation history is private: the directory and database are readable by the owner only.
    # SQLite gives the -wal and -shm files the permissions of the database file.
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not path.exists():
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


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


def _last_seq(conn: sqlite3.Connection, conversation_id: str) -> int | None:
    row = conn.execute("SELECT MAX(seq) FROM events WHERE conversation_id = ?", (conversation_id,)).fetchone()
    return None if row[0] is None else int(row[0])


def _index_problem(conversation_id: str, index: int, expected: int) -> str:
    if index < expected:
        kind = f"is already stored (the conversation has {expected} messages, indexes 0..{expected - 1})"
    else:
        kind = f"would leave a gap: the next index must be {expected}"
    return (
        f"message index {index} for conversation {conversation_id!r} {kind}; nothing was written. "
        "Indexes must be contiguous - append from message_count(conversation_id)"
    )


def _require_time(value: float, field: str) -> None:
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidRecordError(f"{field} must be a finite number of seconds since the epoch, got {value!r}")


def _require_limit(limit: int) -> None:
    if limit < 1:
        raise InvalidRecordError(f"limit must be at least 1, got {limit}")
