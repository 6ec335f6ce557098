"""Schema versions and ordered migrations.

The database records every applied migration in ``schema_version`` (one row per version). On open,
``migrate`` applies, in one ``BEGIN IMMEDIATE`` transaction, every migration newer than the recorded
version - so a crash mid-upgrade leaves the database at the old version, and two processes opening the
same file at once cannot both upgrade it. A database newer than the code is refused, never downgraded.

To change the schema, append a ``Migration`` with the next version number to ``MIGRATIONS``; never edit
a migration that has shipped. Foreign keys are switched off while migrations run (so a migration may
rebuild a table, as SQLite's ALTER TABLE procedure requires) and ``PRAGMA foreign_key_check`` must be
clean before the upgrade commits.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from phoenix_lsp.store.errors import SchemaError


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step: SQL statements run in order, then an optional Python step (data migrations)."""

    version: int
    description: str
    statements: tuple[str, ...]
    apply: Callable[[sqlite3.Connection], None] | None = None


_V1 = Migration(
    version=1,
    description="conversations, states, messages, events, images, audit log",
    statements=(
        """
        CREATE TABLE conversations (
            id                TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
            parent_id         TEXT    REFERENCES conversations(id),
            origin_id         TEXT    REFERENCES conversations(id),
            is_subagent       INTEGER NOT NULL CHECK (is_subagent IN (0, 1)),
            working_directory TEXT    NOT NULL,
            model             TEXT    NOT NULL,
            title             TEXT    NOT NULL,
            created_at        REAL    NOT NULL,
            -- Kept by triggers so listings and trimming never count rows at query time.
            message_count     INTEGER NOT NULL DEFAULT 0,
            event_count       INTEGER NOT NULL DEFAULT 0,
            -- A sub-agent is always spawned by a parent conversation (REQ-BED-008/009).
            CHECK (is_subagent = 0 OR parent_id IS NOT NULL)
        )
        """,
        "CREATE INDEX conversations_listing ON conversations (is_subagent, created_at DESC, id DESC)",
        "CREATE INDEX conversations_parent ON conversations (parent_id)",
        "CREATE INDEX conversations_origin ON conversations (origin_id)",
        """
        CREATE TABLE conversation_states (
            conversation_id TEXT NOT NULL PRIMARY KEY REFERENCES conversations(id),
            state_json      TEXT NOT NULL,
            status          TEXT NOT NULL,
            updated_at      REAL NOT NULL
        )
        """,
        """
        CREATE TABLE messages (
            conversation_id TEXT    NOT NULL REFERENCES conversations(id),
            idx             INTEGER NOT NULL CHECK (idx >= 0),
            json            TEXT    NOT NULL,
            PRIMARY KEY (conversation_id, idx)
        )
        """,
        """
        CREATE TRIGGER messages_count_insert AFTER INSERT ON messages BEGIN
            UPDATE conversations SET message_count = message_count + 1 WHERE id = NEW.conversation_id;
        END
        """,
        """
        CREATE TRIGGER messages_count_delete AFTER DELETE ON messages BEGIN
            UPDATE conversations SET message_count = message_count - 1 WHERE id = OLD.conversation_id;
        END
        """,
        """
        CREATE TABLE events (
            conversation_id TEXT    NOT NULL REFERENCES conversations(id),
            seq             INTEGER NOT NULL,
            json            TEXT    NOT NULL,
            PRIMARY KEY (conversation_id, seq)
        )
        """,
        """
        CREATE TRIGGER events_count_insert AFTER INSERT ON events BEGIN
            UPDATE conversations SET event_count = event_count + 1 WHERE id = NEW.conversation_id;
        END
        """,
        """
        CREATE TRIGGER events_count_delete AFTER DELETE ON events BEGIN
            UPDATE conversations SET event_count = event_count - 1 WHERE id = OLD.conversation_id;
        END
        """,
        """
        CREATE TABLE images (
            id         TEXT    NOT NULL PRIMARY KEY,
            media_type TEXT    NOT NULL,
            size       INTEGER NOT NULL,
            created_at REAL    NOT NULL,
            data       BLOB    NOT NULL
        )
        """,
        # No foreign key on conversation_id: an audit trail must outlive what it describes and may
        # record events that belong to no conversation.
        """
        CREATE TABLE audit_log (
            id              INTEGER PRIMARY KEY AUTOINCREMENT,
            time            REAL NOT NULL,
            conversation_id TEXT,
            actor           TEXT NOT NULL CHECK (actor IN ('user', 'agent', 'system')),
            action          TEXT NOT NULL CHECK (action <> ''),
            mode            TEXT,
            style           TEXT,
            detail          TEXT NOT NULL
        )
        """,
        "CREATE INDEX audit_by_conversation ON audit_log (conversation_id, id)",
    ),
)

#: Every migration, in order. Version n is at index n - 1.
MIGRATIONS: tuple[Migration, ...] = (_V1,)

_BOOTSTRAP = """
CREATE TABLE IF NOT EXISTS schema_version (
    version     INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at  REAL NOT NULL
)
"""


def validate_migrations(migrations: Sequence[Migration]) -> None:
    """Raise ``ValueError`` unless versions are exactly 1, 2, ..., n in order."""
    for position, migration in enumerate(migrations, start=1):
        if migration.version != position:
            raise ValueError(
                f"migration list is out of order: position {position} holds version {migration.version} "
                f"({migration.description!r}); versions must be 1, 2, 3... with no gap or repeat"
            )


def current_version(conn: sqlite3.Connection) -> int:
    """The highest applied schema version, 0 for a database without the version table."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'").fetchone()
    if exists is None:
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0]) if row[0] is not None else 0


def migrate(
    conn: sqlite3.Connection,
    migrations: Sequence[Migration] = MIGRATIONS,
    *,
    where: str = "the database",
) -> int:
    """Bring the database up to the last of ``migrations``; return the resulting version.

    ``conn`` must be in autocommit mode (``isolation_level=None``) with no transaction open. ``where``
    names the database in error messages.
    """
    validate_migrations(migrations)
    latest = len(migrations)
    fk_on = bool(conn.execute("PRAGMA foreign_keys").fetchone()[0])
    # foreign_keys cannot change inside a transaction, so switch it before BEGIN.
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(_BOOTSTRAP)
            found = current_version(conn)
            if found > latest:
                raise SchemaError(
                    f"{where} has schema version {found}, but this phoenix-lsp knows versions up to "
                    f"{latest} only: it was written by a newer phoenix-lsp. Upgrade phoenix-lsp, or set "
                    "PHOENIX_LSP_DATA_DIR to another directory; the file was not changed"
                )
            for migration in migrations[found:]:
                _apply(conn, migration, where)
            problems = conn.execute("PRAGMA foreign_key_check").fetchall()
            if problems:
                raise SchemaError(
                    f"upgrading {where} to schema version {latest} would break {len(problems)} foreign "
                    f"key reference(s) (first: {tuple(problems[0])}); the upgrade was rolled back and "
                    f"the database is still at version {found}"
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    finally:
        if fk_on:
            conn.execute("PRAGMA foreign_keys = ON")
    return latest


def _apply(conn: sqlite3.Connection, migration: Migration, where: str) -> None:
    try:
        for statement in migration.statements:
            conn.execute(statement)
        if migration.apply is not None:
            migration.apply(conn)
    except sqlite3.Error as exc:
        raise SchemaError(
            f"migration {migration.version} ({migration.description}) failed on {where}: {exc}; the "
            f"upgrade was rolled back and the database is unchanged. This is a bug in phoenix-lsp - "
            "please report it with this message"
        ) from exc
    conn.execute(
        "INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
        (migration.version, migration.description, time.time()),
    )
