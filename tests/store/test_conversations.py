"""Conversations, state and message history in a real SQLite file (REQ-BED-007/009/021)."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from phoenix_lsp.store import (
    DamagedRowError,
    DuplicateConversationError,
    InvalidRecordError,
    MessageIndexError,
    Store,
    UnknownConversationError,
)
from tests.store.conftest import MakeRecord


def _msgs(start: int, n: int, tag: str = "m") -> list[tuple[int, str]]:
    return [(i, json.dumps({"role": "user", "content": f"{tag}{i}"})) for i in range(start, start + n)]


@pytest.mark.req("REQ-BED-007")
def test_restart_restores_record_state_and_complete_history(db_path: Path, make_record: MakeRecord) -> None:
    rec = make_record(title="fix the parser")
    history = _msgs(0, 5)
    with Store(db_path) as store:
        store.create_conversation(rec)
        store.append_messages(rec.id, history[:2])
        store.save_state(rec.id, '{"state":"awaiting_llm"}', "awaiting_llm", 1_700_000_100.5)
        store.append_messages(rec.id, history[2:])
        store.save_state(rec.id, '{"state":"idle","n":5}', "idle", 1_700_000_200.25)

    with Store(db_path) as reopened:
        loaded = reopened.load(rec.id)
    assert loaded.record == rec
    assert loaded.state_json == '{"state":"idle","n":5}'
    assert loaded.status == "idle"
    assert loaded.updated_at == 1_700_000_200.25
    assert loaded.messages == [text for _, text in history]


@pytest.mark.req("REQ-BED-007")
def test_texts_come_back_byte_for_byte(store: Store, make_record: MakeRecord) -> None:
    rec = make_record(title="unicode ✓ and 'quotes'")
    store.create_conversation(rec)
    odd = '{"text": "line1\\nline2\\u0000 \u00e9\u4e2d\U0001f600", "spaces":   [ 1 ,2 ]}'
    store.append_messages(rec.id, [(0, odd)])
    store.save_state(rec.id, odd, "idle", 1.0)
    loaded = store.load(rec.id)
    assert loaded.messages == [odd]
    assert loaded.state_json == odd
    assert loaded.record.title == rec.title


@pytest.mark.req("REQ-BED-007")
def test_save_state_replaces_the_single_row(store: Store, make_record: MakeRecord, db_path: Path) -> None:
    rec = make_record()
    store.create_conversation(rec)
    for n in range(3):
        store.save_state(rec.id, json.dumps({"n": n}), f"s{n}", float(n))
    assert store.load(rec.id).state_json == '{"n": 2}'
    with sqlite3.connect(db_path) as raw:
        assert raw.execute("SELECT COUNT(*) FROM conversation_states").fetchone()[0] == 1


def test_conversation_without_state_loads_with_none(store: Store, make_record: MakeRecord) -> None:
    rec = make_record()
    store.create_conversation(rec)
    loaded = store.load(rec.id)
    assert (loaded.state_json, loaded.status, loaded.messages) == (None, None, [])
    [summary] = store.list_conversations()
    assert summary.status is None
    assert summary.updated_at == rec.created_at


@pytest.mark.req("REQ-BED-007")
@pytest.mark.parametrize(
    ("first_batch", "bad_batch", "needle"),
    [
        (3, [(4, "{}")], "gap: the next index must be 3"),
        (3, [(2, "{}")], "already stored"),
        (3, [(3, "{}"), (3, "{}")], "already stored"),
        (3, [(3, "{}"), (5, "{}")], "gap: the next index must be 4"),
        (0, [(1, "{}")], "gap: the next index must be 0"),
    ],
)
def test_non_contiguous_indexes_are_refused_and_nothing_is_written(
    store: Store, make_record: MakeRecord, first_batch: int, bad_batch: list[tuple[int, str]], needle: str
) -> None:
    rec = make_record()
    store.create_conversation(rec)
    store.append_messages(rec.id, _msgs(0, first_batch))
    with pytest.raises(MessageIndexError, match=needle):
        store.append_messages(rec.id, bad_batch)
    # The valid prefix of a bad batch is not half-written either.
    assert store.message_count(rec.id) == first_batch
    assert len(store.load(rec.id).messages) == first_batch
    assert store.check_integrity() == []


def test_append_returns_new_count_and_empty_batch_is_a_no_op(store: Store, make_record: MakeRecord) -> None:
    rec = make_record()
    store.create_conversation(rec)
    assert store.append_messages(rec.id, _msgs(0, 4)) == 4
    assert store.append_messages(rec.id, []) == 4
    assert store.append_messages(rec.id, _msgs(4, 1)) == 5


def test_load_messages_pages_in_order(store: Store, make_record: MakeRecord) -> None:
    rec = make_record()
    store.create_conversation(rec)
    history = _msgs(0, 25)
    store.append_messages(rec.id, history)
    pages: list[tuple[int, str]] = []
    after = -1
    while page := store.load_messages(rec.id, after=after, limit=10):
        pages.extend(page)
        after = page[-1][0]
    assert pages == history
    assert store.load_messages(rec.id, after=20) == history[21:]
    with pytest.raises(InvalidRecordError, match="limit must be at least 1"):
        store.load_messages(rec.id, limit=0)


@pytest.mark.req("REQ-BED-009")
def test_listing_excludes_subagents_unless_asked(store: Store, make_record: MakeRecord) -> None:
    parent = make_record(title="user conversation")
    store.create_conversation(parent)
    child = make_record(parent_id=parent.id, is_subagent=True, title="sub-agent task")
    store.create_conversation(child)
    assert [s.id for s in store.list_conversations()] == [parent.id]
    assert {s.id for s in store.list_conversations(include_subagents=True)} == {parent.id, child.id}
    assert set(store.conversation_ids()) == {parent.id, child.id}
    # The sub-agent keeps its own history, independent of the parent's.
    store.append_messages(child.id, _msgs(0, 2, "child"))
    assert store.load(parent.id).messages == []
    sub = next(s for s in store.list_conversations(include_subagents=True) if s.id == child.id)
    assert (sub.parent_id, sub.message_count) == (parent.id, 2)



@pytest.mark.req("REQ-PROTO-005")
def test_listing_names_each_folder_and_keeps_one_folders_on_request(store: Store, make_record: MakeRecord) -> None:
    """The folder comes with each summary, and a folder given keeps its conversations only (sub-agents still only
    on request): the terminal's resume list is one query, not one per conversation."""
    here = make_record(working_directory="/p/here", created_at=1.0)
    there = make_record(working_directory="/p/there", created_at=2.0)
    prefix = make_record(working_directory="/p/here2", created_at=3.0)  # a longer name is another folder
    for rec in (here, there, prefix):
        store.create_conversation(rec)
    child = make_record(parent_id=here.id, is_subagent=True, working_directory="/p/here", created_at=4.0)
    store.create_conversation(child)
    assert {s.id: s.working_directory for s in store.list_conversations()} == {
        here.id: "/p/here", there.id: "/p/there", prefix.id: "/p/here2"}
    assert [s.id for s in store.list_conversations(working_directory="/p/here")] == [here.id]
    assert [s.id for s in store.list_conversations(include_subagents=True, working_directory="/p/here")] == [
        child.id, here.id]
    assert store.list_conversations(working_directory="/p/nowhere") == []


@pytest.mark.req("REQ-BED-009")
def test_subagent_needs_an_existing_parent(store: Store, make_record: MakeRecord) -> None:
    with pytest.raises(InvalidRecordError, match="sub-agent without a parent_id"):
        store.create_conversation(make_record(is_subagent=True))
    with pytest.raises(UnknownConversationError, match="parent conversation 'ghost' does not exist"):
        store.create_conversation(make_record(is_subagent=True, parent_id="ghost"))
    assert store.conversation_ids() == []


@pytest.mark.req("REQ-BED-021")
def test_origin_link_survives_restart(db_path: Path, make_record: MakeRecord) -> None:
    exhausted = make_record(title="long session")
    seeded = make_record(origin_id=exhausted.id, title="continued")
    with Store(db_path) as store:
        store.create_conversation(exhausted)
        store.save_state(exhausted.id, '{"state":"context_exhausted"}', "context_exhausted", 5.0)
        store.create_conversation(seeded)
        store.append_messages(seeded.id, [(0, '{"role":"user","content":"summary of the session"}')])
    with Store(db_path) as store:
        assert store.load(seeded.id).record.origin_id == exhausted.id
        by_id = {s.id: s for s in store.list_conversations()}
    assert by_id[seeded.id].origin_id == exhausted.id
    assert by_id[exhausted.id].origin_id is None
    assert by_id[exhausted.id].status == "context_exhausted"


@pytest.mark.req("REQ-BED-021")
def test_origin_must_exist(store: Store, make_record: MakeRecord) -> None:
    with pytest.raises(UnknownConversationError, match="origin conversation 'gone'"):
        store.create_conversation(make_record(origin_id="gone"))


@pytest.mark.req("REQ-BED-007")
def test_listing_is_newest_first_with_maintained_counts(store: Store, make_record: MakeRecord) -> None:
    records = [make_record(created_at=t) for t in (30.0, 10.0, 20.0)]
    for n, rec in enumerate(records):
        store.create_conversation(rec)
        store.append_messages(rec.id, _msgs(0, n + 1))
    store.save_state(records[1].id, "{}", "idle", 99.0)
    summaries = store.list_conversations()
    assert [s.created_at for s in summaries] == [30.0, 20.0, 10.0]
    counts = {s.id: s.message_count for s in summaries}
    assert counts == {records[0].id: 1, records[1].id: 2, records[2].id: 3}
    assert next(s for s in summaries if s.id == records[1].id).updated_at == 99.0


def test_duplicate_and_unknown_ids_are_clear_errors(store: Store, make_record: MakeRecord) -> None:
    rec = make_record()
    store.create_conversation(rec)
    with pytest.raises(DuplicateConversationError, match="already exists"):
        store.create_conversation(rec)
    assert store.exists(rec.id)
    assert not store.exists("nope")
    for call in (
        lambda: store.load("nope"),
        lambda: store.load_messages("nope"),
        lambda: store.append_messages("nope", [(0, "{}")]),
        lambda: store.save_state("nope", "{}", "idle", 1.0),
        lambda: store.message_count("nope"),
        lambda: store.update_title("nope", "t"),
    ):
        with pytest.raises(UnknownConversationError, match="'nope' does not exist") as info:
            call()
        assert isinstance(info.value, KeyError)
        # KeyError normally quotes its message; ours reads as a sentence.
        assert str(info.value).startswith("conversation 'nope'")


def test_update_title(store: Store, make_record: MakeRecord) -> None:
    rec = make_record(title="")
    store.create_conversation(rec)
    store.update_title(rec.id, "Refactor the lexer")
    assert store.load(rec.id).record.title == "Refactor the lexer"


def test_bad_records_are_refused(store: Store, make_record: MakeRecord) -> None:
    with pytest.raises(InvalidRecordError, match="non-empty"):
        store.create_conversation(make_record(id=""))
    with pytest.raises(InvalidRecordError, match="created_at must be a finite number"):
        store.create_conversation(make_record(created_at=float("nan")))
    rec = make_record()
    with pytest.raises(InvalidRecordError, match="own parent"):
        store.create_conversation(make_record(id="x", parent_id="x"))
    store.create_conversation(rec)
    with pytest.raises(InvalidRecordError, match="updated_at"):
        store.save_state(rec.id, "{}", "idle", float("inf"))


def test_store_refuses_use_from_another_thread(store: Store) -> None:
    """Thread rule: a Store belongs to the thread that created it; misuse fails loudly."""
    errors: list[BaseException] = []

    def use() -> None:
        try:
            store.conversation_ids()
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=use)
    worker.start()
    worker.join()
    assert len(errors) == 1
    assert isinstance(errors[0], sqlite3.ProgrammingError)


def test_two_stores_on_one_file_see_each_others_commits(db_path: Path, make_record: MakeRecord) -> None:
    with Store(db_path) as writer, Store(db_path) as reader:
        rec = make_record()
        writer.create_conversation(rec)
        writer.append_messages(rec.id, _msgs(0, 3))
        assert reader.load(rec.id).messages == [t for _, t in _msgs(0, 3)]


@pytest.mark.req("REQ-PROTO-006")
def test_first_index_after_seq_finds_the_page_start_without_a_scan(store: Store, make_record: MakeRecord) -> None:
    rec = make_record()
    store.create_conversation(rec)
    seqs = [3, 4, 9, 10, 11, 40, 41, 100]  # message events interleave with other events: gaps
    store.append_messages(rec.id, [(i, json.dumps({"seq": seq, "time": 0.0})) for i, seq in enumerate(seqs)])
    for after in range(0, 105):
        expected = next((i for i, seq in enumerate(seqs) if seq > after), len(seqs))
        assert store.first_index_after_seq(rec.id, after) == expected, after
    empty = make_record()
    store.create_conversation(empty)
    assert store.first_index_after_seq(empty.id, 5) == 0
    with pytest.raises(UnknownConversationError):
        store.first_index_after_seq("nope", 1)


@pytest.mark.req("REQ-SEC-044")
def test_a_row_over_the_bound_is_measured_and_never_read(store: Store, make_record: MakeRecord, db_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A message or state changed on the disk to more than any row holds is refused by its length in SQL, before
    its text reaches Python (a 900 MB row would be read whole, then decoded); the refusal names the row."""
    monkeypatch.setattr("phoenix_lsp.store.conversations.STORED_ROW_BYTES", 1000)
    rec = make_record()
    store.create_conversation(rec)
    store.append_messages(rec.id, _msgs(0, 2))
    store.save_state(rec.id, '{"state": "idle"}', "idle", 1.0)
    assert len(store.load(rec.id).messages) == 2
    with sqlite3.connect(db_path) as db:
        db.execute("UPDATE messages SET json = ? WHERE conversation_id = ? AND idx = 1", ("x" * 5000, rec.id))
    with pytest.raises(DamagedRowError) as raised:
        store.load(rec.id)
    assert "its message 1: it is 5,000 characters long, over the limit of 1,000" in str(raised.value)
    assert raised.value.conversation_id == rec.id and "Start a new conversation" in str(raised.value)
    with sqlite3.connect(db_path) as db:
        db.execute("UPDATE messages SET json = '{}' WHERE conversation_id = ? AND idx = 1", (rec.id,))
        db.execute("UPDATE conversation_states SET state_json = ? WHERE conversation_id = ?", ("y" * 1001, rec.id))
    with pytest.raises(DamagedRowError, match="its stored state: it is 1,001 characters long"):
        store.load(rec.id)
