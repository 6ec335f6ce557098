"""The store's database: the SQLite file, opened, migrated and closed, and its transactions (one per write,
committed before the method returns; one snapshot per multi-statement read). Each table's queries are a
class of their own built on this one; ``store.py`` puts them together."""

from __future__ import annotations

import contextlib
import math
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Literal, Self

from phoenix_lsp.store.errors import InvalidRecordError, SchemaError, UnknownConversationError
from phoenix_lsp.store.paths import default_db_path
from phoenix_lsp.store.schema import MIGRATIONS, Migration, migrate
from phoenix_lsp.store.secrets import SecretGuard

DEFAULT_MAX_EVENTS = 10_000
Synchronous = Literal["NORMAL", "FULL"]


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


class Database:
    """The connection to one database file, with what every table's queries share (see ``Store``)."""

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

    def __enter__(self) -> Self:
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


def _prepare_file(path: Path) -> None:
    # Conversation history is private: the directory and database are readable by the owner only.
    # SQLite gives the -wal and -shm files the permissions of the database file.
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not path.exists():
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def require_time(value: float, field: str) -> None:
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidRecordError(f"{field} must be a finite number of seconds since the epoch, got {value!r}")


def require_limit(limit: int) -> None:
    if limit < 1:
        raise InvalidRecordError(f"limit must be at least 1, got {limit}")
