"""Events for reconnecting clients, content-addressed images (REQ-BED-013) and the audit log."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from phoenix_lsp.store import (
    AuditEntry,
    EventSeqError,
    ImageNotFoundError,
    InvalidRecordError,
    Store,
    UnknownConversationError,
)
from tests.store.conftest import MakeRecord


@pytest.mark.req("REQ-BED-007")
def test_events_after_returns_what_a_client_missed(db_path: Path, make_record: MakeRecord) -> None:
    rec = make_record()
    with Store(db_path) as store:
        store.create_conversation(rec)
        assert store.last_seq(rec.id) is None
        for seq in range(1, 11):
            store.append_event(rec.id, seq, json.dumps({"kind": "text", "n": seq}))
    with Store(db_path) as store:
        assert store.last_seq(rec.id) == 10
        assert [s for s, _ in store.events_after(rec.id, 6, limit=100)] == [7, 8, 9, 10]
        assert store.events_after(rec.id, 0, limit=2) == [
            (1, '{"kind": "text", "n": 1}'),
            (2, '{"kind": "text", "n": 2}'),
        ]
        assert store.events_after(rec.id, 10, limit=5) == []


def test_event_seq_must_increase(store: Store, make_record: MakeRecord) -> None:
    rec = make_record()
    store.create_conversation(rec)
    store.append_event(rec.id, 5, "{}")
    for bad in (5, 4):
        with pytest.raises(EventSeqError, match="not greater than the last stored seq 5"):
            store.append_event(rec.id, bad, "{}")
    store.append_event(rec.id, 9, "{}")  # gaps are allowed; clients detect them
    assert store.last_seq(rec.id) == 9


def test_events_of_conversations_are_independent(store: Store, make_record: MakeRecord) -> None:
    a, b = make_record(), make_record()
    store.create_conversation(a)
    store.create_conversation(b)
    store.append_event(a.id, 1, '"a1"')
    store.append_event(b.id, 1, '"b1"')
    assert store.events_after(a.id, 0) == [(1, '"a1"')]
    assert store.events_after(b.id, 0) == [(1, '"b1"')]
    with pytest.raises(UnknownConversationError):
        store.append_event("ghost", 1, "{}")
    with pytest.raises(UnknownConversationError):
        store.events_after("ghost", 0)


def test_only_the_newest_events_are_kept(db_path: Path, make_record: MakeRecord) -> None:
    rec, other = make_record(), make_record()
    with Store(db_path, max_events_per_conversation=5) as store:
        store.create_conversation(rec)
        store.create_conversation(other)
        store.append_event(other.id, 1, "{}")
        for seq in range(1, 13):
            store.append_event(rec.id, seq, json.dumps(seq))
        assert [s for s, _ in store.events_after(rec.id, 0, limit=100)] == [8, 9, 10, 11, 12]
        assert store.events_after(other.id, 0) == [(1, "{}")]
        assert store.check_integrity() == []
    # A smaller limit on a later run trims the backlog at the next append.
    with Store(db_path, max_events_per_conversation=2) as store:
        store.append_event(rec.id, 13, "13")
        assert [s for s, _ in store.events_after(rec.id, 0, limit=100)] == [12, 13]
        assert store.check_integrity() == []
    with sqlite3.connect(db_path) as raw:
        assert raw.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 3


@pytest.mark.req("REQ-PROTO-049")
def test_events_of_several_conversations_are_stored_in_one_transaction(
    db_path: Path, make_record: MakeRecord
) -> None:
    """The outbox's write: every event or none; the seq and retention rules hold for each conversation."""
    a, b = make_record(), make_record()
    with Store(db_path, max_events_per_conversation=3) as store:
        store.create_conversation(a)
        store.create_conversation(b)
        store.append_events([(a.id, 1, '"a1"'), (b.id, 1, '"b1"'), (a.id, 2, '"a2"')])
        assert store.events_after(a.id, 0) == [(1, '"a1"'), (2, '"a2"')]
        assert store.events_after(b.id, 0) == [(1, '"b1"')]
        # one bad event (a seq not above the previous one of its conversation) and nothing is stored
        for bad in ([(b.id, 2, '"b2"'), (a.id, 3, '"a3"'), (a.id, 3, '"again"')],
                    [(a.id, 3, '"a3"'), (b.id, 1, '"b1 again"')],
                    [(a.id, 3, '"a3"'), ("ghost", 1, "{}")]):
            with pytest.raises((EventSeqError, UnknownConversationError)):
                store.append_events(bad)
            assert store.last_seq(a.id) == 2 and store.last_seq(b.id) == 1
        store.append_events([(a.id, seq, json.dumps(seq)) for seq in range(3, 8)])
        assert [seq for seq, _ in store.events_after(a.id, 0)] == [5, 6, 7]  # the newest 3 are kept
        assert store.check_integrity() == []
        store.append_events([])


@pytest.mark.req("REQ-BED-013")
def test_images_are_content_addressed_and_idempotent(db_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
    with Store(db_path) as store:
        image_id = store.put_image(png, "image/png")
        assert image_id == hashlib.sha256(png).hexdigest()
        assert store.put_image(png, "image/png") == image_id
        other = store.put_image(b"GIF89a" + b"\x00" * 10, "image/gif")
        assert other != image_id
    with Store(db_path) as store:
        assert store.get_image(image_id) == (png, "image/png")
        assert store.get_image(other)[1] == "image/gif"
    with sqlite3.connect(db_path) as raw:
        assert raw.execute("SELECT COUNT(*) FROM images").fetchone()[0] == 2


@pytest.mark.req("REQ-BED-013")
def test_missing_image_is_a_clear_key_error(store: Store) -> None:
    with pytest.raises(KeyError) as info:
        store.get_image("0" * 64)
    assert isinstance(info.value, ImageNotFoundError)
    assert "is not in the store" in str(info.value)
    with pytest.raises(InvalidRecordError, match="empty image"):
        store.put_image(b"", "image/png")
    with pytest.raises(InvalidRecordError, match="media type"):
        store.put_image(b"x", "")


@pytest.mark.req("REQ-LAYER-004")
def test_audit_records_mode_and_style_separately(db_path: Path, make_record: MakeRecord) -> None:
    rec = make_record()
    entries = [
        AuditEntry(1.0, rec.id, "user", "style_change", "restricted", "development", '{"from":"chat"}'),
        AuditEntry(2.0, rec.id, "agent", "approval_request", "unrestricted", "development", '{"tool":"bash"}'),
        AuditEntry(3.0, rec.id, "user", "approval_decision", "unrestricted", "development", '{"d":"deny"}'),
        AuditEntry(4.0, None, "system", "tool_refused", None, None, '{"reason":"no sandbox"}'),
        AuditEntry(5.0, rec.id, "user", "mode_change", "restricted", "plan", '{"to":"restricted"}'),
    ]
    with Store(db_path) as store:
        store.create_conversation(rec)
        ids = [store.append_audit(e) for e in entries]
    assert ids == sorted(ids)
    with Store(db_path) as store:
        everything = store.query_audit(None)
        mine = store.query_audit(rec.id)
        page = store.query_audit(rec.id, after_id=ids[1], limit=1)
    assert [r.action for r in everything] == [e.action for e in entries]
    assert [r.id for r in mine] == [ids[0], ids[1], ids[2], ids[4]]
    assert [r.id for r in page] == [ids[2]]
    first = everything[0]
    assert (first.time, first.actor, first.mode, first.style, first.detail) == (
        1.0,
        "user",
        "restricted",
        "development",
        '{"from":"chat"}',
    )
    assert everything[3].conversation_id is None


@pytest.mark.req("REQ-LAYER-004")
def test_audit_rejects_malformed_entries(store: Store) -> None:
    with pytest.raises(InvalidRecordError, match="actor 'robot'"):
        store.append_audit(AuditEntry(1.0, None, "robot", "x", None, None))  # type: ignore[arg-type]
    with pytest.raises(InvalidRecordError, match="needs an action"):
        store.append_audit(AuditEntry(1.0, None, "user", "", None, None))
    with pytest.raises(InvalidRecordError, match="not valid JSON"):
        store.append_audit(AuditEntry(1.0, None, "user", "mode_change", None, None, "{oops"))
    assert store.query_audit(None) == []
