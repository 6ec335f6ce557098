"""Store benchmark: restore listing with 1,000 conversations / 100,000 messages (issue 3, "Restore").

Run ``python bench/store.py [--quick]``. Every figure is printed next to a baseline measured in the same
run on the same database, so the ratio means something on any machine:

- ``list_conversations`` (warm store) against a bare ``SELECT id FROM conversations``;
- open a fresh ``Store`` and list (what a restarted server does first) against a bare connect + select;
- one committed ``append_messages`` / ``append_event`` against a bare INSERT + COMMIT on the same file.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script: make the repository importable without installing it.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from phoenix_lsp.store import ConversationRecord, Store

CONVERSATIONS = 1_000
MESSAGES_PER_CONVERSATION = 100
SUBAGENT_EVERY = 10  # every tenth conversation is a sub-agent, so the listing filter does real work


def _message(cid: str, index: int) -> str:
    role = "user" if index % 2 == 0 else "assistant"
    text = f"message {index} of {cid}: " + "lorem ipsum dolor sit amet " * 12
    return json.dumps({"role": role, "content": [{"type": "text", "text": text}]})


def populate(path: Path) -> None:
    """Fill ``path`` with the benchmark's conversations, messages and states."""
    with Store(path) as store:
        parent = ""
        for n in range(CONVERSATIONS):
            cid = f"conv-{n:05d}"
            is_sub = n % SUBAGENT_EVERY == SUBAGENT_EVERY - 1
            store.create_conversation(
                ConversationRecord(
                    id=cid,
                    parent_id=parent if is_sub else None,
                    origin_id=None,
                    is_subagent=is_sub,
                    working_directory="/path/to/project",
                    model="claude-sonnet-4-5",
                    title=f"conversation {n}",
                    created_at=1_700_000_000.0 + n,
                )
            )
            if not is_sub:
                parent = cid
            store.append_messages(cid, [(i, _message(cid, i)) for i in range(MESSAGES_PER_CONVERSATION)])
            store.save_state(cid, json.dumps({"state": "idle", "n": n}), "idle", 1_700_000_000.0 + n + 0.5)


def _median_ms(fn: Callable[[], object], reps: int) -> float:
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def _figure(name: str, value: float, unit: str, baseline_name: str, baseline: float, goal: str) -> dict[str, object]:
    return {
        "name": name,
        "value": round(value, 4),
        "unit": unit,
        "baseline_name": baseline_name,
        "baseline_value": round(baseline, 4),
        "goal": goal,
    }


def figures(quick: bool = False) -> list[dict[str, object]]:
    """Populate a fresh database in a temporary directory and measure; ``quick`` takes fewer samples."""
    reps = 5 if quick else 30
    write_reps = 50 if quick else 500
    with tempfile.TemporaryDirectory(prefix="phoenix-store-bench-") as tmp:
        path = Path(tmp) / "phoenix.db"
        populate(path)
        out: list[dict[str, object]] = []

        with Store(path) as store:
            listed = store.list_conversations()
            expected = CONVERSATIONS - CONVERSATIONS // SUBAGENT_EVERY
            if len(listed) != expected or listed[0].message_count != MESSAGES_PER_CONVERSATION:
                raise RuntimeError(f"benchmark database is wrong: listed {len(listed)} conversations")
            conn = store._conn  # the baseline must share the same connection and page cache
            warm = _median_ms(store.list_conversations, reps)
            bare = _median_ms(lambda: conn.execute("SELECT id FROM conversations").fetchall(), reps)
        out.append(
            _figure("list_conversations, warm (median)", warm, "ms", "SELECT id FROM conversations", bare, "< 500 ms")
        )

        def open_and_list() -> None:
            with Store(path) as fresh:
                fresh.list_conversations()

        def connect_and_select() -> None:
            raw = sqlite3.connect(path)
            try:
                raw.execute("SELECT id FROM conversations").fetchall()
            finally:
                raw.close()

        cold = _median_ms(open_and_list, reps)
        cold_bare = _median_ms(connect_and_select, reps)
        out.append(
            _figure(
                "open Store + list_conversations (median)",
                cold,
                "ms",
                "connect + SELECT id FROM conversations",
                cold_bare,
                "< 500 ms",
            )
        )

        with Store(path) as store:
            cid = "conv-00000"
            next_index = store.message_count(cid)
            text = _message(cid, 0)

            def append_one() -> None:
                nonlocal next_index
                store.append_messages(cid, [(next_index, text)])
                next_index += 1

            seq = 0

            def event_one() -> None:
                nonlocal seq
                seq += 1
                store.append_event(cid, seq, '{"kind":"text_delta","text":"Hello"}')

            append = _median_ms(append_one, write_reps)
            event = _median_ms(event_one, write_reps)
            conn = store._conn
            conn.execute("CREATE TABLE bench_raw (k INTEGER PRIMARY KEY, v TEXT)")
            counter = iter(range(10**9))

            def raw_insert() -> None:
                conn.execute("BEGIN")
                conn.execute("INSERT INTO bench_raw VALUES (?, ?)", (next(counter), text))
                conn.execute("COMMIT")

            raw = _median_ms(raw_insert, write_reps)
        out.append(
            _figure(
                "append_messages, 1 message committed (median)",
                append,
                "ms",
                "bare INSERT + COMMIT",
                raw,
                "informational",
            )
        )
        out.append(
            _figure("append_event committed (median)", event, "ms", "bare INSERT + COMMIT", raw, "informational")
        )
        out.append(_catch_up(path, reps))
        return out


LONG_HISTORY = 20_000


def _catch_up(path: Path, reps: int) -> dict[str, object]:
    """A reconnecting client's getConversation(afterSeq, limit=100) on a 20,000-message conversation: the
    page start found by binary search, against reading the history and filtering by seq (the old way)."""
    with Store(path) as store:
        cid = "long-history"
        store.create_conversation(ConversationRecord(cid, None, None, False, "/path/to/project", "m", "long",
                                                     1_800_000_000.0))
        body = "lorem ipsum dolor sit amet " * 12
        store.append_messages(cid, [(i, json.dumps({"seq": 3 * i + 1, "time": 0.0, "text": body}))
                                    for i in range(LONG_HISTORY)])
        after = 3 * (LONG_HISTORY - 150)

        def paged() -> list[tuple[int, str]]:
            start = store.first_index_after_seq(cid, after)
            return store.load_messages(cid, after=start - 1, limit=101)

        def scanned() -> list[tuple[int, str]]:
            return [row for row in store.load_messages(cid) if json.loads(row[1])["seq"] > after][:101]

        if paged() != scanned():
            raise RuntimeError("the paged catch-up differs from the scan")
        return _figure(f"catch-up page of 100 after seq on {LONG_HISTORY:,} messages (median)", _median_ms(paged, reps),
                       "ms", "read the whole history and filter by seq", _median_ms(scanned, reps), "< 5 ms")


def main() -> None:
    """Print each figure next to its baseline."""
    quick = "--quick" in sys.argv[1:]
    print(f"store bench: {CONVERSATIONS} conversations, {CONVERSATIONS * MESSAGES_PER_CONVERSATION} messages")
    for f in figures(quick=quick):
        ratio = f["value"] / f["baseline_value"] if f["baseline_value"] else float("inf")  # type: ignore[operator]
        print(
            f"{f['name']}: {f['value']:.3f} {f['unit']}  |  baseline {f['baseline_name']}: "
            f"{f['baseline_value']:.3f} {f['unit']}  |  x{ratio:.1f}  |  goal {f['goal']}"
        )


if __name__ == "__main__":
    main()
