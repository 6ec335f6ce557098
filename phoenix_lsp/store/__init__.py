"""SQLite persistence for phoenix-lsp (REQ-BED-007): conversations, messages, events, images, audit log.

The door of this room is ``Store`` plus the value types and errors re-exported here.

Thread rules
------------
A ``Store`` owns one ``sqlite3`` connection and is **not** thread-safe. Create it on the thread that
uses it (the server's event-loop thread) and call it only from there; the connection keeps
``check_same_thread`` on, so a call from another thread raises ``sqlite3.ProgrammingError`` instead of
corrupting state. Calls are synchronous and short (one transaction each). Another thread or process
that needs the data opens its own ``Store`` on the same file: WAL mode lets readers run beside the
writer, and writers wait up to ``busy_timeout_s`` for each other.

Durability
----------
Every writing method commits before it returns, so a process killed with SIGKILL right afterwards
loses nothing the method wrote. With the default ``synchronous="NORMAL"`` an OS crash or power loss
may lose the last transactions; ``synchronous="FULL"`` closes that gap at the cost of an fsync per write.

Secrets
-------
Every text written goes through ``Store.guard`` (a ``SecretGuard``), which refuses any text holding the
current ``ANTHROPIC_API_KEY`` or a secret registered with ``guard.add_secret`` (REQ-SEC-001). Use
``guard.redact`` on texts that may legitimately contain a secret before storing them.
"""

from phoenix_lsp.store.errors import (
    DamagedRowError,
    DuplicateConversationError,
    EventSeqError,
    ImageNotFoundError,
    InvalidRecordError,
    MessageIndexError,
    SchemaError,
    SecretLeakError,
    StoreError,
    UnknownConversationError,
)
from phoenix_lsp.store.paths import DATA_DIR_ENV, default_data_dir, default_db_path
from phoenix_lsp.store.records import (
    Actor,
    AuditEntry,
    AuditRecord,
    ConversationRecord,
    ConversationSummary,
    LoadedConversation,
)
from phoenix_lsp.store.schema import MIGRATIONS, Migration
from phoenix_lsp.store.secrets import SecretGuard
from phoenix_lsp.store.store import DEFAULT_MAX_EVENTS, Store

__all__ = [
    "DATA_DIR_ENV",
    "DEFAULT_MAX_EVENTS",
    "MIGRATIONS",
    "Actor",
    "AuditEntry",
    "AuditRecord",
    "ConversationRecord",
    "ConversationSummary",
    "DamagedRowError",
    "DuplicateConversationError",
    "EventSeqError",
    "ImageNotFoundError",
    "InvalidRecordError",
    "LoadedConversation",
    "MessageIndexError",
    "Migration",
    "SchemaError",
    "SecretGuard",
    "SecretLeakError",
    "Store",
    "StoreError",
    "UnknownConversationError",
    "default_data_dir",
    "default_db_path",
]
