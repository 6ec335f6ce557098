"""Child process for the SIGKILL test: writes to a store and reports each write once it has returned.

Usage: python durability_writer.py DB_PATH PREFIX SEED

Each report is one line written with a single os.write *after* the store method returned, so every
reported write is one the store claims to have committed. The parent kills this process at a random
moment and checks that every reported write survived.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

from phoenix_lsp.store import AuditEntry, ConversationRecord, Store


def message(conversation_id: str, index: int) -> str:
    """The deterministic message text the parent expects at ``index``."""
    return json.dumps({"role": "user", "content": f"{conversation_id}:{index}", "pad": "x" * (index % 50)})


def report(*fields: object) -> None:
    os.write(1, (" ".join(str(f) for f in fields) + "\n").encode())


def main() -> None:
    db_path, prefix, seed = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    rng = random.Random(seed)
    store = Store(db_path)
    report("ready")
    n = 0
    while True:
        cid = f"{prefix}-{n}"
        store.create_conversation(
            ConversationRecord(cid, None, None, False, "/path/to/project", "model", f"t{n}", float(n))
        )
        report("conv", cid)
        count = 0
        for seq in range(1, 4):
            size = rng.randint(1, 150)  # big batches make kills inside a transaction likely
            count = store.append_messages(cid, [(i, message(cid, i)) for i in range(count, count + size)])
            report("msgs", cid, count)
            store.save_state(cid, json.dumps({"count": count}), "idle", float(seq))
            report("state", cid, count)
            store.append_event(cid, seq, json.dumps({"seq": seq}))
            report("event", cid, seq)
        audit_id = store.append_audit(AuditEntry(float(n), cid, "system", "mode_change", "restricted", "chat"))
        report("audit", audit_id)
        image_id = store.put_image(rng.randbytes(rng.randint(1, 4096)), "image/png")
        report("image", image_id)
        n += 1


if __name__ == "__main__":
    main()
