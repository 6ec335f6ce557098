"""Schema versioning, ordered migrations, connection settings and the data directory."""

from __future__ import annotations

import os
import sqlite3
import stat
import sys
from pathlib import Path

import pytest

from phoenix_lsp.store import MIGRATIONS, Migration, SchemaError, Store, default_data_dir
from phoenix_lsp.store.schema import validate_migrations
from tests.store.conftest import MakeRecord


def _copy_db(src: Path, dst: Path) -> None:
    # The backup API copies a consistent image whatever is still in the write-ahead log.
    source, target = sqlite3.connect(src), sqlite3.connect(dst)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def _versions(path: Path) -> list[int]:
    with sqlite3.connect(path) as raw:
        return [r[0] for r in raw.execute("SELECT version FROM schema_version ORDER BY version")]


def test_new_database_is_at_latest_version_with_wal_and_foreign_keys(db_path: Path) -> None:
    with Store(db_path) as store:
        assert store.schema_version == len(MIGRATIONS) == 1
        conn = store._conn  # white-box: the connection settings are the point of this test
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    with Store(db_path, synchronous="FULL") as store:
        assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    assert _versions(db_path) == [1]


@pytest.mark.req("REQ-BED-007")
def test_v1_database_upgrades_when_a_later_migration_is_added(
    db_path: Path, tmp_path: Path, make_record: MakeRecord
) -> None:
    rec = make_record()
    with Store(db_path) as store:
        store.create_conversation(rec)
        store.append_messages(rec.id, [(0, '"hello"'), (1, '"world"')])
        store.save_state(rec.id, '{"s":1}', "idle", 7.0)
    copy = tmp_path / "copy.db"
    _copy_db(db_path, copy)

    backfilled: list[int] = []

    def backfill(conn: sqlite3.Connection) -> None:
        # A data step that runs inside the upgrade transaction, after the statements.
        backfilled.append(conn.execute("UPDATE conversations SET pinned = message_count > 1").rowcount)

    v2 = Migration(
        2,
        "test-only: pinned flag and a tag table",
        (
            "ALTER TABLE conversations ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0",
            "CREATE TABLE tags (conversation_id TEXT NOT NULL REFERENCES conversations(id), tag TEXT NOT NULL)",
        ),
        backfill,
    )
    with Store(copy, migrations=(*MIGRATIONS, v2)) as upgraded:
        assert upgraded.schema_version == 2
        assert upgraded.load(rec.id).messages == ['"hello"', '"world"']
        assert upgraded._conn.execute("SELECT pinned FROM conversations").fetchone()[0] == 1
        assert upgraded.check_integrity() == []
    assert backfilled == [1]
    assert _versions(copy) == [1, 2]
    assert _versions(db_path) == [1]  # the original is untouched

    # Opening again does not re-run the migration.
    with Store(copy, migrations=(*MIGRATIONS, v2)):
        pass
    assert backfilled == [1]


def test_database_newer_than_the_code_is_refused_unchanged(db_path: Path) -> None:
    v2 = Migration(2, "test-only: extra table", ("CREATE TABLE extra (x INTEGER)",))
    Store(db_path, migrations=(*MIGRATIONS, v2)).close()
    before = db_path.read_bytes()
    with pytest.raises(SchemaError, match="schema version 2, but this phoenix-lsp knows versions up to 1"):
        Store(db_path)
    assert db_path.read_bytes() == before


def test_failing_migration_rolls_back_completely(db_path: Path, make_record: MakeRecord) -> None:
    rec = make_record()
    with Store(db_path) as store:
        store.create_conversation(rec)
    broken = Migration(2, "test-only: broken", ("CREATE TABLE half (x INTEGER)", "THIS IS NOT SQL"))
    with pytest.raises(SchemaError, match=r"migration 2 \(test-only: broken\) failed.*rolled back"):
        Store(db_path, migrations=(*MIGRATIONS, broken))
    with Store(db_path) as store:
        assert store.schema_version == 1
        assert store.exists(rec.id)
        assert store._conn.execute("SELECT name FROM sqlite_master WHERE name = 'half'").fetchone() is None


def test_migration_breaking_foreign_keys_is_rolled_back(db_path: Path) -> None:
    Store(db_path).close()
    orphan = Migration(2, "test-only: orphan", ("INSERT INTO messages VALUES ('ghost', 0, '{}')",))
    with pytest.raises(SchemaError, match="break 1 foreign key"):
        Store(db_path, migrations=(*MIGRATIONS, orphan))
    assert _versions(db_path) == [1]
    with Store(db_path) as store:
        assert store.check_integrity() == []


def test_migration_list_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="position 2 holds version 3"):
        validate_migrations((MIGRATIONS[0], Migration(3, "skip", ())))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_data_directory_and_database_are_private(tmp_path: Path) -> None:
    path = tmp_path / "fresh" / "phoenix.db"
    Store(path).close()
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG rules are Linux's")
@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, "HOME/.local/share/phoenix-lsp"),
        ({"XDG_DATA_HOME": "/xdg"}, "/xdg/phoenix-lsp"),
        ({"PHOENIX_LSP_DATA_DIR": "/custom", "XDG_DATA_HOME": "/xdg"}, "/custom"),
    ],
)
def test_default_data_dir(environ: dict[str, str], expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    home = "/home-of-user"
    monkeypatch.setenv("HOME", home)
    for name in ("XDG_DATA_HOME", "PHOENIX_LSP_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert default_data_dir() == Path(expected.replace("HOME", home))


def test_store_default_path_honours_the_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHOENIX_LSP_DATA_DIR", str(tmp_path / "override"))
    assert Store.default_path() == tmp_path / "override" / "phoenix.db"
    with Store(Store.default_path()) as store:
        assert store.path.exists()
