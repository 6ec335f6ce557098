"""The server's store copies its write-ahead log back on a thread of its own (REQ-PROTO-049): a write on the
event loop never pays for a checkpoint and its fsync, and the log does not grow without bound."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest

from phoenix_lsp.store import Store
from tests.store.conftest import MakeRecord
from tests.waiting import eventually


@pytest.mark.req("REQ-PROTO-049")
async def test_the_log_is_copied_back_by_the_store_not_by_its_writer(db_path: Path, make_record: MakeRecord) -> None:
    store = Store(db_path, checkpoint_in_background=True)
    try:
        writer_setting = store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        assert writer_setting == 0  # the owner's writes never checkpoint
        rec = make_record()
        store.create_conversation(rec)
        text = json.dumps({"text": "x" * 100_000})
        for seq in range(1, 81):  # ~8 MB: past SQLite's 1,000-page mark many times over
            store.append_event(rec.id, seq, text)
        wal = db_path.with_name(db_path.name + "-wal")

        def copied_back() -> bool:
            with contextlib.closing(sqlite3.connect(db_path)) as probe:  # a read sees them, copied or not
                count = probe.execute("select count(*) from events").fetchone()[0]
            # the thread copies the log back: the database file itself grows to hold the events
            return count == 80 and db_path.stat().st_size > 8_000_000 and wal.exists()

        await eventually(copied_back, "the events copied back into the database file by the store's thread")
    finally:
        store.close()
    assert not db_path.with_name(db_path.name + "-wal").exists()  # closed last: the log is removed


def test_a_store_without_the_thread_keeps_sqlites_automatic_checkpoints(db_path: Path) -> None:
    store = Store(db_path)
    try:
        assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        assert store._checkpointer is None
    finally:
        store.close()
